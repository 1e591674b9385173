"""PostgreSQL: a pooled connection idle for ``PING_IDLE_SECONDS`` is pinged at checkout, and a
dead one (its server process gone, as after a restart) is replaced there instead of failing the
request. Connections in use a moment ago are not pinged (engine.py: a round trip per checkout)."""

from __future__ import annotations

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from kernel.db import engine as engine_module


async def test_dead_idle_connections_are_replaced_at_checkout(svc_app, monkeypatch):
    db = svc_app.kernel.db
    if db.dialect != "postgresql":
        assert not event.contains(db.engine.sync_engine, "checkout", db._pg_checkout)
        return
    async with db.read() as one, db.read() as two:  # at least two in the pool
        pooled = {await one.scalar(text("SELECT pg_backend_pid()")), await two.scalar(text("SELECT pg_backend_pid()"))}
    # the pool's backends go, as in a server restart (only these: other apps of the run keep theirs)
    outside = create_async_engine(db.engine.url, poolclass=NullPool)
    try:
        async with outside.connect() as killer:
            killed = await killer.scalar(text("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                              "WHERE pid = ANY(:pids)"), {"pids": list(pooled)})
    finally:
        await outside.dispose()
    assert killed == 2
    monkeypatch.setattr(engine_module, "PING_IDLE_SECONDS", 0.0)
    for _ in range(3):
        async with db.read() as conn:
            pid = await conn.scalar(text("SELECT pg_backend_pid()"))
            assert pid not in pooled
