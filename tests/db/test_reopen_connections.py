"""SQLite: ``Database.reopen_connections`` (after the items plugin's ANALYZE) replaces pooled
connections at their next checkout with an ordinary close, never the pool's invalidation.

An invalidated aiosqlite connection is closed through SQLAlchemy's ``terminate()``: a graceful
close in a shielded task, and a forced stop of the connection's thread if the checking-out task
is cancelled. When both tasks are cancelled at once, as ``asyncio.Runner.close`` does with the
tasks left at the end of a test, the forced stop could end the thread before the graceful close
queued its own stop, and the loop's shutdown waited for that close for ever (the suite's
intermittent 300 s teardown stall)."""

from __future__ import annotations

import asyncio
import threading

from sqlalchemy import event, text

from kernel.db import Database
from kernel.db import engine as engine_module


async def test_a_replaced_connection_is_closed_without_invalidation(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    invalidated: list[object] = []
    event.listen(db.engine.sync_engine, "invalidate", lambda *args: invalidated.append(args))
    try:
        async with db.connect() as conn:
            old = (await conn.get_raw_connection()).driver_connection
            await conn.execute(text("SELECT 1"))
        db.reopen_connections()
        async with db.connect() as conn:
            new = (await conn.get_raw_connection()).driver_connection
            assert await conn.scalar(text("SELECT 1")) == 1
        assert new is not old
        assert old._connection is None  # closed, and its thread stopped
        assert invalidated == []
    finally:
        await db.dispose()


async def test_a_checkout_cancelled_while_replacing_leaves_no_task_behind(tmp_path):
    """The checking-out task and whatever it started are cancelled together, as at the end of a
    loop, at each point of the replacement: every task ends."""
    db = Database(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    threads = set(threading.enumerate())
    try:
        for steps in range(8):
            async with db.connect() as conn:
                await conn.execute(text("SELECT 1"))
            db.reopen_connections()
            before = asyncio.all_tasks()

            async def checkout() -> None:
                async with db.connect() as conn:
                    await conn.execute(text("SELECT 1"))

            task = asyncio.get_running_loop().create_task(checkout())
            for _ in range(steps):
                await asyncio.sleep(0)
            started = [t for t in asyncio.all_tasks() - before if t is not task and not t.done()]
            for t in (task, *started):  # the checking-out task first, then what it started
                t.cancel()
            _, pending = await asyncio.wait([task, *started], timeout=5)
            stuck = [repr(t.get_coro()) for t in pending]
            for t in pending:  # free them, so that a failure does not hang the loop's shutdown too
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            assert stuck == [], f"after {steps} steps"
    finally:
        await db.dispose()
    # every connection's thread ends (each resolves its last future on this loop, still open)
    # The connections' threads that have not ended yet ("Thread-N (_connection_worker_thread)").
    for thread in {t for t in set(threading.enumerate()) - threads if "_connection_worker_thread" in t.name}:
        await asyncio.to_thread(thread.join, 5)
        assert not thread.is_alive(), thread


async def test_connections_older_than_the_recycle_age_are_replaced(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    try:
        async with db.connect() as conn:
            old = (await conn.get_raw_connection()).driver_connection
        async with db.connect() as conn:
            raw = await conn.get_raw_connection()
            assert raw.driver_connection is old  # young: kept
            raw.info["svc_opened"] -= engine_module.SQLITE_RECYCLE + 1  # as if opened that long ago
        async with db.connect() as conn:
            assert (await conn.get_raw_connection()).driver_connection is not old
        assert old._connection is None
    finally:
        await db.dispose()
