"""``Database.checkpoint``: on SQLite the write-ahead log is folded into the file and truncated,
bounded when a reader holds an older snapshot, and refused inside the task's own write."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import text

from kernel.db import Database, NestedWriteError


@pytest.fixture
async def db(tmp_path):
    database = Database(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    async with database.begin() as conn:
        await conn.execute(text("CREATE TABLE t (v TEXT)"))
        await conn.execute(text("INSERT INTO t VALUES ('kept')"))
    try:
        yield database
    finally:
        await database.dispose()


async def test_it_empties_the_log(db, tmp_path):
    wal = tmp_path / "db.sqlite3-wal"
    assert wal.stat().st_size > 0
    assert await db.checkpoint() is True
    assert wal.stat().st_size == 0
    async with db.connect() as conn:
        assert (await conn.execute(text("SELECT v FROM t"))).scalar() == "kept"


async def test_a_reader_on_an_older_snapshot_makes_it_incomplete_within_its_bound(db, tmp_path):
    reader = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM t").fetchone() == (1,)
        assert await db.checkpoint(attempts=2, wait=0.01, pause=0.01) is False
        assert (tmp_path / "db.sqlite3-wal").stat().st_size > 0
    finally:
        reader.close()
    assert await db.checkpoint(attempts=1) is True


async def test_inside_its_own_write_it_is_refused_at_once(db):
    async with db.begin():
        with pytest.raises(NestedWriteError):
            await db.checkpoint()
