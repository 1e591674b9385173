"""Every body of /dashboards refuses bad input with 400 VALIDATION_FAILED and the bad key's path
(one shared app for all the cases: nothing here changes state)."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio
from dashboards_helpers import POSITION, seed_orders

COUNT = {"collection": "orders", "aggregate": "count"}
PANEL = {"name": "Orders", "type": "metric", "position": POSITION, "query": COUNT}

# (body, error path); a preview takes the query alone, a panel the query under "query".
QUERY_CASES: list[tuple[Any, list[str]]] = [
    ([], []),
    ({**COUNT, "extra": 1}, ["extra"]),
    ({"aggregate": "count"}, ["collection"]),
    ({**COUNT, "collection": "bad name"}, ["collection"]),
    ({**COUNT, "collection": 5}, ["collection"]),
    ({**COUNT, "aggregate": "median"}, ["aggregate"]),
    ({**COUNT, "aggregate": None}, ["aggregate"]),
    ({**COUNT, "aggregate": "sum"}, ["field"]),
    ({**COUNT, "aggregate": "avg", "field": "a.b"}, ["field"]),
    ({**COUNT, "field": 7}, ["field"]),
    ({**COUNT, "groupBy": {"a": 1}}, ["groupBy"]),
    ({**COUNT, "groupBy": ["a", "b", "c", "d"]}, ["groupBy"]),
    ({**COUNT, "groupBy": ["category", 3]}, ["groupBy", "1"]),
    ({**COUNT, "groupBy": ["trunc_day(placed)"]}, ["groupBy", "0"]),
    ({**COUNT, "filter": []}, ["filter"]),
    ({**COUNT, "filter": {"category": {"_like": "a"}}}, ["filter", "category", "_like"]),
    ({**COUNT, "filter": {"category": {"_in": "a"}}}, ["filter", "category", "_in"]),
    ({**COUNT, "filter": {"_and": {}}}, ["filter", "_and"]),
    ({**COUNT, "filter": {"amount": {"_eq": "many"}}}, ["filter", "amount", "_eq"]),
    ({**COUNT, "filter": {"category": {"_eq": "a\x00"}}}, ["filter", "category", "_eq"]),
    ({**COUNT, "dateRange": "2026"}, ["dateRange"]),
    ({**COUNT, "dateRange": {"interval": "day"}}, ["dateRange", "field"]),
    ({**COUNT, "dateRange": {"field": "placed", "interval": "year"}}, ["dateRange", "interval"]),
    ({**COUNT, "dateRange": {"field": "placed", "interval": "day", "from": "yesterday"}}, ["dateRange", "from"]),
    ({**COUNT, "dateRange": {"field": "placed", "interval": "day", "to": 20260101}}, ["dateRange", "to"]),
    ({**COUNT, "dateRange": {"field": "placed", "interval": "day", "step": 2}}, ["dateRange", "step"]),
    ({**COUNT, "dateRange": {"field": "category", "interval": "day"}}, ["dateRange", "field"]),
    ({**COUNT, "dateRange": {"field": "day", "interval": "day", "from": "2026-01-01T10:00:00Z"}},
     ["dateRange", "from"]),
    ({**COUNT, "limit": 0}, ["limit"]),
    ({**COUNT, "limit": 201}, ["limit"]),
    ({**COUNT, "limit": True}, ["limit"]),
    ({**COUNT, "limit": "5"}, ["limit"]),
    ({**COUNT, "aggregate": "sum", "field": "category"}, ["field"]),
    ({**COUNT, "collection": "nothing_here"}, ["collection"]),
]
DASHBOARD_CASES: list[tuple[Any, list[str]]] = [
    ({}, ["name"]),
    ({"name": ""}, ["name"]),
    ({"name": "   "}, ["name"]),
    ({"name": "x" * 201}, ["name"]),
    ({"name": 5}, ["name"]),
    ({"name": "x\x00"}, ["name"]),
    ({"name": "x", "owner": "me"}, ["owner"]),
    ({"name": "x", "icon": "i" * 65}, ["icon"]),
    ({"name": "x", "color": 3}, ["color"]),
    ({"name": "x", "note": ""}, ["note"]),
]
PANEL_CASES: list[tuple[Any, list[str]]] = [
    ({k: v for k, v in PANEL.items() if k != "name"}, ["name"]),
    ({**PANEL, "type": "gauge"}, ["type"]),
    ({**PANEL, "type": None}, ["type"]),
    ({**PANEL, "position": None}, ["position"]),
    ({**PANEL, "position": [0, 0, 1, 1]}, ["position"]),
    ({**PANEL, "position": {"x": 0, "y": 0, "w": 1}}, ["position", "h"]),
    ({**PANEL, "position": {**POSITION, "x": -1}}, ["position", "x"]),
    ({**PANEL, "position": {**POSITION, "w": 0}}, ["position", "w"]),
    ({**PANEL, "position": {**POSITION, "h": 1.5}}, ["position", "h"]),
    ({**PANEL, "position": {**POSITION, "y": True}}, ["position", "y"]),
    ({**PANEL, "position": {**POSITION, "y": 10**12}}, ["position", "y"]),
    ({**PANEL, "position": {**POSITION, "z": 1}}, ["position", "z"]),
    ({**PANEL, "query": None}, ["query"]),
    ({**PANEL, "type": "label"}, ["query"]),
    ({**PANEL, "query": "count"}, ["query"]),
    ({**PANEL, "style": {}}, ["style"]),
    *[({**PANEL, "query": q}, ["query", *path]) for q, path in QUERY_CASES],
]
PATCH_PANEL_CASES: list[tuple[Any, list[str]]] = [
    ({"type": "label"}, ["query"]),
    ({"query": None}, ["query"]),
    ({"name": None}, ["name"]),
    ({"position": {**POSITION, "x": "1"}}, ["position", "x"]),
    ({"dashboardId": "x"}, ["dashboardId"]),
    ({"query": {**COUNT, "limit": -3}}, ["query", "limit"]),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ids(shared_site: Any) -> tuple[str, str]:
    calls = shared_site.calls
    await seed_orders(calls)
    d = (await calls.ok("post", "/dashboards", status=201, json={"name": "Sales"}))["id"]
    p = (await calls.ok("post", f"/dashboards/{d}/panels", status=201, json=PANEL))["id"]
    return d, p


async def _refused(shared_site, method, path, body, where):
    resp = await shared_site.calls.call(method, path, json=body)
    assert resp.status_code == 400, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "VALIDATION_FAILED"
    if where:
        assert error["path"] == where


@pytest.mark.parametrize(("body", "where"), QUERY_CASES)
async def test_preview_bodies(shared_site, ids, body, where):
    await _refused(shared_site, "post", f"/dashboards/{ids[0]}/panels/preview", body, where)


@pytest.mark.parametrize(("body", "where"), DASHBOARD_CASES + [([], [])])
async def test_dashboard_bodies(shared_site, ids, body, where):
    await _refused(shared_site, "post", "/dashboards", body, where)


@pytest.mark.parametrize(("body", "where"), [c for c in DASHBOARD_CASES if c[0] != {}] + [({"name": None}, ["name"])])
async def test_dashboard_patches(shared_site, ids, body, where):
    await _refused(shared_site, "patch", f"/dashboards/{ids[0]}", body, where)


@pytest.mark.parametrize(("body", "where"), PANEL_CASES)
async def test_panel_bodies(shared_site, ids, body, where):
    await _refused(shared_site, "post", f"/dashboards/{ids[0]}/panels", body, where)


@pytest.mark.parametrize(("body", "where"), PATCH_PANEL_CASES)
async def test_panel_patches(shared_site, ids, body, where):
    await _refused(shared_site, "patch", f"/dashboards/{ids[0]}/panels/{ids[1]}", body, where)


async def test_nothing_was_written(shared_site, ids):
    listed = await shared_site.calls.ok("get", "/dashboards")
    assert [d["name"] for d in listed] == ["Sales"] and listed[0]["panelCount"] == 1
    assert (await shared_site.calls.ok("get", f"/dashboards/{ids[0]}/panels"))[0]["position"] == POSITION


async def test_not_json_and_hostile_ids(shared_site, ids):
    resp = await shared_site.calls.call("post", "/dashboards", content=b"{nope",
                                        headers={"Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"
    for bad in ("x" * 300, "'; drop table svc_dashboards; --", "%00"):
        await shared_site.calls.err("get", f"/dashboards/{bad}", 404, "RECORD_NOT_FOUND")
        await shared_site.calls.err("post", f"/dashboards/{ids[0]}/panels/{bad}/data", 404, "RECORD_NOT_FOUND")
