"""Tickets: who may have one, what it embeds, and the principal checked again at connect."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import update

from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugin_tests.realtime.helpers import closed, connect, frame, subscribe, ticket
from plugins.realtime.tables import tickets as tickets_table

# Every test writes and reads in a site of its own: they share the module's app and its one
# server, each in a new site (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b
server = testing_shared.shared_live_server


async def works(server, one: str) -> bool:
    async with connect(server, one) as ws:
        await ws.send_json({"type": "ping"})
        return (await frame(ws)) == {"type": "pong"}


async def test_a_suspended_user_is_refused_at_connect(server, calls, make_member, site):
    member = await make_member(site, "admin")
    one = await ticket(Calls(calls.client, member.headers))
    await calls.ok("patch", f"/users/{member.id}", json={"status": "suspended"})
    close = await closed(connect(server, one))
    assert (close.code, close.reason.split(":")[0]) == (4401, "UNAUTHENTICATED")


async def test_a_revoked_session_is_refused_at_connect(server, calls, make_member, site):
    member = await make_member(site, "admin")
    mine = Calls(calls.client, member.headers)
    one, two = await ticket(mine), await ticket(mine)
    assert await works(server, one)
    await mine.ok("delete", "/me/sessions", status=204)
    close = await closed(connect(server, two))
    assert close.code == 4401


async def test_a_deleted_api_key_is_refused_at_connect(server, calls):
    key = await calls.ok("post", "/api-keys", status=201, json={"name": "rt"})
    as_key = Calls(calls.client, {"Authorization": f"Bearer {key['key']}", "X-Svc-Site": calls.headers["X-Svc-Site"]})
    one, two = await ticket(as_key), await ticket(as_key)
    assert await works(server, one)
    await calls.ok("delete", f"/api-keys/{key['id']}", status=204)
    close = await closed(connect(server, two))
    assert close.code == 4401


async def test_an_expired_ticket_is_refused(server, calls, svc_app, site):
    one = await ticket(calls)
    async with svc_app.kernel.db.begin() as conn:  # the test's site holds this one ticket
        await conn.execute(update(tickets_table).where(tickets_table.c.site_id == site)
                           .values(expires_at=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)))
    close = await closed(connect(server, one))
    assert close.code == 4401 and "expired" in close.reason


async def test_tickets_are_stored_hashed(calls, svc_app, site):
    one = await ticket(calls)
    async with svc_app.kernel.db.connect() as conn:
        rows = (await conn.execute(tickets_table.select().where(tickets_table.c.site_id == site))).mappings().all()
    secret = one.split(".")[2]
    assert len(rows) == 1 and secret not in str(dict(rows[0]))  # the site's one ticket


async def test_subscribers_take_audience_tickets_only(server, calls, make_member, site):
    await calls.collection("posts", {"title": "string"})
    await calls.ok("post", "/users/subscriber-access", status=201, json={"collection": "posts"})
    member = await make_member(site, "subscriber")
    mine = Calls(calls.client, member.headers)
    await mine.err("post", "/realtime/ticket", 403, "PERMISSION_DENIED")
    async with connect(server, await ticket(mine, "audience-ticket")) as ws:
        assert (await subscribe(ws, "posts"))["type"] == "subscribed"
        item = await calls.create("posts", {"title": "news"})
        assert (await frame(ws))["itemId"] == item["id"]


async def test_ticket_routes_need_a_principal_and_take_no_body(calls, anon_calls):
    for kind in ("ticket", "audience-ticket"):
        await anon_calls.err("post", f"/realtime/{kind}", 401, "UNAUTHENTICATED")
        await calls.err("post", f"/realtime/{kind}", 400, "VALIDATION_FAILED", json={"x": 1})
        await calls.err("post", f"/realtime/{kind}", 400, "VALIDATION_FAILED", content=b"[1",
                        headers={"Content-Type": "application/json"})
        await calls.err("post", f"/realtime/{kind}", 400, "VALIDATION_FAILED", json=[1])
        resp = await calls.call("post", f"/realtime/{kind}")
        assert resp.status_code == 200 and resp.headers["cache-control"] == "no-store"


async def test_the_ticket_decides_the_site(server, calls, calls_b, site_b):
    """Cross-tenant: a site A ticket with X-Svc-Site of B is a site A socket; B's writes never reach it."""
    await calls.collection("posts", {"title": "string"})
    await calls_b.collection("posts", {"title": "string"})
    async with connect(server, await ticket(calls), headers={"X-Svc-Site": site_b}) as ws:
        await subscribe(ws, "posts")
        await calls_b.create("posts", {"title": "b"})
        mine = await calls.create("posts", {"title": "a"})
        assert (await frame(ws))["itemId"] == mine["id"]


async def test_a_member_of_site_a_cannot_reach_site_b(server, calls, calls_b, make_member, site):
    """Cross-tenant: the ticket's collections are site A's; B's collections are refused, B's
    writes and notifications never arrive, and A's ticket cannot be redeemed as B's."""
    await calls.collection("posts", {"title": "string"})
    await calls_b.collection("news", {"title": "string"})
    role = await calls.ok("post", "/roles", status=201, json={"name": "reader"})
    policy = await calls.ok("post", "/policies", status=201, json={"name": "read posts"})
    await calls.ok("post", f"/policies/{policy['id']}/permissions", status=201,
                   json={"collection": "posts", "action": "read", "fields": ["*"]})
    await calls.ok("post", f"/policies/{policy['id']}/attach", json={"roleId": role["id"]}, status=201)
    member = await make_member(site, role["id"])
    mine = Calls(calls.client, member.headers)
    await mine.err("post", "/realtime/ticket", 401, "UNAUTHENTICATED",
                   headers={"X-Svc-Site": calls_b.headers["X-Svc-Site"]})  # its token is site A's
    async with connect(server, await ticket(mine)) as ws:
        got = await subscribe(ws, "news")
        assert (got["type"], got["code"]) == ("error", "SUBSCRIBE_FORBIDDEN")
        await subscribe(ws, "posts")
        await calls_b.create("news", {"title": "b"})
        await calls_b.ok("post", "/push/test", status=202)
        item = await calls.create("posts", {"title": "a"})
        assert (await frame(ws))["itemId"] == item["id"]
