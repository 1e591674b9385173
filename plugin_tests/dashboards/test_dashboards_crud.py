"""Dashboards and panels: create, read, list, change, move, delete; who may (rules on the system
collection ``svc_dashboards``); row conditions bound what a panel counts."""

from __future__ import annotations

from dashboards_helpers import POSITION, dashboard, panel, reader_rules, run, seed_orders

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test but the rate limit's (a setting of its own) writes and reads in a site of its own: they
# share the module's app, each in a new site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

COUNT = {"collection": "orders", "aggregate": "count"}


async def test_crud_and_move(calls):
    await seed_orders(calls)
    made = await calls.ok("post", "/dashboards", status=201, json={"name": "Sales", "icon": "chart", "color": "#ff0"})
    d = made["id"]
    assert made["panels"] == [] and made["note"] is None and made["panelCount"] == 0
    p = await panel(calls, d, COUNT)
    moved = await calls.ok("patch", f"/dashboards/{d}/panels/{p}", json={"position": {"x": 4, "y": 2, "w": 6, "h": 1}})
    assert moved["position"] == {"x": 4, "y": 2, "w": 6, "h": 1} and moved["query"]["collection"] == "orders"
    renamed = await calls.ok("patch", f"/dashboards/{d}/panels/{p}", json={"name": "All", "type": "bar-chart"})
    assert (renamed["name"], renamed["type"], renamed["position"]["x"]) == ("All", "bar-chart", 4)
    changed = await calls.ok("patch", f"/dashboards/{d}", json={"note": "Weekly", "icon": None})
    assert (changed["name"], changed["note"], changed["icon"], changed["panelCount"]) == ("Sales", "Weekly", None, 1)
    listed = await calls.ok("get", "/dashboards", full=True)
    assert [x["id"] for x in listed["data"]] == [d] and listed["meta"]["total"] == 1
    assert listed["data"][0]["panelCount"] == 1
    detail = await calls.ok("get", f"/dashboards/{d}")
    assert [x["id"] for x in detail["panels"]] == [p]
    assert [x["id"] for x in await calls.ok("get", f"/dashboards/{d}/panels")] == [p]
    await calls.ok("delete", f"/dashboards/{d}/panels/{p}", status=204)
    assert await calls.ok("get", f"/dashboards/{d}/panels") == []
    await calls.err("patch", f"/dashboards/{d}/panels/{p}", 404, "RECORD_NOT_FOUND", json={"name": "x"})
    p2 = await panel(calls, d, COUNT)
    await calls.ok("delete", f"/dashboards/{d}", status=204)
    await calls.err("get", f"/dashboards/{d}", 404, "RECORD_NOT_FOUND")
    await calls.err("post", f"/dashboards/{d}/panels/{p2}/data", 404, "RECORD_NOT_FOUND")
    await calls.err("post", f"/dashboards/{d}/panels/preview", 404, "RECORD_NOT_FOUND", json=COUNT)


async def test_a_panel_of_another_dashboard_is_not_found(calls):
    d1, d2 = await dashboard(calls), await dashboard(calls, name="Other")
    p = await panel(calls, d1, None, type_="label")
    for method, suffix in (("patch", ""), ("delete", ""), ("post", "/data")):
        await calls.err(method, f"/dashboards/{d2}/panels/{p}{suffix}", 404, "RECORD_NOT_FOUND",
                        json={"name": "x"} if method == "patch" else None)


