"""PostgreSQL sessions kept open between a process's engines, when asked for (the test harness).

Each test's app builds an engine of its own, and each engine opened its connections afresh:
on PostgreSQL a new server process each time (~2.4 ms of the server's CPU to start it), which
then filled its catalog caches for every table it touched (~0.5 ms a table), about 3 sessions
a test. After ``keep(urls)``, an engine of a ``Database`` on one of those URLs hands the
connections its pool closes to this module instead of closing them, and the next engine's pool
takes one of them instead of connecting: the session is reset with ``DISCARD ALL`` first
(prepared statements, settings, temporary tables, advisory locks, ``LISTEN``: what a new
session would not hold; psycopg forgets its prepared statements with it), so an app sees a
session as a new connection gives it, on a server process whose caches are warm. A connection
the pool invalidated, or one in a transaction, closed or broken, is closed as before; one that
does not answer the reset is closed and the next one tried, then a new one opened.

Only URLs the harness names are kept (its test databases), each apart (the URL and the
connection's bounds), never a proxy a test started or a database it drops. Production builds
one engine per process and never calls ``keep()``.
"""

from __future__ import annotations

import atexit
import functools
from collections.abc import Iterable
from typing import Any

# Idle sessions kept per URL: a test's apps use about 3 at once; more are closed.
LIMIT = 4

_URLS: set[str] = set()
_IDLE: dict[tuple[Any, ...], list[Any]] = {}


def keep(urls: Iterable[str]) -> None:
    """From now on, engines on these PostgreSQL URLs keep their sessions for the next engine."""
    if not _URLS:
        atexit.register(_end_all)
    _URLS.update(u for u in urls if u)


def _end_all() -> None:
    """End the kept sessions as the process exits (no event loop left to close them on)."""
    for idle in _IDLE.values():
        for conn in idle:
            conn.pgconn.finish()
        idle.clear()


def kept_for(url: str) -> bool:
    """Whether an engine on ``url`` keeps its sessions (``keep`` named it)."""
    return url in _URLS


def _reusable(conn: Any) -> bool:
    """Idle and as a new connection is on the client's side: no transaction, not broken, and
    none of the session characteristics SQLAlchemy sets (its checkin resets them)."""
    from psycopg.pq import TransactionStatus

    return (
        not conn.closed
        and not conn.broken
        and conn.info.transaction_status == TransactionStatus.IDLE
        and conn.autocommit is False
        and conn.isolation_level is None
        and conn.read_only is None
        and conn.deferrable is None
    )


def _give_back(key: tuple[Any, ...], conn: Any) -> bool:
    idle = _IDLE.setdefault(key, [])
    if len(idle) >= LIMIT or not _reusable(conn):
        return False
    idle.append(conn)
    return True


async def _take(key: tuple[Any, ...], context: Any) -> Any | None:
    """A kept session of ``key``, reset, with the adapters of ``context`` (the new engine's
    dialect's: its JSON codecs), as ``connect(context=...)`` gives a new one; None when none
    answers."""
    import psycopg
    from psycopg.adapt import AdaptersMap

    idle = _IDLE.get(key, [])
    while idle:
        conn = idle.pop()
        try:
            await conn.set_autocommit(True)  # DISCARD ALL runs outside a transaction
            await conn.execute("DISCARD ALL")
            await conn.set_autocommit(False)
        except psycopg.Error:
            await conn.close()
            continue
        conn.lock = type(conn.lock)()  # a lock of the new app's event loop, not the last one's
        if context is not None:
            conn._adapters = AdaptersMap(context.adapters)  # noqa: SLF001 - what connect(context=) sets
        return conn
    return None


def listen(sync_engine: Any, url: str, command_timeout: float) -> None:
    """Make ``sync_engine`` (an async engine's, on psycopg) take kept sessions of ``url`` and
    give its closed ones back; sessions are kept apart by ``command_timeout`` (the bound its
    connections' class carries) and the connection's parameters."""
    from sqlalchemy import event
    from sqlalchemy.util import await_

    kept_connection = _kept_connection_class()

    @event.listens_for(sync_engine, "do_connect")
    def take_kept(dialect: Any, conn_rec: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        import psycopg

        opener = cparams.pop("async_creator_fn", None) or psycopg.AsyncConnection.connect
        # The dialect's adapters (``context``) are each engine's own: given to the session taken.
        params = tuple(sorted((k, repr(v)) for k, v in cparams.items() if k != "context"))
        key = (url, command_timeout, params, tuple(cargs))

        async def session() -> Any:
            return await _take(key, cparams.get("context")) or await opener(*cargs, **cparams)

        made = await_(kept_connection.create(dialect.loaded_dbapi, session()))
        made.key = key
        return made


@functools.cache
def _kept_connection_class() -> type:
    """SQLAlchemy's psycopg connection whose ``close`` gives the session back when it may."""
    from sqlalchemy.dialects.postgresql.psycopg import AsyncAdapt_psycopg_connection

    class KeptConnection(AsyncAdapt_psycopg_connection):
        key: tuple[Any, ...] = ()

        def close(self) -> None:
            if not _give_back(self.key, self._connection):
                super().close()

    return KeptConnection
