"""Default field indexes and the planner: a filtered, sorted page reads the sort field's index
in order, on both databases; on SQLite the statistics are refreshed as the items grow.

The apps here make a field's index with the field (``SVC_ITEMS_INDEX_MIN_ITEMS=0``): the tests
are about how the planner uses the indexes, not about when they are made
(test_items_lazy_indexes.py)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest_asyncio
from sqlalchemy import text

from kernel.testing import Calls, TestApp
from plugins.items.upkeep import pg_statistics, planner_stats
from plugins.items.upkeep.indexes import index_name
from plugins.schema.api import get_schema


@pytest_asyncio.fixture
async def svc_app(make_app: Any) -> TestApp:
    return await make_app(env={"SVC_ITEMS_INDEX_MIN_ITEMS": "0"})


async def _seed(calls: Calls, n: int) -> None:
    await calls.collection("articles", {"title": "string", "views": "integer", "rating": "float",
                                        "category": "string", "body": "text"})
    cats = ["news", "tech", "sports", "culture", "science"]
    for start in range(0, n, 200):
        await calls.create("articles", [{"title": f"a{i}", "views": i % 1000, "rating": (i * 37 % 500) / 100,
                                         "category": cats[i % 5], "body": "lorem " * 20}
                                        for i in range(start, min(n, start + 200))])


async def test_sorted_filtered_page_reads_the_sort_index(calls: Calls, svc_app, site):
    await _seed(calls, 1000)
    kernel = svc_app.kernel
    if kernel.db.is_sqlite:
        await planner_stats.analyze(kernel)
    else:  # what autovacuum does in time
        async with kernel.db.begin() as conn:
            await conn.execute(text("ANALYZE svc_items"))
    params = {"filter": json.dumps({"views": {"_gt": 500}, "category": {"_eq": "news"}}), "sort": "-rating",
              "limit": "25", "meta": "none"}
    page = (await calls.list("articles", **params))["data"]
    ratings = [row["rating"] for row in page]
    assert len(page) == 25 and ratings == sorted(ratings, reverse=True)
    assert all(row["views"] > 500 and row["category"] == "news" for row in page)

    # The page's order can come from the sort field's index: NULL is the smallest value on both
    # databases, as the index stores it (a NULLS clause against it would force a full sort).
    coll = (await get_schema(kernel, site)).collection("articles")
    rating_ix = index_name(coll.id, "rating")
    rating = {"sqlite": """CAST(json_extract(data, '$."rating"') AS NUMERIC) DESC""",
              "postgresql": "CAST(data ->> 'rating' AS NUMERIC) DESC NULLS LAST"}[kernel.db.dialect]
    sql = (f"SELECT id FROM svc_items WHERE site_id = :site AND collection_id = '{coll.id}' "
           f"AND deleted_at IS NULL ORDER BY {rating}, id LIMIT 25")
    async with kernel.db.connect() as conn:
        if kernel.db.is_sqlite:
            plan = " ".join(str(row[3]) for row in await conn.execute(text("EXPLAIN QUERY PLAN " + sql),
                                                                      {"site": site}))
            assert rating_ix in plan and "RIGHT PART OF ORDER BY" in plan, plan
        else:
            await conn.execute(text("SET LOCAL enable_seqscan = off"))
            plan = " ".join(str(row[0]) for row in await conn.execute(text("EXPLAIN " + sql), {"site": site}))
            assert rating_ix in plan and "Backward" in plan, plan


async def test_item_writes_refresh_sqlite_statistics(calls: Calls, svc_app, site):
    kernel = svc_app.kernel
    stats = kernel.state.get(planner_stats.STATE)
    if not kernel.db.is_sqlite:
        assert stats is None  # PostgreSQL's autovacuum keeps its own statistics
        return
    if stats.task is not None:
        await stats.task  # the startup run
    await calls.collection("notes", {"n": "integer"})
    stats.threshold = 5
    await calls.create("notes", [{"n": i} for i in range(3)])
    await calls.create("notes", [{"n": i} for i in range(3)])
    assert stats.task is not None
    await stats.task
    coll = (await get_schema(kernel, site)).collection("notes")
    async with kernel.db.connect() as conn:
        stat = (await conn.execute(text("SELECT stat FROM sqlite_stat1 WHERE idx = :ix"),
                                   {"ix": index_name(coll.id, "n")})).scalar_one()
    assert stat.split()[0] == "6"  # the index's row count, as ANALYZE saw it
    assert stats.writes <= 1 and stats.threshold >= planner_stats.MIN_WRITES


async def _statistics(kernel) -> set[str]:
    async with kernel.db.connect() as conn:
        return set((await conn.execute(text("SELECT stxname FROM pg_statistic_ext"))).scalars())


async def _eventually(probe, want) -> None:
    """The statistics are made by the field's bus action, after the commit."""
    for _ in range(100):
        if want(await probe()):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(await probe())


