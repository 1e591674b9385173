"""Concurrent write transactions on one database: none fails, none loses an update.

On SQLite a transaction that read before it wrote used to fail with "database is locked" when
another writer committed in between (or starve in SQLite's busy handler); the write gate and
BEGIN IMMEDIATE make writers queue instead.
"""

from __future__ import annotations

import asyncio
import fcntl
import os

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, select, update

from kernel.db import engine

meta = MetaData()
counters = Table("test_gate_counters", meta, Column("id", String, primary_key=True), Column("n", Integer))


async def test_read_then_write_transactions_do_not_fail_or_lose_updates(svc_app):
    db = svc_app.kernel.db
    async with db.begin() as conn:
        await conn.run_sync(meta.create_all)
        await conn.execute(counters.insert().values(id="c", n=0))

    async def bump() -> None:
        async with db.begin() as conn:
            n = (await conn.execute(select(counters.c.n).where(counters.c.id == "c"))).scalar_one()
            await asyncio.sleep(0)  # let every other writer run its read first
            await conn.execute(update(counters).where(counters.c.id == "c").values(n=n + 1))

    try:
        if db.is_sqlite:
            await asyncio.gather(*(bump() for _ in range(40)))
            async with db.connect() as conn:
                assert (await conn.execute(select(counters.c.n))).scalar_one() == 40
        else:
            # PostgreSQL runs these concurrently (READ COMMITTED): none may fail.
            await asyncio.gather(*(bump() for _ in range(40)))
    finally:
        async with db.begin() as conn:
            await conn.run_sync(meta.drop_all)


async def test_a_nested_write_transaction_in_the_same_task_fails_at_once(svc_app):
    """A second ``begin`` while the task's own transaction is open would wait on the task's own
    write lock (SQLite) or row locks (PostgreSQL): it raises before waiting, and the outer
    transaction goes on (its write commits)."""
    db = svc_app.kernel.db
    async with db.begin() as outer:
        await outer.run_sync(meta.create_all)
    try:
        async with db.begin() as outer:
            await outer.execute(counters.insert().values(id="outer", n=1))
            with pytest.raises(engine.NestedWriteError, match="uow=ctx.uow"):
                async with db.begin():
                    pass
            await outer.execute(update(counters).values(n=2))
        async with db.connect() as conn:
            assert (await conn.execute(select(counters.c.n))).scalar_one() == 2
        async with db.begin() as conn:  # the task may open one again once the first is closed
            await conn.execute(update(counters).values(n=3))
    finally:
        async with db.begin() as conn:
            await conn.run_sync(meta.drop_all)


async def test_a_task_started_inside_an_open_transaction_is_not_its_nesting(svc_app):
    """A task started inside the transaction (``asyncio.gather`` in a filter) inherits the
    context, but it is another task: it may read while the transaction is open, and write as
    any other writer once it has closed."""
    db = svc_app.kernel.db
    async with db.begin() as outer:
        await outer.run_sync(meta.create_all)
        await outer.execute(counters.insert().values(id="c", n=0))
    try:
        later: list[asyncio.Task[None]] = []
        closed = asyncio.Event()

        async def read() -> int:
            async with db.begin() as conn:
                return (await conn.execute(select(counters.c.n))).scalar_one()

        async def write_later() -> None:
            await closed.wait()
            async with db.begin() as conn:
                await conn.execute(update(counters).values(n=counters.c.n + 10))

        async with db.begin() as outer:
            await outer.execute(update(counters).values(n=1))
            assert await asyncio.gather(read()) == [0]  # the committed value: another connection
            later.append(asyncio.create_task(write_later()))
        closed.set()
        await asyncio.wait_for(later[0], 5)
        async with db.connect() as conn:
            assert (await conn.execute(select(counters.c.n))).scalar_one() == 11
    finally:
        async with db.begin() as conn:
            await conn.run_sync(meta.drop_all)


async def test_a_transaction_on_another_database_is_not_a_nesting(tmp_path):
    from kernel.db.engine import Database

    a, b = Database(f"sqlite:///{tmp_path / 'a.sqlite3'}"), Database(f"sqlite:///{tmp_path / 'b.sqlite3'}")
    try:
        async with a.begin() as conn_a:
            await conn_a.run_sync(meta.create_all)
            async with b.begin() as conn_b:
                await conn_b.run_sync(meta.create_all)
                await conn_b.execute(counters.insert().values(id="b", n=1))
                with pytest.raises(engine.NestedWriteError):  # a's own, still open under b's
                    async with a.begin():
                        pass
            await conn_a.execute(counters.insert().values(id="a", n=1))
    finally:
        for db in (a, b):
            await db.dispose()


