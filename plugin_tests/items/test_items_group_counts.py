"""The kept group counts (group_counts.py): on PostgreSQL a grouped count without a filter or
row condition comes from ``svc_item_group_counts`` once its pair is registered, and it must equal
the scan's answer after every kind of write, in every site. On SQLite the scan always answers."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import func, insert, select

from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from kernel.testing import Calls
from plugins.items.read import group_counts
from plugins.items.tables import group_counts as kept_table
from plugins.items.tables import group_fields, items
from plugins.schema.api import get_schema


async def _grouped(calls: Calls, field: str, scan: bool = False) -> list[dict[str, Any]]:
    params: dict[str, Any] = {"aggregate[count]": "*", "groupBy": field}
    if scan:  # any filter keeps a grouped count on the scan
        params["filter[id][_nnull]"] = "true"
    return await calls.ok("get", "/items/posts", params=params)


async def _check(calls: Calls, field: str) -> list[dict[str, Any]]:
    kept, scanned = await _grouped(calls, field), await _grouped(calls, field, scan=True)
    assert kept == scanned
    return kept


async def _ready(svc_app: Any, site: str, field: str) -> None:
    """Ask until the pair is registered (the first query starts it in the background)."""
    registry = group_counts.registry(svc_app.kernel)
    assert registry is not None
    coll = (await get_schema(svc_app.kernel, site)).collection("posts")
    pair = (site, coll.id, field)
    registry.checked.pop(pair, None)
    # The query before may have started the registration, and it may have finished already.
    if not await registry.is_ready(pair):
        assert pair in registry.tasks
        await asyncio.gather(*registry.tasks.values())
    assert await registry.is_ready(pair) is True


async def _kept_rows(svc_app: Any, site: str) -> int:
    async with svc_app.kernel.db.connect() as conn:
        return int(await conn.scalar(select(func.count()).select_from(kept_table)
                                     .where(kept_table.c.site_id == site)))


async def test_grouped_counts_follow_every_kind_of_write(calls: Calls, calls_b: Calls, svc_app, site, site_b):
    await calls.collection("posts", {"category": "string", "flag": "boolean", "views": "integer"})
    await calls.create("posts", [{"id": f"p{i}", "category": ["news", "tech", None][i % 3], "flag": i % 2 == 0,
                                  "views": i} for i in range(12)])
    await calls.create("posts", {"id": "bare"})  # no category at all: the null group, with the nulls
    before = await _check(calls, "category")
    assert before == [{"category": None, "count": 5}, {"category": "news", "count": 4},
                      {"category": "tech", "count": 4}]
    if svc_app.kernel.db.dialect != "postgresql":
        assert group_counts.registry(svc_app.kernel) is None
        assert await _kept_rows(svc_app, site) == 0
        return

    await _ready(svc_app, site, "category")
    await _ready(svc_app, site, "flag")
    assert await _kept_rows(svc_app, site) > 0
    # the answer now comes from the kept rows: one planted there shows, and the scan lacks it
    coll = (await get_schema(svc_app.kernel, site)).collection("posts")
    ghost = {"site_id": site, "collection_id": coll.id, "field": "category", "value": "ghost", "n": 1}
    async with svc_app.kernel.db.begin() as conn:
        await conn.execute(insert(kept_table).values(**ghost))
    assert await _grouped(calls, "category") == [before[0], {"category": "ghost", "count": 1}, *before[1:]]
    assert await _grouped(calls, "category", scan=True) == before
    async with svc_app.kernel.db.begin() as conn:
        await conn.execute(insert(kept_table).values(**{**ghost, "n": -1}))
    assert await _check(calls, "category") == before
    assert await _check(calls, "flag") == [{"flag": None, "count": 1}, {"flag": False, "count": 6},
                                           {"flag": True, "count": 6}]

    # site B's collection of the same name and field is counted apart
    await calls_b.collection("posts", {"category": "string"})
    await calls_b.create("posts", [{"category": "news"}, {"category": "sport"}])
    await _ready(svc_app, site_b, "category")
    assert await _check(calls_b, "category") == [{"category": "news", "count": 1}, {"category": "sport", "count": 1}]
    assert await _check(calls, "category") == before

    await calls.ok("patch", "/items/posts/p0", json={"category": "tech"})  # a value moves
    await calls.ok("patch", "/items/posts/p1", json={"views": 99})  # no counted field changes
    for key in ("p3", "p6"):
        await calls.ok("patch", f"/items/posts/{key}", json={"category": "sport"})
    await calls.ok("delete", "/items/posts/p4", status=204)  # soft delete
    await calls.create("posts", [{"category": "news"} for _ in range(3)])
    assert await _check(calls, "category") == [{"category": None, "count": 5}, {"category": "news", "count": 4},
                                               {"category": "sport", "count": 2}, {"category": "tech", "count": 4}]
    await _check(calls, "flag")

    # paging over groups, and a value whose count falls to zero leaves the answer
    for key in ("p3", "p6"):
        await calls.ok("patch", f"/items/posts/{key}", json={"category": "tech"})
    page = (await calls.ok("get", "/items/posts", params={"aggregate[count]": "*", "groupBy": "category",
                                                          "limit": 1, "offset": 1}))
    assert page == [{"category": "news", "count": 4}]
    assert [g["category"] for g in await _check(calls, "category")] == [None, "news", "tech"]

    # rows written behind the service's back are counted too (triggers, not events)
    now = now_utc()
    async with svc_app.kernel.db.begin() as conn:
        await conn.execute(insert(items), [
            {"site_id": site, "collection_id": coll.id, "id": uuid7(), "status": "published", "sort": None,
             "data": {"category": "bulk"}, "created_at": now, "updated_at": now, "user_created": None,
             "user_updated": None, "deleted_at": None} for _ in range(4)])
    assert {"category": "bulk", "count": 4} in await _check(calls, "category")

    # folding the deltas changes no answer and leaves one row per value
    answer = await _check(calls, "category")
    await group_counts.compact(svc_app.kernel, site, coll.id, "category")
    assert await _check(calls, "category") == answer
    async with svc_app.kernel.db.connect() as conn:
        rows = int(await conn.scalar(select(func.count()).select_from(kept_table).where(
            kept_table.c.site_id == site, kept_table.c.field == "category")))
    assert rows == len(answer)


async def test_registration_while_writing_misses_nothing(calls: Calls, svc_app, site):
    await calls.collection("posts", {"category": "string"})
    await calls.create("posts", [{"category": f"c{i % 4}"} for i in range(40)])
    if svc_app.kernel.db.dialect != "postgresql":
        assert await _grouped(calls, "category") == [{"category": f"c{i}", "count": 10} for i in range(4)]
        return
    coll = (await get_schema(svc_app.kernel, site)).collection("posts")

    async def writer() -> None:
        for i in range(20):
            await calls.create("posts", {"category": f"c{i % 5}"})

    registered, _ = await asyncio.gather(group_counts.register(svc_app.kernel, site, coll.id, "category"), writer())
    assert registered is True
    registry = group_counts.registry(svc_app.kernel)
    assert await registry.is_ready((site, coll.id, "category")) is True
    assert await _check(calls, "category") == [{"category": f"c{i}", "count": n}
                                               for i, n in enumerate([14, 14, 14, 14, 4])]


async def test_pairs_per_collection_are_bounded(calls: Calls, svc_app, site):
    if svc_app.kernel.db.dialect != "postgresql":
        assert group_counts.registry(svc_app.kernel) is None
        return
    names = [f"f{i}" for i in range(group_counts.MAX_FIELDS_PER_COLLECTION + 1)]
    await calls.collection("posts", dict.fromkeys(names, "string"))
    coll = (await get_schema(svc_app.kernel, site)).collection("posts")
    done = [await group_counts.register(svc_app.kernel, site, coll.id, name) for name in names]
    assert done == [True] * group_counts.MAX_FIELDS_PER_COLLECTION + [False]
    async with svc_app.kernel.db.connect() as conn:
        pairs = int(await conn.scalar(select(func.count()).select_from(group_fields)
                                      .where(group_fields.c.site_id == site)))
    assert pairs == group_counts.MAX_FIELDS_PER_COLLECTION
    # the last field is still answered, by the scan
    await calls.create("posts", {names[-1]: "x"})
    assert await _grouped(calls, names[-1]) == [{names[-1]: "x", "count": 1}]