async def test_postgresql_text_fields_get_expression_statistics(calls: Calls, calls_b: Calls, svc_app, site):
    kernel = svc_app.kernel
    if kernel.db.is_sqlite:  # SQLite's ANALYZE (above) reads the partial indexes themselves
        assert pg_statistics.start(kernel) is None and pg_statistics.TASK not in kernel.state
        return
    await pg_statistics.stop(kernel)  # the startup sync: this test drives it by hand below
    await calls.collection("articles", {"category": "string", "views": "integer", "published": "boolean",
                                        "body": "text"})
    await _eventually(lambda: _statistics(kernel),
                      lambda names: {"st_items_category", "st_items_published"} <= names)
    names = await _statistics(kernel)
    # numeric fields cast; an ANALYZE would evaluate the cast on other collections' rows
    assert "st_items_views" not in names and "st_items_body" not in names  # body: text, not indexed
    # Another site stores text under "views": ANALYZE must not fail on it.
    await calls_b.collection("logs", {"views": "string"})
    await calls_b.create("logs", [{"views": "many"}, {"views": "n/a"}])
    cats = ["news", "tech", "sports", "culture", "science"]
    await calls.create("articles", [{"category": cats[i % 5], "views": i, "published": i % 2 == 0}
                                    for i in range(400)])
    coll = (await get_schema(kernel, site)).collection("articles")
    group = (f"SELECT data ->> 'category', count(*) FROM svc_items WHERE site_id = :site AND "
             f"collection_id = '{coll.id}' AND deleted_at IS NULL GROUP BY data ->> 'category'")
    async with kernel.db.begin() as conn:
        await conn.execute(text("ANALYZE svc_items"))
        plan = (await conn.execute(text("EXPLAIN (FORMAT JSON) " + group), {"site": site})).scalar_one()
    top = (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]
    assert top["Plan Rows"] <= 20, top  # the five categories (estimated), not one group per row
    rows = (await calls.list("articles", **{"aggregate[count]": "*", "groupBy": "category"}))["data"]
    assert sorted(r["category"] for r in rows) == sorted(cats) and {r["count"] for r in rows} == {80}

    # Startup makes what is missing (a deployment upgraded from before this existed).
    async with kernel.db.begin() as conn:
        await conn.execute(text('DROP STATISTICS "st_items_category"'))
    assert await pg_statistics.sync(kernel) >= 2
    assert "st_items_category" in await _statistics(kernel)

    # Dropped when the last field of that name goes, in any site.
    await calls_b.collection("tags", {"category": "string"})
    await calls.ok("delete", "/fields/articles/category?allowDestructive=true", 204)
    await asyncio.sleep(0.3)
    assert "st_items_category" in await _statistics(kernel)  # site B still has one
    await calls_b.ok("delete", "/fields/tags/category?allowDestructive=true", 204)
    await _eventually(lambda: _statistics(kernel), lambda names: "st_items_category" not in names)
    assert "st_items_published" in await _statistics(kernel)


async def test_analyze_reopens_the_pooled_connections(svc_app):
    """A SQLite connection keeps the statistics it loaded when it opened, so the run reopens them."""
    kernel = svc_app.kernel
    stats = kernel.state.get(planner_stats.STATE)
    if not kernel.db.is_sqlite:
        assert stats is None
        return
    if stats.task is not None:
        await stats.task  # the startup run

    async def pooled() -> tuple[Any, int]:
        async with kernel.db.connect() as conn:
            raw = await conn.get_raw_connection()
            return raw.driver_connection, raw.info["svc_generation"]

    # several connections in the pool, all loaded before the run below
    async with kernel.db.connect(), kernel.db.connect(), kernel.db.connect():
        pass
    old = {await pooled() for _ in range(6)}
    generation = {gen for _, gen in old}.pop()
    stats.schedule()
    await stats.task
    new = {await pooled() for _ in range(6)}
    assert {gen for _, gen in new} == {generation + 1}  # every checkout after the run is fresh
    assert not {conn for conn, _ in new} & {conn for conn, _ in old}
