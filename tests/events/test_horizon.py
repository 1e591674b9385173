"""A cursor never skips an event that commits late: two overlapping transactions on each dialect.

PostgreSQL: A takes an id, B takes the next, B commits first; a naive ``id > cursor`` reader
would read B's event, move past A's and lose it when A commits. The reader here holds B back
until A is done (the visibility horizon). SQLite: the write gate keeps B from taking an id
until A has committed, so ids are commit order.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select, text

from kernel.events import START
from kernel.events.tables import events


def _dialect(svc_app) -> str:
    return svc_app.kernel.db.dialect


class _Tx:
    """A unit of work open in a task of its own (a task holds one write transaction at a time,
    as two concurrent requests would), driven step by step: ``do(fn)`` runs ``fn(uow)`` in it,
    ``commit()`` closes it."""

    def __init__(self, kernel, site: str) -> None:
        self._steps: asyncio.Queue = asyncio.Queue()
        self._task = asyncio.create_task(self._run(kernel, site))

    async def _run(self, kernel, site: str) -> None:
        async with kernel.unit_of_work(site) as uow:
            while (step := await self._steps.get()) is not None:
                fn, done = step
                try:
                    done.set_result(await fn(uow))
                except Exception as exc:  # noqa: BLE001 - handed to the caller of do()
                    done.set_exception(exc)

    async def do(self, fn):
        done = asyncio.get_running_loop().create_future()
        await self._steps.put((fn, done))
        return await done

    async def commit(self) -> None:
        await self._steps.put(None)
        await self._task


def _emit(item: str):
    async def step(uow) -> None:
        uow.emit("items.create", collection="posts", item_id=item)
        await uow.flush_events()  # the event row (and its id) is taken now, inside the open transaction
    return step


async def _open(kernel, site: str, item: str) -> _Tx:
    tx = _Tx(kernel, site)
    await tx.do(_emit(item))
    return tx


async def _naive_ids(kernel, site: str, after: int) -> list[int]:
    async with kernel.db.connect() as conn:
        return list((await conn.execute(select(events.c.id).where(events.c.site_id == site, events.c.id > after)
                                        .order_by(events.c.id))).scalars())


async def test_postgres_late_commit_is_not_skipped(svc_app, site):
    if _dialect(svc_app) != "postgresql":
        pytest.skip("the visibility horizon is PostgreSQL's; SQLite's write gate is tested below")
    kernel = svc_app.kernel
    a = await _open(kernel, site, "A")
    b = await _open(kernel, site, "B")
    await b.commit()  # B commits first

    naive = await _naive_ids(kernel, site, 0)
    assert len(naive) == 1  # the naive reader sees B's event ...
    page = await kernel.events.read_after(site)
    assert page.events == [] and page.next_cursor == START  # ... this one holds it back behind A

    await a.commit()
    assert await _naive_ids(kernel, site, naive[-1]) == []  # the naive cursor has lost A's event
    page = await kernel.events.read_after(site, page.next_cursor)
    assert [e.item_id for e in page.events] == ["A", "B"]
    assert page.events[0].id < page.events[1].id


async def test_postgres_an_earlier_transaction_with_a_later_id_is_read_first(svc_app, site):
    """Ordering by id under the same horizon would still lose an event: T1 gets its transaction id
    first (by an earlier write), T2 takes a lower event id than T1, T1 commits. T1's event is
    readable while T2 runs; the cursor must then not pass T2's lower id."""
    if _dialect(svc_app) != "postgresql":
        pytest.skip("PostgreSQL only")
    kernel = svc_app.kernel
    t1 = _Tx(kernel, site)
    await t1.do(lambda uow: uow.conn.execute(text("SELECT pg_current_xact_id()")))  # T1's xid first
    t2 = await _open(kernel, site, "T2")  # T2: a later xid, and the lower event id
    await t1.do(_emit("T1"))
    await t1.commit()

    first = await kernel.events.read_after(site)
    assert [e.item_id for e in first.events] == ["T1"]
    await t2.commit()
    second = await kernel.events.read_after(site, first.next_cursor)
    assert [e.item_id for e in second.events] == ["T2"]
    assert second.events[0].id < first.events[0].id  # an id cursor would have skipped it


async def test_sqlite_write_gate_orders_overlapping_writers(svc_app, site):
    if _dialect(svc_app) != "sqlite":
        pytest.skip("SQLite only")
    kernel = svc_app.kernel
    a_flushed, a_release, b_entered = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def writer(item: str, entered: asyncio.Event, release: asyncio.Event | None) -> None:
        async with kernel.unit_of_work(site) as uow:
            uow.emit("items.create", collection="posts", item_id=item)
            await uow.flush_events()
            entered.set()
            if release is not None:
                await release.wait()

    a = asyncio.create_task(writer("A", a_flushed, a_release))
    await a_flushed.wait()
    b = asyncio.create_task(writer("B", b_entered, None))
    for _ in range(50):  # B is queued on the write gate: it cannot take an id while A is open
        await asyncio.sleep(0)
    assert not b_entered.is_set()
    assert (await kernel.events.read_after(site)).events == []  # A's event is not committed yet

    a_release.set()
    await a
    await b
    page = await kernel.events.read_after(site)
    assert [e.item_id for e in page.events] == ["A", "B"]
    assert page.events[0].id < page.events[1].id
