"""-- more43: dashboard writes record their change events and send a live signal (docs/dashboards.md,
Events): the durable events in the change feed, the event frame on a socket subscribed to
``svc_dashboards``; another site's socket and a member who may not read dashboards get nothing."""

from __future__ import annotations

from dashboards_helpers import POSITION, dashboard, panel

from kernel.testing import Calls
from plugin_tests.realtime.helpers import connect, frame, no_frame, ticket

COUNT = {"collection": "orders", "aggregate": "count"}


async def _subscribed(ws, collection: str = "svc_dashboards") -> None:
    await ws.send_json({"type": "subscribe", "collection": collection})
    assert await frame(ws) == {"type": "subscribed", "collection": collection}


async def test_each_write_is_an_event_and_a_live_signal(live_server, svc_app, calls, calls_b, site, make_member):
    server = await live_server(svc_app)
    await calls.collection("orders", {"amount": "integer"})
    board = await dashboard(calls)
    editor_role = await calls.ok("post", "/roles", status=201, json={"name": "Editor"})
    outsider = await make_member(site, editor_role["id"])
    await calls.grant([{"collection": "orders", "action": "read"}], {"userId": outsider.id})
    svc_app.kernel.access.invalidate(site)
    as_outsider = Calls(calls.client, outsider.headers)
    async with connect(server, await ticket(calls)) as mine, connect(server, await ticket(calls_b)) as theirs, \
            connect(server, await ticket(as_outsider)) as outside:
        await _subscribed(mine)
        await _subscribed(theirs)
        await outside.send_json({"type": "subscribe", "collection": "svc_dashboards"})
        refused = await frame(outside)
        assert refused["type"] == "error" and refused["code"] == "SUBSCRIBE_FORBIDDEN", refused

        def signal(action: str) -> dict:
            return {"type": "event", "collection": "svc_dashboards", "action": action, "itemId": board, "payload": None}

        made = await panel(calls, board, COUNT)
        assert await frame(mine) == signal("update")
        await calls.ok("patch", f"/dashboards/{board}/panels/{made}", json={"position": {**POSITION, "x": 2}})
        assert await frame(mine) == signal("update")
        await calls.ok("patch", f"/dashboards/{board}", json={"note": "Weekly"})
        assert await frame(mine) == signal("update")
        await calls.ok("delete", f"/dashboards/{board}/panels/{made}", status=204)
        assert await frame(mine) == signal("update")
        await calls.ok("delete", f"/dashboards/{board}", status=204)
        assert await frame(mine) == signal("delete")
        await no_frame(theirs)
        await no_frame(outside)

    feed = await calls.ok("get", "/cdc/events", params={"limit": 200})
    mine_events = [(e["type"], e.get("fields")) for e in feed if e.get("itemId") == board]
    assert mine_events == [("dashboards.create", ["name"]), ("dashboards.update", ["panels"]),
                           ("dashboards.update", ["panels"]), ("dashboards.update", ["note"]),
                           ("dashboards.update", ["panels"]), ("dashboards.delete", None)], mine_events
    assert [e for e in await calls_b.ok("get", "/cdc/events", params={"limit": 200})
            if e.get("itemId") == board] == []
