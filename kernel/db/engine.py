"""The async engine: a SQLite file in the data dir by default (WAL on), PostgreSQL via psycopg 3."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

log = logging.getLogger("svc.db")


def default_sqlite_path(data_dir: Path) -> Path:
    return data_dir / "svc.sqlite3"


def _normalise(url: str) -> Any:
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        return parsed.set(drivername="sqlite")
    raise ValueError(f"unsupported database {backend!r}: use sqlite or postgresql")


def async_url(url: str) -> str:
    parsed = _normalise(url)
    if parsed.get_backend_name() == "sqlite":
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    return parsed.render_as_string(hide_password=False)


def sync_url(url: str) -> str:
    return _normalise(url).render_as_string(hide_password=False)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # WAL lets readers and the writer proceed together; busy_timeout rides out short write locks
    # between workers; NORMAL sync is safe with WAL (a crash can lose the last commit, not corrupt).
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


class Database:
    """The app's database: one async engine and the helpers around it."""

    def __init__(self, url: str, *, echo: bool = False, pool_size: int = 10) -> None:
        self.url = url
        self.dialect = _normalise(url).get_backend_name()
        kwargs: dict[str, Any] = {"echo": echo}
        if self.dialect == "postgresql":
            kwargs.update(pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)
        self.engine: AsyncEngine = create_async_engine(async_url(url), **kwargs)
        if self.dialect == "sqlite":
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        """A connection outside any transaction the caller controls (reads)."""
        async with self.engine.connect() as conn:
            yield conn

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        """A connection inside one transaction, committed on success, rolled back on error."""
        async with self.engine.begin() as conn:
            yield conn

    async def ping(self) -> None:
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    async def dispose(self) -> None:
        await self.engine.dispose()