async def test_writers_of_two_processes_queue_at_the_file_lock(tmp_path):
    """Two Database objects on one file stand for two worker processes (flock is per open file)."""
    from kernel.db.engine import Database

    url = f"sqlite:///{tmp_path / 'two.sqlite3'}"
    a, b, c = Database(url), Database(url), Database(url)
    try:
        async with a.begin() as conn:
            await conn.run_sync(meta.create_all)
            await conn.execute(counters.insert().values(id="c", n=0))
        order: list[str] = []
        held = asyncio.Event()

        async def holder() -> None:
            async with a.begin() as conn:
                held.set()
                await asyncio.sleep(0.2)  # B must wait in the lock, not fail or poll
                await conn.execute(update(counters).values(n=1))
                order.append("a")

        async def waiter() -> None:
            await held.wait()
            async with b.begin() as conn:
                n = (await conn.execute(select(counters.c.n))).scalar_one()
                order.append(f"b saw {n}")

        await asyncio.gather(holder(), waiter())
        assert order == ["a", "b saw 1"]

        # A waiter cancelled while it waits leaves the lock free for the next one.
        async with a.begin():
            stuck = asyncio.create_task(_enter(b))
            await asyncio.sleep(0.05)
            stuck.cancel()
            await asyncio.gather(stuck, return_exceptions=True)
        async with asyncio.timeout(5):
            async with c.begin() as conn:
                await conn.execute(update(counters).values(n=2))
    finally:
        for db in (a, b, c):
            await db.dispose()


async def _enter(db) -> None:
    async with db.begin():
        pass


async def test_file_lock_waits_in_the_kernel_for_a_while_after_contention(tmp_path, monkeypatch):
    """After waiting for another process's writer, the next takes the lock in a thread (where the
    other process's writers wait too) instead of the fast path that would win every race."""
    path = str(tmp_path / "db-writelock")
    lock = engine._FileLock(path)
    fast_tries: list[int] = []
    real_flock = fcntl.flock

    def spy(fd: int, op: int) -> None:
        if op & fcntl.LOCK_NB:
            fast_tries.append(fd)
        real_flock(fd, op)

    monkeypatch.setattr(engine.fcntl, "flock", spy)
    await lock.acquire()  # free, uncontended: the fast path
    lock.release()
    assert len(fast_tries) == 1

    other = os.open(path, os.O_RDWR)  # another process's writer holds it
    real_flock(other, fcntl.LOCK_EX)
    waiting = asyncio.create_task(lock.acquire())
    for _ in range(500):  # its fast try, refused: the other holds the lock (bounded: ~5 s)
        if len(fast_tries) == 2:
            break
        await asyncio.sleep(0.01)
    assert len(fast_tries) == 2, fast_tries
    assert not waiting.done()  # it cannot be: the lock is still held
    real_flock(other, fcntl.LOCK_UN)
    await asyncio.wait_for(waiting, 5)
    lock.release()

    await lock.acquire()  # free, but contended a moment ago: no fast path
    lock.release()
    assert len(fast_tries) == 2
    lock.contended_until = 0.0  # the window has passed
    await lock.acquire()
    lock.release()
    assert len(fast_tries) == 3
    os.close(other)
    lock.close()


