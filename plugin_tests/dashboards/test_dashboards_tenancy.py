"""Site B never sees, touches or counts site A's dashboards, panels and items."""

from __future__ import annotations

from dashboards_helpers import POSITION, dashboard, panel, run, seed_orders

COUNT = {"collection": "orders", "aggregate": "count"}


async def test_dashboards_and_panels_stay_in_their_site(calls, calls_b):
    await seed_orders(calls)
    await seed_orders(calls_b, [("2026-05-05T00:00:00Z", "2026-05-05", "b", 1000, "x")] * 4)
    d = await dashboard(calls)
    p = await panel(calls, d, COUNT)
    assert await calls_b.ok("get", "/dashboards") == []
    for method, path in (("get", f"/dashboards/{d}"), ("patch", f"/dashboards/{d}"), ("delete", f"/dashboards/{d}"),
                         ("get", f"/dashboards/{d}/panels"), ("post", f"/dashboards/{d}/panels"),
                         ("patch", f"/dashboards/{d}/panels/{p}"), ("delete", f"/dashboards/{d}/panels/{p}"),
                         ("post", f"/dashboards/{d}/panels/{p}/data"), ("post", f"/dashboards/{d}/panels/preview")):
        body = None
        if method == "patch":
            body = {"name": "Taken"}
        elif path.endswith("/panels"):
            body = {"name": "x", "type": "metric", "position": POSITION, "query": COUNT}
        elif path.endswith("/preview"):
            body = COUNT
        await calls_b.err(method, path, 404, "RECORD_NOT_FOUND", json=body)
    # B's own dashboard cannot adopt A's panel either.
    d_b = await dashboard(calls_b)
    await calls_b.err("post", f"/dashboards/{d_b}/panels/{p}/data", 404, "RECORD_NOT_FOUND")
    await calls_b.err("patch", f"/dashboards/{d_b}/panels/{p}", 404, "RECORD_NOT_FOUND", json={"name": "x"})
    # Each site's panel counts its own items only, also when both ask at once (cache keys by site).
    p_b = await panel(calls_b, d_b, COUNT)
    assert (await run(calls, d, p))["data"] == [{"value": 6}]
    assert (await run(calls_b, d_b, p_b))["data"] == [{"value": 4}]
    assert (await run(calls, d, p))["data"] == [{"value": 6}]
    assert (await calls.ok("get", f"/dashboards/{d}"))["name"] == "Sales"
    assert [x["id"] for x in await calls.ok("get", f"/dashboards/{d}/panels")] == [p]
