"""Helpers of the dashboards tests: an ``orders`` collection with dated items, dashboard calls."""

from __future__ import annotations

from typing import Any

from kernel.testing import Calls

ORDERS = [
    # placed (UTC date-time), day (date), category, amount, secret
    ("2026-03-02T10:00:00Z", "2026-03-02", "a", 10, "s1"),   # Monday, week 2026-03-02
    ("2026-03-02T23:59:59Z", "2026-03-02", "b", 20, "s2"),
    ("2026-03-08T00:00:00Z", "2026-03-08", "a", 5, "s3"),    # Sunday, still week 2026-03-02
    ("2026-03-09T00:00:00Z", "2026-03-09", "a", 7, "s4"),    # Monday, week 2026-03-09
    ("2026-04-01T12:00:00+02:00", "2026-04-01", "b", 100, "s5"),  # 10:00Z on April 1st
    ("2026-01-01T00:30:00+01:00", "2026-01-01", "c", 1, "s6"),    # 2025-12-31T23:30Z
]
POSITION = {"x": 0, "y": 0, "w": 4, "h": 3}


async def seed_orders(calls: Calls, rows: list[tuple[Any, ...]] = ORDERS) -> None:
    """The ``orders`` collection (placed, day, category, amount, secret, meta, buyer: m2o to
    ``buyers`` {name, email}) with ``rows``; buyers ``u1`` and ``u2`` alternate."""
    if (await calls.call("get", "/collections/orders")).status_code != 200:
        await calls.collection("buyers", {"name": "string", "email": "string"})
        await calls.collection("orders", {"placed": "dateTime", "day": "date", "category": "string",
                                          "amount": "integer", "secret": "string", "meta": "json",
                                          "buyer": "string"})
        await calls.relation(type="m2o", collection="orders", field="buyer", relatedCollection="buyers")
        await calls.create("buyers", [{"id": "u1", "name": "Ann", "email": "ann@example.com"},
                                      {"id": "u2", "name": "Bo", "email": "bo@example.com"}])
    await calls.create("orders", [{"placed": p, "day": d, "category": c, "amount": a, "secret": s,
                                   "buyer": f"u{i % 2 + 1}", "meta": {"channel": "web" if a < 50 else "shop"}}
                                  for i, (p, d, c, a, s) in enumerate(rows)])


async def dashboard(calls: Calls, **body: Any) -> str:
    made = await calls.ok("post", "/dashboards", status=201, json={"name": "Sales", **body})
    return made["id"]


async def panel(calls: Calls, dashboard_id: str, query: dict[str, Any] | None, *, type_: str = "metric",
                name: str = "Orders") -> str:
    body = {"name": name, "type": type_, "position": POSITION, "query": query}
    return (await calls.ok("post", f"/dashboards/{dashboard_id}/panels", status=201, json=body))["id"]


async def run(calls: Calls, dashboard_id: str, panel_id: str) -> dict[str, Any]:
    """The whole answer of a panel run (``data``, ``meta``) plus its cache header as ``cache``."""
    resp = await calls.call("post", f"/dashboards/{dashboard_id}/panels/{panel_id}/data")
    assert resp.status_code == 200, resp.text
    return {**resp.json(), "cache": resp.headers.get("X-Svc-Panel-Cache")}


async def preview(calls: Calls, dashboard_id: str, query: dict[str, Any]) -> list[dict[str, Any]]:
    return await calls.ok("post", f"/dashboards/{dashboard_id}/panels/preview", json=query)


def reader_rules(**orders: Any) -> list[dict[str, Any]]:
    """Rules of a member who reads dashboards, orders without ``secret`` (``orders``: more keys
    of the orders rule, such as ``conditions``) and buyers without ``email``."""
    return [{"collection": "svc_dashboards", "action": "read"},
            {"collection": "orders", "action": "read",
             "fields": ["placed", "day", "category", "amount", "buyer"], **orders},
            {"collection": "buyers", "action": "read", "fields": ["name"]}]
