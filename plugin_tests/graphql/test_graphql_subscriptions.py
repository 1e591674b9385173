"""``<collection>_events`` over Server-Sent Events, through a real server: events from the live
topics (``item`` null), read permission, GET and POST transports, heartbeats, disconnects and
the per-site cap."""

from __future__ import annotations

import json
import uuid

import pytest_asyncio
from httpx_sse import aconnect_sse

from kernel.testing import Calls, new_member
from kernel.testing import shared as testing_shared
from plugin_tests.graphql.conftest import shared_live_blog, wait_until

SUB = "subscription { posts_events { action itemId item } }"
STREAM = {"Accept": "text/event-stream"}

# Every test streams from two sites of its own: they share the module's app (a heartbeat a second,
# two streams a site) and its server, each with two new sites of it (kernel/testing/shared.py).
shared_site = testing_shared.shared_site_started_with(
    env={"SVC_SSE_HEARTBEAT_SECONDS": "1", "SVC_GQL_MAX_SUBSCRIPTIONS": "2"})
shared_live_server = testing_shared.shared_live_server


@pytest_asyncio.fixture(loop_scope="module")
async def live(shared_site, shared_live_server):
    return await shared_live_blog(shared_site, shared_live_server)


async def next_events(events, n: int) -> list[dict]:
    got = []
    async for sse in events.aiter_sse():
        got.append((sse.event, json.loads(sse.data) if sse.data else None))
        if len(got) == n:
            return got
    return got


async def test_item_events_stream_in_their_site(live):
    app, server, admin, site, site_b, calls = live
    topics = app.kernel.topics
    async with server.sse("/api/v1/graphql", headers={**admin, "X-Svc-Site": site}, params={"query": SUB}) as events:
        assert events.response.status_code == 200
        assert events.response.headers["content-type"].startswith("text/event-stream")
        await wait_until(lambda: topics.subscriber_count == 1)
        b_calls = Calls(app.client, {**admin, "X-Svc-Site": site_b})
        await b_calls.ok("patch", "/items/posts/p1", json={"title": "B"})  # another site: not streamed
        await calls.create("posts", {"id": "p9", "title": "new"})
        await calls.ok("patch", "/items/posts/p9", json={"title": "newer"})
        await calls.ok("delete", "/items/posts/p9", status=204)
        await calls.create("notes", {"body": "other collection"})  # not posts: not streamed
        got = await next_events(events, 3)
    assert got == [("next", {"data": {"posts_events": {"action": a, "itemId": "p9", "item": None}}})
                   for a in ("create", "update", "delete")]


async def test_post_transport_and_errors(live):
    app, server, admin, site, _b, calls = live
    headers = {**admin, "X-Svc-Site": site}
    async with aconnect_sse(server.client, "POST", "/api/v1/graphql", headers=headers,
                            json={"query": "subscription S { posts_events { action } }", "operationName": "S"}) as events:
        await wait_until(lambda: app.kernel.topics.subscriber_count == 1)
        await calls.create("posts", {"title": "via post"})
        assert await next_events(events, 1) == [("next", {"data": {"posts_events": {"action": "create"}}})]
    # No read permission on posts: one error frame, then complete.
    roles = await calls.ok("get", "/roles")
    subscriber = next(r for r in roles if r.get("systemKey") == "subscriber")
    email = f"reader-{uuid.uuid4().hex[:8]}@example.com"  # users are instance-wide: an address of its own
    user = await calls.ok("post", "/users", status=201, json={
        "email": email, "password": "member-password-1", "roleId": subscriber["id"]})
    await calls.grant([{"collection": "notes", "action": "read"}], {"userId": user["id"]})
    token = await app.login(email, "member-password-1", site=site)
    member_headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": site}
    async with server.sse("/api/v1/graphql", headers=member_headers, params={"query": SUB}) as events:
        got = await next_events(events, 2)
    assert got[0][1]["data"] is None and got[0][1]["errors"][0]["extensions"]["code"] == "PERMISSION_DENIED"
    assert got[1] == ("complete", None)
    # Not a subscription, or not valid: an error frame too.
    for query in ("{ posts { id } }", "subscription { nope_events { action } }"):
        async with server.sse("/api/v1/graphql", headers=headers, params={"query": query}) as events:
            got = await next_events(events, 2)
        assert got[0][1]["errors"][0]["extensions"]["code"] == "VALIDATION" and got[1][0] == "complete"


async def test_heartbeats_disconnects_and_the_cap(live):
    app, server, admin, site, site_b, _calls = live
    headers = {**admin, "X-Svc-Site": site}
    async with server.sse("/api/v1/graphql", headers=headers, params={"query": SUB}) as one:
        async with server.sse("/api/v1/graphql", headers=headers, params={"query": SUB}):
            streams = app.kernel.state["graphql.streams"]
            assert streams.count_local(site) == 2
            resp = await server.client.get("/api/v1/graphql", headers={**headers, **STREAM}, params={"query": SUB})
            assert resp.status_code == 429 and resp.json()["errors"][0]["code"] == "RATE_LIMITED"
            # The cap is per site: site B still streams.
            async with server.sse("/api/v1/graphql", headers={**admin, "X-Svc-Site": site_b},
                                  params={"query": SUB}) as other:
                assert other.response.status_code == 200
        # One heartbeat comment on the idle stream.
        async for line in one.response.aiter_lines():
            if line.startswith(":"):
                break
    # Both clients went away: the next heartbeat notices, the streams are released.
    await wait_until(lambda: streams.count_local(site) == 0 and app.kernel.topics.subscriber_count == 0,
                     attempts=500)


async def test_a_reader_with_row_conditions_hears_only_of_items_it_may_read(live):
    """As on the realtime channel (items_api.LiveReach): a hidden item's writes are never streamed;
    the visible one written after them is the first event."""
    app, server, _admin, site, _b, calls = live
    member = await new_member(app, site, "subscriber")
    await calls.grant([{"collection": "posts", "action": "read", "fields": ["id", "title"],
                        "conditions": {"title": {"_starts_with": "Public"}}}], {"userId": member.id})
    async with server.sse("/api/v1/graphql", headers={**member.headers, "X-Svc-Site": site},
                          params={"query": SUB}) as events:
        await wait_until(lambda: app.kernel.topics.subscriber_count == 1)
        await calls.create("posts", {"id": "h1", "title": "Draft plan"})
        await calls.ok("patch", "/items/posts/h1", json={"title": "Draft plan 2"})
        await calls.ok("delete", "/items/posts/h1", status=204)
        await calls.create("posts", {"id": "v1", "title": "Public note"})
        got = await next_events(events, 1)
    assert got == [("next", {"data": {"posts_events": {"action": "create", "itemId": "v1", "item": None}}})]
