"""The realtime channel through a real server: tickets, subscribe, signal-only events, filters."""

from __future__ import annotations

import pytest

from kernel.testing import shared as testing_shared
from plugin_tests.realtime.helpers import closed, connect, frame, no_frame, subscribe, ticket

# Every test writes and reads in a site of its own: they share the module's app and its one
# server, each in a new site (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b
server = testing_shared.shared_live_server


async def test_an_item_write_reaches_a_subscriber_as_a_signal(server, calls):
    await calls.collection("posts", {"title": "string"})
    async with connect(server, await ticket(calls)) as ws:
        assert await subscribe(ws, "posts") == {"type": "subscribed", "collection": "posts"}
        item = await calls.create("posts", {"title": "secret words"})
        got = await frame(ws)
        assert got == {"type": "event", "collection": "posts", "action": "create", "itemId": item["id"],
                       "payload": None}
        await calls.ok("patch", f"/items/posts/{item['id']}", json={"title": "x"})
        assert (await frame(ws))["action"] == "update"
        await calls.ok("delete", f"/items/posts/{item['id']}", status=204)
        assert (await frame(ws))["action"] == "delete"
        await no_frame(ws)


async def test_one_write_gives_one_frame_however_many_subscriptions_match(server, calls):
    await calls.collection("posts", {"title": "string"})
    async with connect(server, await ticket(calls)) as ws:
        await subscribe(ws, "posts")
        await subscribe(ws, "posts", {"action": {"_eq": "create"}})
        await subscribe(ws, "posts", {"collection": {"_in": ["posts"]}})
        item = await calls.create("posts", {"title": "a"})
        assert (await frame(ws))["itemId"] == item["id"]
        await no_frame(ws)


@pytest.mark.parametrize(("filter_", "hits"), [
    ({"action": {"_eq": "update"}}, ["update"]),
    ({"action": {"_in": ["create", "delete"]}}, ["create", "delete"]),
    ({"_or": [{"action": {"_eq": "delete"}}, {"action": {"_starts_with": "cr"}}]}, ["create", "delete"]),
    ({"_and": [{"collection": {"_eq": "posts"}}, {"action": {"_neq": "create"}}]}, ["update", "delete"]),
    ({"itemId": {"_eq": "fixed-1"}}, ["create", "update", "delete"]),
    ({"itemId": {"_eq": "other"}}, []),
])
async def test_filters_use_the_list_filter_operators(server, calls, filter_, hits):
    await calls.collection("posts", {"title": "string"})
    async with connect(server, await ticket(calls)) as ws:
        await subscribe(ws, "posts", filter_)
        await calls.create("posts", {"id": "fixed-1", "title": "a"})
        await calls.ok("patch", "/items/posts/fixed-1", json={"title": "b"})
        await calls.ok("delete", "/items/posts/fixed-1", status=204)
        seen = []
        for _ in hits:
            got = await frame(ws)
            assert got["itemId"] == "fixed-1"
            seen.append(got["action"])
        assert seen == hits
        await no_frame(ws)


async def test_other_collections_and_unsubscribe(server, calls):
    await calls.collection("posts", {"title": "string"})
    await calls.collection("pages", {"title": "string"})
    async with connect(server, await ticket(calls)) as ws:
        await subscribe(ws, "posts")
        await calls.create("pages", {"title": "not watched"})
        await no_frame(ws)
        await ws.send_json({"type": "unsubscribe", "collection": "posts"})
        assert await frame(ws) == {"type": "unsubscribed", "collection": "posts"}
        await calls.create("posts", {"title": "after"})
        await no_frame(ws)
        await ws.send_json({"type": "ping"})
        assert await frame(ws) == {"type": "pong"}


async def test_a_ticket_is_single_use_and_site_bound(server, calls, site_b):
    one = await ticket(calls)
    async with connect(server, one, headers={"X-Svc-Site": site_b}) as ws:
        await ws.send_json({"type": "ping"})
        assert await frame(ws) == {"type": "pong"}
    close = await closed(connect(server, one))
    assert (close.code, close.reason.split(":")[0]) == (4401, "UNAUTHENTICATED")
    # A forged secret, a foreign site in the ticket, garbage, and no ticket at all.
    site, secret = one.split(".")[1:]
    for bad in (f"rt1.{site}.{'A' * 43}", f"rt1.{site_b}.{secret}", "rt1.x", "rt1." + "x" * 300):
        close = await closed(connect(server, bad))
        assert close.code == 4401, bad
    close = await closed(server.ws("/api/v1/realtime", headers={"X-Svc-Site": site}))
    assert close.code == 4401 and "ticket" in close.reason


async def test_the_ticket_is_never_logged(server, calls, caplog):
    caplog.set_level("DEBUG")
    one = await ticket(calls)
    async with connect(server, one) as ws:
        await ws.send_text("not json")
        assert (await frame(ws))["code"] == "VALIDATION_FAILED"
    await closed(connect(server, one))  # refused: reused
    secret = one.split(".")[2]
    # The test's own client (httpx, httpcore) logs its URL; the server must not.
    server_side = [r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    assert server_side and not [m for m in server_side if secret in m]


async def test_events_carry_no_values_and_need_the_collection_in_the_ticket(server, calls, make_member, site):
    await calls.collection("posts", {"title": "string"})
    await calls.collection("secrets", {"title": "string"})
    role = await calls.ok("post", "/roles", status=201, json={"name": "reader"})
    policy = await calls.ok("post", "/policies", status=201, json={"name": "read posts"})
    await calls.ok("post", f"/policies/{policy['id']}/permissions", status=201,
                   json={"collection": "posts", "action": "read", "fields": ["*"]})
    await calls.ok("post", f"/policies/{policy['id']}/attach", json={"roleId": role["id"]}, status=201)
    member = await make_member(site, role["id"])
    from kernel.testing import Calls
    mine = Calls(calls.client, member.headers)
    async with connect(server, await ticket(mine)) as ws:
        got = await subscribe(ws, "secrets")
        assert got["type"] == "error" and got["code"] == "SUBSCRIBE_FORBIDDEN"
        assert (await subscribe(ws, "posts"))["type"] == "subscribed"
        await calls.create("secrets", {"title": "hidden"})
        item = await calls.create("posts", {"title": "visible"})
        got = await frame(ws)
        assert got["itemId"] == item["id"] and "visible" not in str(got)
