"""Panel runs through the items API: aggregates, groups, time buckets (identical on SQLite and
PostgreSQL: this module runs in both passes), preview, meta."""

from __future__ import annotations

from dashboards_helpers import dashboard, panel, preview, run, seed_orders

from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


async def test_aggregates_and_groups(calls):
    await seed_orders(calls)
    d = await dashboard(calls)
    count = await run(calls, d, await panel(calls, d, {"collection": "orders", "aggregate": "count"}))
    assert count["data"] == [{"value": 6}]
    assert count["meta"]["rowCount"] == 1
    assert set(count["meta"]) == {"executedAt", "rowCount", "durationMs"}
    assert count["meta"]["executedAt"].endswith("Z") and count["meta"]["durationMs"] >= 0
    by_category = await preview(calls, d, {"collection": "orders", "aggregate": "sum", "field": "amount",
                                           "groupBy": ["category"]})
    assert by_category == [{"group": {"category": "a"}, "value": 22}, {"group": {"category": "b"}, "value": 120},
                           {"group": {"category": "c"}, "value": 1}]
    assert await preview(calls, d, {"collection": "orders", "aggregate": "avg", "field": "amount",
                                    "filter": {"category": {"_eq": "b"}}}) == [{"value": 60.0}]
    assert await preview(calls, d, {"collection": "orders", "aggregate": "min", "field": "amount"}) == [{"value": 1}]
    assert await preview(calls, d, {"collection": "orders", "aggregate": "max", "field": "amount",
                                    "filter": {"_or": [{"category": {"_eq": "a"}}, {"meta": {"channel": {
                                        "_eq": "shop"}}}]}}) == [{"value": 100}]
    limited = await preview(calls, d, {"collection": "orders", "aggregate": "count", "groupBy": "category",
                                       "limit": 2})
    assert [r["group"]["category"] for r in limited] == ["a", "b"]
    nested = await preview(calls, d, {"collection": "orders", "aggregate": "count", "groupBy": ["meta.channel"]})
    assert nested == [{"group": {"meta.channel": "shop"}, "value": 1}, {"group": {"meta.channel": "web"}, "value": 5}]


async def test_time_buckets(calls):
    await seed_orders(calls)
    d = await dashboard(calls)
    by_day = await preview(calls, d, {"collection": "orders", "aggregate": "count",
                                      "dateRange": {"field": "placed", "interval": "day"}})
    assert by_day == [{"bucket": "2025-12-31", "value": 1}, {"bucket": "2026-03-02", "value": 2},
                      {"bucket": "2026-03-08", "value": 1}, {"bucket": "2026-03-09", "value": 1},
                      {"bucket": "2026-04-01", "value": 1}]
    by_week = await preview(calls, d, {"collection": "orders", "aggregate": "sum", "field": "amount",
                                       "dateRange": {"field": "placed", "interval": "week", "from": "2026-01-01",
                                                     "to": "2026-04-01"}})
    assert by_week == [{"bucket": "2026-03-02", "value": 35}, {"bucket": "2026-03-09", "value": 7}]
    by_month = await preview(calls, d, {"collection": "orders", "aggregate": "count", "groupBy": ["category"],
                                        "dateRange": {"field": "day", "interval": "month"}})
    assert by_month == [{"bucket": "2026-01-01", "group": {"category": "c"}, "value": 1},
                        {"bucket": "2026-03-01", "group": {"category": "a"}, "value": 3},
                        {"bucket": "2026-03-01", "group": {"category": "b"}, "value": 1},
                        {"bucket": "2026-04-01", "group": {"category": "b"}, "value": 1}]
    created = await preview(calls, d, {"collection": "orders", "aggregate": "count",
                                       "dateRange": {"field": "createdAt", "interval": "month"}})
    assert len(created) == 1 and created[0]["value"] == 6 and created[0]["bucket"].endswith("-01")
    stored = await panel(calls, d, {"collection": "orders", "aggregate": "count",
                                    "dateRange": {"field": "placed", "interval": "day"}}, type_="time-series")
    assert (await run(calls, d, stored))["data"] == by_day


async def test_buckets_need_a_date_field(calls):
    await seed_orders(calls)
    d = await dashboard(calls)
    await calls.err("post", f"/dashboards/{d}/panels/preview", 400, "VALIDATION_FAILED",
                    path_is=["dateRange", "field"], json={"collection": "orders", "aggregate": "count",
                                                          "dateRange": {"field": "amount", "interval": "day"}})
    await calls.err("post", f"/dashboards/{d}/panels", 400, "VALIDATION_FAILED", path_is=["query", "field"],
                    json={"name": "x", "type": "metric", "position": {"x": 0, "y": 0, "w": 1, "h": 1},
                          "query": {"collection": "orders", "aggregate": "sum", "field": "category"}})
    await calls.err("post", f"/dashboards/{d}/panels/preview", 400, "VALIDATION_FAILED", path_is=["collection"],
                    json={"collection": "nothing_here", "aggregate": "count"})


async def test_label_panels_have_no_query(calls):
    d = await dashboard(calls)
    label = await panel(calls, d, None, type_="label", name="Q1 numbers")
    await calls.err("post", f"/dashboards/{d}/panels/{label}/data", 400, "VALIDATION_FAILED", path_is=["query"])