async def test_queued_writers_of_one_process_share_one_hold_of_the_file_lock(tmp_path, monkeypatch):
    """Writers queued at the gate take the file lock from the one before (no hand-over between
    processes per transaction) for up to FILE_LOCK_BATCH seconds; once none is queued, or one
    that was queued is cancelled, the lock is free for another process at once."""
    from kernel.db.engine import Database

    url = f"sqlite:///{tmp_path / 'batch.sqlite3'}"
    a, other = Database(url), Database(url)
    try:
        async with a.begin() as conn:
            await conn.run_sync(meta.create_all)
            await conn.execute(counters.insert().values(id="c", n=0))
        assert a._file_lock is not None and not a._file_lock.held
        takes: list[int] = []
        real = engine._FileLock._taken
        monkeypatch.setattr(engine._FileLock, "_taken", lambda lock: (takes.append(1), real(lock)))

        async def bump() -> None:
            async with a.begin() as conn:
                await conn.execute(update(counters).values(n=counters.c.n + 1))

        await asyncio.gather(*(bump() for _ in range(10)))
        assert len(takes) < 10  # handed on inside the process, not taken per transaction
        await asyncio.sleep(0)
        assert not a._file_lock.held
        async with asyncio.timeout(5):  # another process writes at once
            async with other.begin() as conn:
                assert (await conn.execute(select(counters.c.n))).scalar_one() == 10

        # A queued writer cancelled before it runs: the hold ends with the writer before it.
        async def hold_then_write(started: asyncio.Event) -> None:
            async with a.begin() as conn:
                started.set()
                await asyncio.sleep(0.05)
                await conn.execute(update(counters).values(n=100))

        started = asyncio.Event()
        first = asyncio.create_task(hold_then_write(started))
        await started.wait()
        queued = asyncio.create_task(bump())
        await asyncio.sleep(0.01)
        queued.cancel()
        await first
        await asyncio.gather(queued, return_exceptions=True)
        await asyncio.sleep(0)
        assert not a._file_lock.held
        async with asyncio.timeout(5):
            async with other.begin() as conn:
                assert (await conn.execute(select(counters.c.n))).scalar_one() == 100
    finally:
        for db in (a, other):
            await db.dispose()


async def test_the_writers_turn_ends_with_the_transaction_not_with_the_connection(tmp_path, monkeypatch):
    """SQLite: once the COMMIT (or the ROLLBACK) has run, SQLite's write lock is free, and the
    next writer may take its turn while SQLAlchemy still closes the connection (in a task of its
    own, turns of the event loop): the gate and the file lock are let go before the close."""
    from sqlalchemy.ext.asyncio import AsyncConnection

    from kernel.db.engine import Database

    a = Database(f"sqlite:///{tmp_path / 'turn.sqlite3'}")
    try:
        async with a.begin() as conn:
            await conn.run_sync(meta.create_all)
        at_close: list[tuple[bool, bool]] = []
        real = AsyncConnection.close

        async def close(self: AsyncConnection) -> None:
            assert a._write_gate is not None and a._file_lock is not None
            at_close.append((a._write_gate.locked(), a._file_lock.held))
            await real(self)

        monkeypatch.setattr(AsyncConnection, "close", close)
        async with a.begin() as conn:
            await conn.execute(counters.insert().values(id="c", n=1))
        with pytest.raises(RuntimeError):
            async with a.begin(inline=True) as conn:
                await conn.execute(update(counters).values(n=2))
                raise RuntimeError("roll it back")
        assert at_close == [(False, False), (False, False)]
        async with a.read() as conn:
            assert (await conn.execute(select(counters.c.n))).scalar_one() == 1
    finally:
        await a.dispose()


async def test_queued_writers_hold_a_pooled_connection_only_up_to_a_bound(tmp_path, monkeypatch):
    """A writer checks its connection out before it waits for its turn (no pool work inside the
    write lock), but only while fewer than CONNECTED_WHILE_QUEUED writers of the process are
    queued: past that, it waits first, so a queue of writers cannot hold the readers' pool."""
    from kernel.db.engine import Database

    monkeypatch.setattr(engine, "CONNECTED_WHILE_QUEUED", 2)
    a = Database(f"sqlite:///{tmp_path / 'queue.sqlite3'}")
    try:
        async with a.begin() as conn:
            await conn.run_sync(meta.create_all)
        opened = [await a.engine.connect() for _ in range(4)]  # pooled connections ready: no connect waits
        for conn in opened:
            await conn.close()
        started, release = asyncio.Event(), asyncio.Event()

        async def holder() -> None:
            async with a.begin() as conn:
                started.set()
                await release.wait()
                await conn.execute(counters.insert().values(id="holder", n=0))

        async def writer(i: int) -> None:
            async with a.begin() as conn:
                await conn.execute(counters.insert().values(id=f"w{i}", n=i))

        first = asyncio.create_task(holder())
        await started.wait()
        queued = [asyncio.create_task(writer(i)) for i in range(6)]
        for _ in range(20):
            await asyncio.sleep(0)
        assert a._gate_waiting == 6
        assert a.engine.pool.checkedout() == 3  # the holder's and the first two queued writers'
        release.set()
        await asyncio.wait_for(asyncio.gather(first, *queued), 10)
        async with a.read() as conn:
            assert len((await conn.execute(select(counters.c.id))).scalars().all()) == 7
        assert a.engine.pool.checkedout() == 0
    finally:
        await a.dispose()
