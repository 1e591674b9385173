"""Database: the async engine (SQLite or PostgreSQL), shared metadata, Alembic runner, unit of work."""

from kernel.db.engine import Database, NestedWriteError, async_url, sync_url
from kernel.db.meta import json_type, metadata, now_utc
from kernel.db.uow import UnitOfWork

__all__ = ["Database", "NestedWriteError", "UnitOfWork", "async_url", "sync_url", "metadata", "now_utc", "json_type"]
