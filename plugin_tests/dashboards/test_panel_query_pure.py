"""Pure pieces: a PanelQuery as an items query, error paths mapped back into the body, and which
filters may cross a relation (for the cache's site-wide generation)."""

from __future__ import annotations

from plugins.dashboards.bodies import panel_query
from plugins.dashboards.cache import _crosses
from plugins.dashboards.panels import body_path, items_query

RANGE = {"field": "placed", "interval": "week", "from": "2026-01-01"}


def test_items_query_of_a_panel_query():
    q = panel_query({"collection": "orders", "aggregate": "sum", "field": "amount", "groupBy": "category",
                     "filter": {"category": {"_eq": "a"}}, "dateRange": RANGE, "limit": 7}, [])
    lq = items_query(q)
    assert lq.aggregate == {"sum": ["amount"]}
    assert lq.group_by == ["trunc_week(placed)", "category"]
    assert lq.filter == {"_and": [{"placed": {"_gte": "2026-01-01"}}, {"category": {"_eq": "a"}}]}
    assert (lq.limit, lq.meta) == (7, "none")
    plain = items_query(panel_query({"collection": "orders", "aggregate": "count"}, []))
    assert (plain.aggregate, plain.group_by, plain.filter) == ({"count": ["*"]}, [], None)


def test_error_paths_point_into_the_body():
    ranged = panel_query({"collection": "o", "aggregate": "max", "field": "amount", "groupBy": ["a", "b"],
                          "filter": {"x": {"_eq": 1}}, "dateRange": RANGE}, [])
    plain = panel_query({"collection": "o", "aggregate": "count", "filter": {"x": {"_eq": 1}}}, [])
    assert body_path(ranged, ["query", "filter", "_and", 1, "x", "_eq"], ["query"]) == ["query", "filter", "x", "_eq"]
    assert body_path(ranged, ["query", "filter", "_and", 0, "placed", "_gte"], []) == ["dateRange", "from"]
    assert body_path(ranged, ["query", "filter", "_and", 0, "placed", "_lt"], []) == ["dateRange", "to"]
    assert body_path(ranged, ["query", "filter", "_and", 0, "placed"], []) == ["dateRange", "field"]
    assert body_path(plain, ["query", "filter", "x"], []) == ["filter", "x"]
    assert body_path(ranged, ["query", "groupBy", "trunc_week(placed)"], []) == ["dateRange", "field"]
    assert body_path(ranged, ["query", "groupBy", "b"], []) == ["groupBy", 1]
    assert body_path(ranged, ["query", "aggregate", "max"], ["query"]) == ["query", "field"]
    assert body_path(plain, ["query", "aggregate", "count"], []) == ["aggregate"]
    assert body_path(plain, ["query", "limit"], []) == ["limit"]


def test_filters_that_may_cross_relations():
    assert not _crosses(None)
    assert not _crosses({"a": {"_eq": 1}, "_or": [{"b": {"_null": True}}]})
    assert _crosses({"author.name": {"_eq": "x"}})
    assert _crosses({"author": {"name": {"_eq": "x"}}})
    assert _crosses({"_and": [{"a": {"_eq": 1}}, {"_or": [{"b": {"c": {"_eq": 2}}}]}]})
    assert _crosses({"author": {"_or": [{"name": {"_eq": "x"}}]}})
