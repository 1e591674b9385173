"""The SQLite driver (kernel/db/sqlite_driver.py): one hop to aiosqlite's thread per statement,
and everything a DBAPI cursor answers (rows, description, rowcount, lastrowid, executemany,
errors) as SQLAlchemy's own aiosqlite cursor answered it."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3

import aiosqlite
import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, insert, select, text, update
from sqlalchemy.exc import IntegrityError, OperationalError

from kernel.db import engine, sqlite_driver
from kernel.db.engine import Database

meta = MetaData()
things = Table("things", meta, Column("id", Integer, primary_key=True, autoincrement=True),
               Column("name", String(20), unique=True))


@pytest.fixture
def hops(monkeypatch):
    """The functions run on aiosqlite's thread from now on (one per hop)."""
    seen = []
    real = aiosqlite.Connection._execute

    async def counted(self, fn, *args, **kwargs):
        seen.append(getattr(fn, "__name__", fn))
        return await real(self, fn, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    return seen


@pytest.fixture
async def db(tmp_path, monkeypatch):
    # The window and the read budget follow a frozen clock: a stretch or a read runs out only
    # where a test moves the clock, never because the machine is slow (docs/testing.md, rule 6).
    monkeypatch.setattr(sqlite_driver, "clock", lambda: 0.0)
    database = Database(f"sqlite:///{tmp_path / 'driver.sqlite3'}")
    async with database.engine.begin() as conn:
        await conn.run_sync(meta.create_all)
    yield database
    await database.engine.dispose()


async def test_the_engine_uses_it(db):
    assert db.engine.dialect.driver == "svc_aiosqlite"


async def test_a_statement_is_one_hop(db, hops):
    async with db.read() as conn:
        await conn.execute(text("SELECT 1"))  # the connection is open
        hops.clear()
        assert (await conn.execute(text("SELECT 1, 2"))).all() == [(1, 2)]
        assert hops == []  # a read's SELECT runs inline (test_a_read_runs_inline_within_its_budget)
        await conn.execute(insert(things), [{"name": "a"}, {"name": "b"}])  # not a SELECT: one hop
        assert len(hops) == 1
    assert len(hops) == 1  # closing a connection that began nothing: no rollback hop
    hops.clear()
    async with db.begin() as conn:  # BEGIN IMMEDIATE, the insert, COMMIT
        await conn.execute(insert(things).values(name="c"))
    assert len(hops) == 3
    with pytest.raises(RuntimeError):
        async with db.begin() as conn:
            await conn.execute(insert(things).values(name="d"))
            raise RuntimeError("roll it back")
    async with db.read() as conn:
        assert [r.name for r in (await conn.execute(select(things.c.name).order_by(things.c.id))).all()] == ["a", "b", "c"]


async def test_rows_description_rowcount_lastrowid_and_executemany(db):
    async with db.begin() as conn:
        first = await conn.execute(insert(things).values(name="one"))
        assert first.inserted_primary_key == (1,)
        await conn.execute(insert(things), [{"name": f"n{i}"} for i in range(300)])
        changed = await conn.execute(update(things).where(things.c.name.like("n1%")).values(name=things.c.name + "x"))
        assert changed.rowcount == 111  # n1, n10..n19, n100..n199
        result = await conn.execute(select(things.c.id, things.c.name).order_by(things.c.id))
        assert list(result.keys()) == ["id", "name"]
        rows = result.all()
        assert len(rows) == 301 and rows[0] == (1, "one") and rows[2] == (3, "n1x")
        assert (await conn.execute(select(things.c.id).where(things.c.name == "none"))).first() is None
        assert await conn.scalar(select(things.c.name).where(things.c.id == 2)) == "n0"


async def test_errors_are_the_dbapi_errors_and_the_connection_stays_usable(db):
    async with db.begin() as conn:
        await conn.execute(insert(things).values(name="dup"))
    with pytest.raises(IntegrityError):
        async with db.begin() as conn:
            await conn.execute(insert(things).values(name="dup"))
    with pytest.raises(OperationalError):
        async with db.read() as conn:
            await conn.execute(text("SELECT * FROM no_such_table"))
    async with db.read() as conn:
        assert await conn.scalar(select(things.c.name)) == "dup"


async def test_an_inline_transaction_runs_on_the_loop_from_begin(db, hops):
    async with db.read() as conn:
        await conn.execute(text("SELECT 1"))  # the pooled connection is open
    hops.clear()
    async with db.begin(inline=True) as conn:
        assert hops == []  # BEGIN IMMEDIATE ran inline: no other program holds the write lock
        await conn.execute(insert(things).values(name="a"))
        assert (await conn.execute(select(things.c.name))).scalars().all() == ["a"]
    assert hops == []  # the insert, the select and the COMMIT ran inline
    async with db.connect() as conn:  # committed, and the pooled connection hops again
        assert (await conn.execute(select(things.c.name))).scalars().all() == ["a"]
        assert (await conn.execute(text("PRAGMA busy_timeout"))).scalar() == engine.BUSY_TIMEOUT_MS
    assert hops.count("_run") == 3  # its BEGIN, SELECT and PRAGMA


async def test_an_inline_begin_waits_on_the_thread_for_another_programs_write_lock(db, hops, tmp_path):
    """svc's own writers queue at the file lock, so SQLite's write lock is free when a writer's
    turn comes, unless a program outside svc holds it (here a plain ``sqlite3`` connection): then
    the BEGIN does not hold the event loop, it hops and waits there with the busy timeout."""
    async with db.read() as conn:
        await conn.execute(text("SELECT 1"))  # the pooled connection is open
    other = sqlite3.connect(tmp_path / "driver.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO things (name) VALUES ('other')")
    hops.clear()
    loop_turns = 0

    async def write() -> list[str]:
        async with db.begin(inline=True) as conn:
            await conn.execute(insert(things).values(name="svc"))
            return (await conn.execute(select(things.c.name).order_by(things.c.id))).scalars().all()

    writer = asyncio.create_task(write())
    while not hops:  # the BEGIN found the lock taken and went to the thread to wait
        await asyncio.sleep(0)
        loop_turns += 1
    assert hops == ["_run"] and not writer.done()
    for _ in range(5):  # the loop is free meanwhile
        await asyncio.sleep(0)
    assert not writer.done()
    other.execute("COMMIT")
    other.close()
    assert await asyncio.wait_for(writer, 10) == ["other", "svc"]
    assert hops == ["_run"]  # then the insert, the select and the COMMIT ran inline
    async with db.read() as conn:  # the connection's own busy timeout is back
        assert (await conn.execute(text("PRAGMA busy_timeout"))).scalar() == engine.BUSY_TIMEOUT_MS
    assert loop_turns >= 1


async def test_an_inline_transaction_rolls_back_and_hands_back_a_hopping_connection(db, hops):
    with pytest.raises(IntegrityError):
        async with db.begin(inline=True) as conn:
            await conn.execute(insert(things).values(name="a"))
            await conn.execute(insert(things).values(name="a"))
    hops.clear()
    async with db.connect() as conn:
        assert (await conn.execute(select(things.c.name))).all() == []
    assert hops.count("_run") == 2  # its BEGIN and SELECT hop: the connection is no longer inline


async def test_an_inline_stretch_is_bounded_by_the_window(db, hops, monkeypatch):
    monkeypatch.setattr(sqlite_driver, "INLINE_WINDOW", 0.0)  # on the frozen clock, every stretch is over
    async with db.begin(inline=True) as conn:
        await conn.execute(insert(things).values(name="a"))
        await conn.execute(insert(things).values(name="b"))
    assert len(hops) == 4  # BEGIN, both inserts and COMMIT each gave the loop a turn
    hops.clear()
    monkeypatch.setattr(sqlite_driver, "INLINE_WINDOW", 0.01)  # the default: never over on the frozen clock
    async with db.begin(inline=True) as conn:
        await conn.execute(insert(things).values(name="c"))
    assert hops == []  # BEGIN, insert and COMMIT in one stretch


async def test_a_read_runs_inline_within_its_budget(db, hops):
    async with db.begin() as conn:
        await conn.execute(insert(things), [{"name": f"n{i}"} for i in range(50)])
    hops.clear()
    async with db.read() as conn:
        rows = (await conn.execute(select(things.c.name).order_by(things.c.id).limit(25))).all()
        assert [r.name for r in rows] == [f"n{i}" for i in range(25)]
        assert (await conn.execute(select(things.c.id).where(things.c.name == "n7"))).scalar() == 8
        with pytest.raises(OperationalError, match="no such table"):  # an error is the statement's own
            await conn.execute(text("SELECT * FROM missing"))
    assert hops == []  # no hop to the thread, and none to close
    async with db.connect() as conn:  # not a Database.read connection: the same pooled one hops
        await conn.execute(select(things.c.id).limit(1))
        await conn.rollback()
    assert "_run" in hops
    hops.clear()
    async with db.begin() as conn:  # nor does a write transaction's read
        await conn.execute(select(things.c.id).limit(1))
    assert hops.count("_run") == 2  # BEGIN IMMEDIATE and the SELECT (then the commit)


async def test_a_read_over_its_budget_runs_on_the_thread(db, hops, monkeypatch):
    ticks = itertools.count()  # every reading of the clock is a second later: the budget runs out
    monkeypatch.setattr(sqlite_driver, "clock", lambda: float(next(ticks)))
    slow = text("SELECT (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) "
                "SELECT count(*) FROM c)")
    async with db.read() as conn:
        await conn.execute(text("SELECT 1"))
        hops.clear()
        assert (await conn.execute(slow)).scalar() == 300000  # cut short inline, then run whole there
        assert hops == ["_run"]
        assert (await conn.execute(text("SELECT 2"))).scalar() == 2  # the next one is inline again
        assert hops == ["_run"]
