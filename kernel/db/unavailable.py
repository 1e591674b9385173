"""Telling "the database (or Redis) is not there right now" from a bug.

A request that meets a database being restarted, failed over or out of connections gets 503
``SERVICE_UNAVAILABLE`` with ``Retry-After`` (``kernel/http/errors.py``), not 500 ``INTERNAL``:
the client may retry, and nothing was written (the unit of work's transaction rolled back, or
never began). The pool itself recovers without a restart: a pooled connection idle for a second is
pinged at checkout (``Database._pg_checkout``) and replaced if it died with the server, and a connection that fails mid-statement is invalidated
by SQLAlchemy and dropped from the pool.
"""

from __future__ import annotations

from sqlalchemy import exc as sa_exc

# PostgreSQL SQLSTATE classes that mean "not now": 08 connection exception, 53 insufficient
# resources (too many connections, out of memory or disk), 57 operator intervention (admin or
# crash shutdown, cannot connect now while starting up, statement cancelled).
UNAVAILABLE_SQLSTATE_CLASSES = ("08", "53", "57")
RETRY_AFTER_SECONDS = 2


def _psycopg_unavailable(orig: BaseException) -> bool:
    try:
        import psycopg
    except ImportError:  # SQLite-only installs
        return False
    if not isinstance(orig, psycopg.OperationalError):
        return False
    state = getattr(orig, "sqlstate", None)
    # No SQLSTATE: the client library's own failure (refused, reset, server closed the connection).
    return state is None or state[:2] in UNAVAILABLE_SQLSTATE_CLASSES


def _redis_unreachable(exc: BaseException) -> bool:
    try:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError
    except ImportError:
        return False
    return isinstance(exc, (RedisConnectionError, RedisTimeoutError))


def unavailable_dependency(exc: BaseException) -> str | None:
    """``"database"`` or ``"redis"`` when ``exc`` (or what it was raised from) says that
    dependency is unreachable or refusing work for now; None for anything else."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 5:
        if isinstance(current, sa_exc.TimeoutError):  # no pooled connection came free in time
            return "database"
        if isinstance(current, sa_exc.DBAPIError):
            if current.connection_invalidated or _psycopg_unavailable(current.orig):
                return "database"
        elif _psycopg_unavailable(current):
            return "database"
        if _redis_unreachable(current):
            return "redis"
        current = current.__cause__
        seen += 1
    return None
