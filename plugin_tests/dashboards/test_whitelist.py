"""Every name a panel query references must exist and be readable by the caller: a hidden field
and an unknown one get the same 400 INVALID_FIELD (message, path shape), wherever they stand."""

from __future__ import annotations

import json
from typing import Any

import pytest
import pytest_asyncio
from dashboards_helpers import reader_rules, seed_orders

from kernel.testing import Calls

# (hidden name, unknown name, PanelQuery template with NAME where the name goes, error path)
CASES = [
    ("secret", "nosuch", {"aggregate": "max", "field": "NAME"}, ["field"]),
    ("secret", "nosuch", {"aggregate": "count", "field": "NAME"}, ["field"]),
    ("secret", "nosuch", {"aggregate": "count", "groupBy": ["category", "NAME"]}, ["groupBy", "1"]),
    ("secret", "nosuch", {"aggregate": "count", "filter": {"NAME": {"_eq": "s1"}}}, ["filter", "NAME"]),
    ("secret", "nosuch", {"aggregate": "count", "filter": {"_and": [{"category": {"_eq": "a"}}, {"_or": [
        {"amount": {"_gt": 1}}, {"NAME": {"_starts_with": "s"}}]}]}}, ["filter", "_and", "1", "_or", "1", "NAME"]),
    ("secret", "nosuch", {"aggregate": "count", "filter": {"NAME.inner": {"_eq": 1}}}, ["filter", "NAME.inner"]),
    ("secret", "nosuch", {"aggregate": "count", "dateRange": {"field": "NAME", "interval": "week"}},
     ["dateRange", "field"]),
    ("secret", "nosuch", {"aggregate": "count", "dateRange": {"field": "NAME", "interval": "week",
                                                              "to": "2026-05-01"}}, ["dateRange", "field"]),
    ("secret", "nosuch", {"aggregate": "count", "filter": {"category": {"_eq": "a"}},
                          "dateRange": {"field": "placed", "interval": "day", "from": "2026-01-01"},
                          "groupBy": "NAME"}, ["groupBy", "0"]),
    ("secret", "nosuch", {"aggregate": "count", "filter": {"NAME": {"_null": False}},
                          "dateRange": {"field": "placed", "interval": "day", "from": "2026-01-01"}},
     ["filter", "NAME"]),
    ("meta", "nosuch", {"aggregate": "count", "filter": {"NAME": {"channel": {"_eq": "web"}}}},
     ["filter", "NAME"]),
    ("meta", "nosuch", {"aggregate": "count", "groupBy": ["NAME.channel"]}, ["groupBy", "0"]),
    ("email", "nosuch", {"aggregate": "count", "filter": {"buyer": {"NAME": {"_eq": "x"}}}},
     ["filter", "buyer", "NAME"]),
    ("email", "nosuch", {"aggregate": "count", "filter": {"buyer.NAME": {"_contains": "@"}}},
     ["filter", "buyer.NAME"]),
    ("id", "nosuch", {"aggregate": "count", "filter": {"status": {"_eq": "x"}, "NAME": {"_eq": "x"}}},
     ["filter", "status"]),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def setup(shared_site: Any) -> tuple[Calls, str]:
    await seed_orders(shared_site.calls)
    await shared_site.calls.collection("ledger", {"total": "integer"})
    made = await shared_site.calls.ok("post", "/dashboards", status=201, json={"name": "Sales"})
    return await shared_site.member(reader_rules()), made["id"]


def _query(template: dict[str, Any], name: str) -> dict[str, Any]:
    return json.loads(json.dumps({"collection": "orders", **template}).replace("NAME", name))


@pytest.mark.parametrize(("hidden", "unknown", "template", "where"), CASES)
async def test_hidden_and_unknown_answer_alike(setup, hidden, unknown, template, where):
    member, dashboard_id = setup
    answers = []
    for name in (hidden, unknown):
        resp = await member.call("post", f"/dashboards/{dashboard_id}/panels/preview", json=_query(template, name))
        assert resp.status_code == 400, resp.text
        answers.append(resp.json())
    as_hidden = json.loads(json.dumps(answers[1]).replace(unknown, hidden))
    assert as_hidden == answers[0]
    error = answers[0]["errors"][0]
    assert error["code"] == "INVALID_FIELD"
    assert error["path"] == [p.replace("NAME", hidden) for p in where]


async def test_readable_names_run(setup):
    member, dashboard_id = setup
    rows = await member.ok("post", f"/dashboards/{dashboard_id}/panels/preview", json={
        "collection": "orders", "aggregate": "count", "filter": {"buyer": {"name": {"_eq": "Ann"}}},
        "groupBy": ["category"]})
    assert rows == [{"group": {"category": "a"}, "value": 2}, {"group": {"category": "b"}, "value": 1}]


async def test_a_stored_panel_is_checked_against_the_runner(shared_site, setup):
    member, dashboard_id = setup
    stored = await shared_site.calls.ok("post", f"/dashboards/{dashboard_id}/panels", status=201, json={
        "name": "Secrets", "type": "list", "position": {"x": 0, "y": 0, "w": 2, "h": 2},
        "query": {"collection": "orders", "aggregate": "count", "groupBy": ["secret"]}})
    assert len(await shared_site.calls.ok("post", f"/dashboards/{dashboard_id}/panels/{stored['id']}/data")) == 6
    await member.err("post", f"/dashboards/{dashboard_id}/panels/{stored['id']}/data", 400, "INVALID_FIELD",
                     path_is=["query", "groupBy", "0"])


async def test_a_collection_the_caller_cannot_read_is_403(shared_site, setup):
    member, dashboard_id = setup
    for collection in ("nothing_here", "ledger"):
        await member.err("post", f"/dashboards/{dashboard_id}/panels/preview", 403, "PERMISSION_DENIED",
                         json={"collection": collection, "aggregate": "count"})