async def test_who_may_manage(svc_app, site, calls, make_member):
    await seed_orders(calls)
    d = await dashboard(calls)
    p = await panel(calls, d, COUNT)

    async def member(rules):
        made = await make_member(site, "subscriber")
        if rules:
            await calls.grant(rules, {"userId": made.id})
        svc_app.kernel.access.invalidate(site)
        return Calls(svc_app.client, made.headers)

    anonymous = Calls(svc_app.client, {"X-Svc-Site": site})
    await anonymous.err("get", "/dashboards", 401, "UNAUTHENTICATED")
    nobody = await member(None)
    for method, path in (("get", "/dashboards"), ("post", "/dashboards"), ("get", f"/dashboards/{d}"),
                         ("post", f"/dashboards/{d}/panels/{p}/data"), ("get", f"/dashboards/{d}/panels")):
        await nobody.err(method, path, 403, "PERMISSION_DENIED", json={"name": "x"} if method == "post" else None)
    reader = await member([{"collection": "svc_dashboards", "action": "read"}])
    assert [x["id"] for x in await reader.ok("get", "/dashboards")] == [d]
    await reader.err("post", "/dashboards", 403, "PERMISSION_DENIED", json={"name": "Mine"})
    await reader.err("patch", f"/dashboards/{d}", 403, "PERMISSION_DENIED", json={"name": "Mine"})
    await reader.err("delete", f"/dashboards/{d}", 403, "PERMISSION_DENIED")
    await reader.err("post", f"/dashboards/{d}/panels", 403, "PERMISSION_DENIED",
                     json={"name": "x", "type": "label", "position": POSITION, "query": None})
    await reader.err("patch", f"/dashboards/{d}/panels/{p}", 403, "PERMISSION_DENIED", json={"name": "x"})
    # Reading the dashboard does not read the collection: the panel's data is the items' permission,
    # and its query (field names, filter values) shows only to who may read what it names.
    await reader.err("post", f"/dashboards/{d}/panels/{p}/data", 403, "PERMISSION_DENIED")
    assert [x["query"] for x in await reader.ok("get", f"/dashboards/{d}/panels")] == [None]
    assert [x["query"] for x in (await reader.ok("get", f"/dashboards/{d}"))["panels"]] == [None]
    orders_reader = await member([{"collection": "svc_dashboards", "action": "read"},
                                  {"collection": "orders", "action": "read"}])
    assert [x["query"] for x in await orders_reader.ok("get", f"/dashboards/{d}/panels")] == [
        (await calls.ok("get", f"/dashboards/{d}/panels"))[0]["query"]]
    creator = await member([{"collection": "svc_dashboards", "action": "create"}])
    await creator.ok("post", "/dashboards", status=201, json={"name": "Mine"})
    await creator.err("get", "/dashboards", 403, "PERMISSION_DENIED")
    editor = await member([{"collection": "svc_dashboards", "action": "update"},
                           {"collection": "orders", "action": "read", "fields": ["amount"]}])
    await editor.ok("patch", f"/dashboards/{d}/panels/{p}", json={"position": {"x": 1, "y": 1, "w": 1, "h": 1}})
    await editor.err("patch", f"/dashboards/{d}/panels/{p}", 400, "INVALID_FIELD", path_is=["query", "groupBy", "0"],
                     json={"query": {**COUNT, "groupBy": ["category"]}})
    await editor.err("delete", f"/dashboards/{d}", 403, "PERMISSION_DENIED")
    conditional = await member([{"collection": "svc_dashboards", "action": "read",
                                 "conditions": {"name": {"_eq": "Sales"}}}])
    await conditional.err("get", "/dashboards", 403, "PERMISSION_DENIED")
    everything = await member([{"collection": "*", "action": "delete"}])
    await everything.ok("delete", f"/dashboards/{d}", status=204)


async def test_row_conditions_bound_the_data(svc_app, site, calls, make_member):
    await seed_orders(calls)
    d = await dashboard(calls)
    p = await panel(calls, d, {"collection": "orders", "aggregate": "sum", "field": "amount"})
    made = await make_member(site, "subscriber")
    await calls.grant(reader_rules(conditions={"category": {"_eq": "a"}}), {"userId": made.id})
    svc_app.kernel.access.invalidate(site)
    member = Calls(svc_app.client, made.headers)
    assert (await run(calls, d, p))["data"] == [{"value": 143}]
    assert (await run(member, d, p))["data"] == [{"value": 22}]
    by_buyer = await member.ok("post", f"/dashboards/{d}/panels/preview", json={
        "collection": "orders", "aggregate": "count", "groupBy": ["buyer"]})
    assert by_buyer == [{"group": {"buyer": "u1"}, "value": 2}, {"group": {"buyer": "u2"}, "value": 1}]


async def test_runs_count_as_item_reads(make_app):
    app = await make_app(env={"SVC_RATE_LIMIT_ITEMS_READ": "3"})
    headers = {"Authorization": f"Bearer {await app.login()}"}
    calls = Calls(app.client, {**headers, "X-Svc-Site": await app.create_site(headers)})
    await seed_orders(calls)
    d = await dashboard(calls)
    p = await panel(calls, d, COUNT)
    await calls.ok("post", f"/dashboards/{d}/panels/{p}/data")
    await calls.ok("post", f"/dashboards/{d}/panels/preview", json=COUNT)
    await calls.ok("get", "/items/orders")
    await calls.err("post", f"/dashboards/{d}/panels/{p}/data", 429, "RATE_LIMITED")
    await calls.ok("get", f"/dashboards/{d}")
