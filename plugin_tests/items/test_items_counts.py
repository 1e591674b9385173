"""The kept item counts (counts.py): a list's total without a filter or row condition comes from
``svc_item_counts``, and it must equal a real count after every kind of write, in every site."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import func, insert, select

from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from kernel.testing import Calls
from plugins.items.read import counts
from plugins.items.tables import item_counts, items
from plugins.schema.api import get_schema

WRITERS = 8  # concurrent write requests in the deltas test, well under the pool (20 + 10 overflow)


async def _truth(svc_app: Any, site: str, collection: str) -> int:
    coll = (await get_schema(svc_app.kernel, site)).collection(collection)
    async with svc_app.kernel.db.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(items).where(
            items.c.site_id == site, items.c.collection_id == coll.id, items.c.deleted_at.is_(None)))).scalar_one())


async def _total(calls: Calls, collection: str) -> int:
    # limit=1: a short first page would tell the total without asking for it
    return (await calls.list(collection, limit=1))["meta"]["total"]


async def _filtered_total(calls: Calls, collection: str) -> int:
    return (await calls.list(collection, limit=1, **{"filter[id][_nnull]": "true"}))["meta"]["total"]


async def _check(calls: Calls, svc_app: Any, site: str, collection: str, expected: int) -> None:
    assert await _truth(svc_app, site, collection) == expected
    assert await _total(calls, collection) == expected
    assert await _filtered_total(calls, collection) == expected  # the counting path agrees


async def test_totals_follow_every_kind_of_write(calls: Calls, calls_b: Calls, svc_app, site, site_b):
    await calls.collection("authors", {"name": "string"})
    await calls.collection("posts", {"title": "string", "author": "string"})
    await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="authors",
                         onDelete="cascade")
    await calls.create("authors", [{"id": "ann"}, {"id": "bob"}, {"id": "cy"}])
    await calls.create("posts", {"id": "solo", "title": "one"})
    await calls.create("posts", [{"id": f"p{i}", "author": "ann" if i < 4 else "bob"} for i in range(10)])
    await _check(calls, svc_app, site, "posts", 11)
    # site B's collection of the same name is another count
    await calls_b.collection("posts", {"title": "string"})
    await calls_b.create("posts", [{"title": str(i)} for i in range(3)])
    assert await _total(calls_b, "posts") == 3
    await _check(calls, svc_app, site, "posts", 11)

    await calls.ok("delete", "/items/posts/solo", status=204)  # soft delete
    await _check(calls, svc_app, site, "posts", 10)
    await calls.ok("delete", "/items/authors/ann", status=204)  # cascades to four posts
    await _check(calls, svc_app, site, "posts", 6)
    await _check(calls, svc_app, site, "authors", 2)
    await calls.ok("put", "/items/posts/p5", json={"title": "replaced"})  # updates leave it alone
    await calls.ok("patch", "/items/posts/p6", json={"title": "patched"})
    await _check(calls, svc_app, site, "posts", 6)

    # hard deletes through resolve-dependents
    rel = (await calls.relation(type="m2o", collection="posts", field="title", relatedCollection="authors"))["id"]
    await calls.create("posts", [{"id": "t1", "title": "cy"}, {"id": "t2", "title": "cy"}])
    await _check(calls, svc_app, site, "posts", 8)
    await calls.ok("post", "/items/authors/cy/resolve-dependents", json={"action": "delete", "relation": rel,
                                                                         "hard": True})
    await _check(calls, svc_app, site, "posts", 6)

    # items written behind the service's back are counted too (triggers, not events)
    coll = (await get_schema(svc_app.kernel, site)).collection("posts")
    now = now_utc()
    async with svc_app.kernel.db.begin() as conn:
        await conn.execute(insert(items), [
            {"site_id": site, "collection_id": coll.id, "id": uuid7(), "status": "published", "sort": None,
             "data": {"title": "bulk"}, "created_at": now, "updated_at": now, "user_created": None,
             "user_updated": None, "deleted_at": None} for _ in range(5)])
    await _check(calls, svc_app, site, "posts", 11)

    # a deleted collection's name, taken again, starts from nothing
    await calls.ok("delete", "/collections/posts", status=204)
    await calls.collection("posts", {"title": "string"})
    assert await _total(calls, "posts") == 0
    await calls.create("posts", [{"title": "a"}, {"title": "b"}])
    await _check(calls, svc_app, site, "posts", 2)
    assert await _total(calls_b, "posts") == 3


async def test_a_row_condition_counts_rows(calls: Calls, member):
    await calls.collection("notes", {"score": "integer"})
    await calls.create("notes", [{"score": i} for i in range(6)])
    reader, _ = await member([{"collection": "notes", "action": "read", "fields": ["*"],
                               "conditions": {"score": {"_gt": 3}}}])
    assert await _total(reader, "notes") == 2
    assert await _total(calls, "notes") == 6


async def test_postgresql_deltas_fold_without_changing_the_sum(calls: Calls, svc_app, site, monkeypatch):
    kernel = svc_app.kernel
    await calls.collection("logs", {"n": "integer"})
    coll = (await get_schema(kernel, site)).collection("logs")

    async def rows() -> int:
        async with kernel.db.connect() as conn:
            return int((await conn.execute(select(func.count()).select_from(item_counts).where(
                item_counts.c.collection_id == coll.id))).scalar_one())

    # Concurrent writers: one delta row per statement on PostgreSQL, none of them waiting. More
    # writes than MAX_DELTAS, so that a sweep has rows to fold, but at most WRITERS at a time:
    # forty at once held up to 15 of the pool's 30 connections on a quiet machine, and on a
    # loaded one, all in flight on one slow event loop, checkouts waited past the pool's 30 s
    # timeout. WRITERS requests (one connection each) and the app's own tasks never wait.
    lane = asyncio.Semaphore(WRITERS)

    async def write(i: int) -> None:
        async with lane:
            await calls.create("logs", [{"n": i}, {"n": -i}])

    await asyncio.gather(*(write(i) for i in range(40)))
    await calls.ok("delete", f"/items/logs/{(await calls.list('logs', limit=1))['data'][0]['id']}", status=204)
    if kernel.db.is_sqlite:
        assert await rows() == 1  # one row per collection, updated in place
        assert kernel.state.get(counts.STATE) is None
        await _check(calls, svc_app, site, "logs", 79)
        return
    assert await rows() > counts.MAX_DELTAS
    await _check(calls, svc_app, site, "logs", 79)
    assert await counts.sweep(kernel) >= 1
    assert await rows() == 1
    await _check(calls, svc_app, site, "logs", 79)

    # the writers' own counter schedules the sweep
    monkeypatch.setattr(counts, "MAX_DELTAS", 3)
    compactor = kernel.state[counts.STATE]
    compactor.threshold, compactor.writes = 5, 0
    for i in range(5):
        await calls.create("logs", {"n": i})
    assert compactor.task is not None
    await compactor.task
    assert await rows() == 1
    await _check(calls, svc_app, site, "logs", 84)
