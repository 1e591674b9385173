"""Default field indexes and the planner: a filtered, sorted page reads the sort field's index
in order, on both databases; on SQLite the statistics are refreshed as the items grow."""

from __future__ import annotations

import json

from sqlalchemy import text

from kernel.testing import Calls
from plugins.items import planner_stats
from plugins.items.indexes import index_name
from plugins.schema.api import get_schema


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
