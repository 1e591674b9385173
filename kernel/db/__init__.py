"""Database: the async engine (SQLite or PostgreSQL), shared metadata, the Alembic runner.

The unit of work sits a floor above (``kernel.core.uow``): it writes events and runs the bus."""

from kernel.db.engine import Database, NestedWriteError, async_url, sync_url
from kernel.db.meta import json_type, metadata, now_utc

__all__ = ["Database", "NestedWriteError", "async_url", "sync_url", "metadata", "now_utc", "json_type"]
