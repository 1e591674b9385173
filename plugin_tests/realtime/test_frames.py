"""Bad frames get error frames (the socket stays open); bounds close it; the Origin rule."""

from __future__ import annotations

import asyncio
import json

from kernel.testing import shared as testing_shared
from plugin_tests.realtime.helpers import closed, connect, frame, subscribe, ticket
from plugins.realtime import frames

# The frame tests on the default settings write and read in sites of their own: they share the
# module's app and its one server, each in a new site of it (kernel/testing/shared.py). The tests
# of a setting start an app of their own.
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b
server = testing_shared.shared_live_server


BAD_FRAMES = [
    ("not json", None),
    ("[1, 2]", ["frame"]),
    ('"subscribe"', ["frame"]),
    ("{}", ["type"]),
    ('{"type": "shout"}', ["type"]),
    ('{"type": "subscribe"}', ["collection"]),
    ('{"type": "subscribe", "collection": 7}', ["collection"]),
    ('{"type": "subscribe", "collection": "bad name!"}', ["collection"]),
    ('{"type": "subscribe", "collection": "posts", "extra": 1}', ["extra"]),
    ('{"type": "subscribe", "collection": "posts", "filter": []}', ["filter"]),
    ('{"type": "subscribe", "collection": "posts", "filter": {"title": {"_eq": "x"}}}', ["filter", "title"]),
    ('{"type": "subscribe", "collection": "posts", "filter": {"action": {"_nope": 1}}}',
     ["filter", "action", "_nope"]),
    ('{"type": "subscribe", "collection": "posts", "filter": {"action": "create"}}', ["filter", "action"]),
    ('{"type": "subscribe", "collection": "posts", "filter": {"action": {"_has_key": "a"}}}',
     ["filter", "action", "_has_key"]),
    ('{"type": "subscribe", "collection": "posts", "filter": {"_or": []}}', ["filter", "_or"]),
    ('{"type": "subscribe", "collection": "posts", "filter": {"action": {"_in": "create"}}}',
     ["filter", "action", "_in"]),
    ('{"type": "unsubscribe", "collection": "posts", "filter": {}}', ["filter"]),
    # -- audit: a NUL (\u0000) anywhere in a frame is the envelope's VALIDATION_FAILED, never a crash
    ('{"type": "subscribe", "collection": "po\\u0000sts"}', ["collection"]),
    ('{"type": "sub\\u0000scribe", "collection": "posts"}', ["type"]),
    ('{"type": "subscribe", "collection": "posts", "filter": {"itemId": {"_eq": "a\\u0000"}}}', None),
    ('{"type": "subscribe", "collection": "posts", "fil\\u0000ter": {}}', None),
    ('{"type": "ping", "x": "\\u0000"}', None),
    ("[" * 5000 + "]" * 5000, None),  # deeper than the parser goes: an error frame, not a dead socket
]


async def test_malformed_frames_get_error_frames(server, calls):
    await calls.collection("posts", {"title": "string"})
    async with connect(server, await ticket(calls)) as ws:
        for text, path in BAD_FRAMES:
            await ws.send_text(text)
            got = await frame(ws)
            assert got["type"] == "error" and got["code"] == "VALIDATION_FAILED", (text, got)
            if path is not None:
                assert got["path"] == path, (text, got)
        await ws.send_bytes(b'{"type": "ping"}')
        assert (await frame(ws))["code"] == "VALIDATION_FAILED"
        # Still open and working after all of that.
        assert (await subscribe(ws, "posts"))["type"] == "subscribed"


async def test_a_huge_frame_closes_with_4413(server, calls):
    big = json.dumps({"type": "subscribe", "collection": "posts", "filter": {"itemId": {"_eq": "x" * 20000}}})
    close = await closed(connect(server, await ticket(calls)), big)
    assert (close.code, close.reason.split(":")[0]) == (4413, "PAYLOAD_TOO_LARGE")


async def test_subscriptions_per_connection_are_bounded(make_app, live_server):
    app = await make_app(env={"SVC_REALTIME_MAX_SUBSCRIPTIONS": "3"})
    server = await live_server(app)
    headers = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(headers)
    from kernel.testing import Calls
    calls = Calls(app.client, {**headers, "X-Svc-Site": site})
    async with connect(server, await ticket(calls)) as ws:
        for _ in range(3):
            assert (await subscribe(ws, "posts"))["type"] == "subscribed"
        got = await subscribe(ws, "pages")
        assert got["type"] == "error" and got["code"] == "TOO_MANY_SUBSCRIPTIONS"
        await ws.send_json({"type": "unsubscribe", "collection": "posts"})
        await frame(ws)
        assert (await subscribe(ws, "pages"))["type"] == "subscribed"


async def test_idle_connections_get_pings(make_app, live_server):
    app = await make_app(env={"SVC_REALTIME_PING_SECONDS": "0.1"})
    server = await live_server(app)
    headers = {"Authorization": f"Bearer {await app.login()}"}
    from kernel.testing import Calls
    calls = Calls(app.client, {**headers, "X-Svc-Site": await app.create_site(headers)})
    async with connect(server, await ticket(calls)) as ws:
        got = await asyncio.wait_for(ws.receive_json(), 10)
        assert got == {"type": "ping"}


async def test_the_origin_rule_at_the_handshake(make_app, live_server):
    app = await make_app(env={"SVC_CORS_ORIGINS": "https://studio.example.org"})
    server = await live_server(app)
    headers = {"Authorization": f"Bearer {await app.login()}"}
    from kernel.testing import Calls
    calls = Calls(app.client, {**headers, "X-Svc-Site": await app.create_site(headers)})
    close = await closed(connect(server, await ticket(calls), headers={"Origin": "https://evil.example.net"}))
    assert (close.code, close.reason.split(":")[0]) == (4403, "PERMISSION_DENIED")
    async with connect(server, await ticket(calls), headers={"Origin": "https://studio.example.org"}) as ws:
        await ws.send_json({"type": "ping"})
        assert await frame(ws) == {"type": "pong"}
    async with connect(server, await ticket(calls)) as ws:  # no Origin: a server-side client
        await ws.send_json({"type": "ping"})
        assert await frame(ws) == {"type": "pong"}


def test_filter_compilation_matches_like_list_filters():
    match = frames.EventFilter().compile({"_or": [{"itemId": {"_ends_with": "-9"}},
                                                  {"action": {"_nin": ["create", "update"]}}]})
    assert match({"collection": "p", "action": "create", "itemId": "a-9"})
    assert match({"collection": "p", "action": "delete", "itemId": "a-1"})
    assert not match({"collection": "p", "action": "update", "itemId": "a-1"})
    between = frames.EventFilter().compile({"itemId": {"_between": ["b", "d"]}, "collection": {"_icontains": "OS"}})
    assert between({"collection": "posts", "action": "create", "itemId": "c"})
    assert not between({"collection": "posts", "action": "create", "itemId": "e"})
    assert not frames.EventFilter().compile({"itemId": {"_gt": 5}})({"itemId": "9"})
    assert frames.EventFilter().compile({"itemId": {"_nnull": True}})({"itemId": "9"})
