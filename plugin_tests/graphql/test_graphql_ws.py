"""``<collection>_events`` over WebSocket with ``graphql-transport-ws``, through a real server and
a real client of that protocol (``gql``'s websockets transport), and the protocol's edges with a
plain WebSocket client (httpx-ws): credentials in ``connection_init``, per-site streams, errors,
ping and pong, the close codes."""

from __future__ import annotations

import asyncio
import json

import pytest
import pytest_asyncio
from gql import Client, gql
from gql.transport.exceptions import TransportQueryError
from gql.transport.websockets import WebsocketsTransport
from httpx_ws import WebSocketDisconnect

from kernel.testing import Calls, new_member
from kernel.testing import shared as testing_shared
from plugin_tests.graphql.conftest import live_blog, shared_live_blog, wait_until

SUB = "subscription { posts_events { action itemId item } }"
PROTOCOL = "graphql-transport-ws"
ENV = {"SVC_GQL_MAX_SUBSCRIPTIONS": "3"}

# The tests on ``live`` stream from two sites of their own: they share the module's app and its
# server, each with two new sites of it (kernel/testing/shared.py). The close-code test changes
# the app's connection_init wait, and the origin test needs CORS origins: each starts its own.
shared_site = testing_shared.shared_site_started_with(env=ENV)
shared_live_server = testing_shared.shared_live_server


@pytest_asyncio.fixture(loop_scope="module")
async def live(shared_site, shared_live_server):
    # connection_init is awaited 10 s (the default): a loaded machine may take more than a short
    # wait to send it.
    return await shared_live_blog(shared_site, shared_live_server)


@pytest.fixture
async def own_live(make_app, live_server):
    # the 4408 check shortens the connection_init wait for its one socket
    return await live_blog(make_app, live_server, ENV)


def transport(server, init_payload: dict, **kwargs) -> WebsocketsTransport:
    url = server.base_url.replace("http://", "ws://") + "/api/v1/graphql"
    return WebsocketsTransport(url=url, init_payload=init_payload, subprotocols=[PROTOCOL], **kwargs)


async def test_gql_client_streams_events_of_its_site(live):
    app, server, admin, site, site_b, calls = live
    payload = {"Authorization": admin["Authorization"], "X-Svc-Site": site}
    async with Client(transport=transport(server, payload)) as session:
        events = session.subscribe(gql(SUB))
        first = asyncio.ensure_future(events.__anext__())
        await wait_until(lambda: app.kernel.topics.subscriber_count == 1)
        b_calls = Calls(app.client, {**admin, "X-Svc-Site": site_b})
        await b_calls.create("posts", {"id": "b1", "title": "other site"})  # another site: not streamed
        await calls.create("posts", {"id": "p9", "title": "new"})
        await calls.ok("patch", "/items/posts/p9", json={"title": "newer"})
        got = [await first, await events.__anext__()]
        await events.aclose()
    assert got == [
        {"posts_events": {"action": a, "itemId": "p9", "item": None}} for a in ("create", "update")
    ]
    await wait_until(lambda: app.kernel.topics.subscriber_count == 0)


async def test_credentials_under_headers_and_ping_pong(live):
    app, server, admin, site, _b, calls = live
    payload = {"headers": {"authorization": admin["Authorization"], "x-svc-site": site}}
    trans = transport(server, payload)
    async with Client(transport=trans) as session:
        await trans.send_ping({"n": 1})
        await trans.pong_received.wait()
        assert trans.payloads["pong"] == {"n": 1}
        events = session.subscribe(gql("subscription { notes_events { action } }"))
        first = asyncio.ensure_future(events.__anext__())
        await wait_until(lambda: app.kernel.topics.subscriber_count == 1)
        await calls.create("notes", {"body": "hi"})
        assert await first == {"notes_events": {"action": "create"}}
        await events.aclose()


async def test_errors_travel_as_error_messages(live):
    app, server, admin, site, _b, calls = live
    member = await new_member(app, site, "subscriber")
    await calls.grant([{"collection": "notes", "action": "read"}], {"userId": member.id})
    payload = {"Authorization": member.headers["Authorization"], "X-Svc-Site": site}
    async with Client(transport=transport(server, payload)) as session:
        with pytest.raises(TransportQueryError) as refused:  # no read permission on posts
            async for _ in session.subscribe(gql(SUB)):
                pass
        assert refused.value.errors[0]["extensions"]["code"] == "PERMISSION_DENIED"
        with pytest.raises(TransportQueryError) as invalid:
            async for _ in session.subscribe(gql("subscription { nope_events { action } }")):
                pass
        assert invalid.value.errors[0]["extensions"]["code"] == "VALIDATION"
        assert "nope_events" in invalid.value.errors[0]["message"]
        with pytest.raises(TransportQueryError) as query:  # queries and mutations go by POST
            await session.execute(gql("{ notes { id } }"))
        assert query.value.errors[0]["message"] == "The event stream takes a subscription operation"


async def init_refused(server, init_payload: dict, headers: dict | None = None) -> int:
    """The close code that answers a ``connection_init`` carrying ``init_payload``."""
    async with server.ws("/api/v1/graphql", headers=headers, subprotocols=[PROTOCOL]) as ws:
        await ws.send_json({"type": "connection_init", "payload": init_payload})
        with pytest.raises(WebSocketDisconnect) as closed:
            await ws.receive_json()
    return closed.value.code


async def test_cross_tenant_token_and_site(live):
    app, server, admin, site, site_b, calls = live
    member = await new_member(app, site, "subscriber")  # a member of site, not of site_b
    await calls.grant([{"collection": "posts", "action": "read"}], {"userId": member.id})
    # Its token in site_b: refused before any ack, nothing subscribed.
    assert (
        await init_refused(server, {"Authorization": member.headers["Authorization"], "X-Svc-Site": site_b})
        == 4401
    )
    assert app.kernel.topics.subscriber_count == 0
    # In its own site it streams (the grant holds).
    payload = {"Authorization": member.headers["Authorization"], "X-Svc-Site": site}
    async with Client(transport=transport(server, payload)) as session:
        events = session.subscribe(gql("subscription { posts_events { action itemId } }"))
        first = asyncio.ensure_future(events.__anext__())
        await wait_until(lambda: app.kernel.topics.subscriber_count == 1)
        await Calls(app.client, {**admin, "X-Svc-Site": site_b}).create("posts", {"id": "b2", "title": "b"})
        await calls.create("posts", {"id": "a2", "title": "a"})
        assert await first == {"posts_events": {"action": "create", "itemId": "a2"}}
        await events.aclose()
    # The handshake names site, the connection_init another: refused before any ack.
    assert await init_refused(server, {"X-Svc-Site": site_b}, {**admin, "X-Svc-Site": site}) == 4400
    # An unknown site, a bad token, no site at all: the kernel's codes.
    assert await init_refused(server, {"X-Svc-Site": "no-such-site"}) == 4404
    assert await init_refused(server, {"X-Svc-Site": site, "Authorization": "Bearer not-a-token"}) == 4401
    assert await init_refused(server, {"Authorization": admin["Authorization"]}) == 4400


async def test_protocol_close_codes(own_live):
    app, server, admin, site, _b, _calls = own_live
    init = {"type": "connection_init", "payload": {**admin, "X-Svc-Site": site}}

    async def closed_with(messages: list[dict | str]) -> tuple[int, list]:
        got = []
        async with server.ws("/api/v1/graphql", subprotocols=[PROTOCOL]) as ws:
            for message in messages:
                await ws.send_text(message if isinstance(message, str) else json.dumps(message))
            with pytest.raises(WebSocketDisconnect) as closed:
                while True:
                    got.append(await ws.receive_json())
        return closed.value.code, got

    app.kernel.settings.extra["gql_ws_init_seconds"] = 0.2  # read by each new socket
    assert await closed_with([]) == (4408, [])  # no connection_init in time
    app.kernel.settings.extra["gql_ws_init_seconds"] = 10.0
    assert await closed_with([{"type": "subscribe", "id": "1", "payload": {"query": SUB}}]) == (4401, [])
    assert await closed_with(["not json"]) == (4400, [])
    assert await closed_with(["[" * 5000 + "]" * 5000]) == (4400, [])  # -- audit: deeper than the parser goes
    assert await closed_with([init, init]) == (4429, [{"type": "connection_ack"}])
    sub = {"type": "subscribe", "id": "1", "payload": {"query": SUB}}
    assert await closed_with([init, sub, sub]) == (4409, [{"type": "connection_ack"}])
    assert await closed_with([init, {"type": "subscribe", "payload": {"query": SUB}}]) == (
        4400,
        [{"type": "connection_ack"}],
    )
    await wait_until(lambda: app.kernel.topics.subscriber_count == 0)
    # A subscribe without a query is an error message for its id; the socket stays open.
    async with server.ws("/api/v1/graphql", subprotocols=[PROTOCOL]) as ws:
        await ws.send_json(init)
        assert await ws.receive_json() == {"type": "connection_ack"}
        await ws.send_json({"type": "subscribe", "id": "a", "payload": {}})
        message = await ws.receive_json()
        assert message["id"] == "a" and message["type"] == "error"
        assert message["payload"][0]["extensions"]["code"] == "VALIDATION"
        await ws.send_json({"type": "ping"})
        assert await ws.receive_json() == {"type": "pong"}


async def test_subscriptions_count_towards_the_site_cap(live):
    app, server, admin, site, _b, calls = live
    init = {"type": "connection_init", "payload": {**admin, "X-Svc-Site": site}}
    async with server.ws("/api/v1/graphql", subprotocols=[PROTOCOL]) as ws:
        await ws.send_json(init)
        assert await ws.receive_json() == {"type": "connection_ack"}
        for n, op in enumerate(("1", "2", "3", "4"), start=1):
            await ws.send_json({"type": "subscribe", "id": op, "payload": {"query": SUB}})
            if n <= 3:  # one at a time: which of concurrent opens passes the cap is not fixed
                await wait_until(lambda n=n: app.kernel.topics.subscriber_count == n)
        refused = await ws.receive_json()
        assert refused["id"] == "4" and refused["type"] == "error"
        assert refused["payload"][0]["extensions"] == {"code": "RATE_LIMITED", "status": 429}
        assert app.kernel.topics.subscriber_count == 3
        await ws.send_json({"type": "complete", "id": "2"})
        await wait_until(lambda: app.kernel.topics.subscriber_count == 2)
        await calls.create("posts", {"id": "c1", "title": "counted"})
        got = sorted([await ws.receive_json() for _ in range(2)], key=lambda m: m["id"])
    assert got == [
        {
            "id": op,
            "type": "next",
            "payload": {"data": {"posts_events": {"action": "create", "itemId": "c1", "item": None}}},
        }
        for op in ("1", "3")
    ]
    await wait_until(lambda: app.kernel.topics.subscriber_count == 0)


async def test_handshake_without_the_subprotocol_is_refused(live):
    _app, server, admin, site, _b, _calls = live
    async with server.ws("/api/v1/graphql", headers={**admin, "X-Svc-Site": site}) as ws:
        with pytest.raises(WebSocketDisconnect) as closed:
            await ws.receive_json()
    assert closed.value.code == 4400 and "graphql-transport-ws" in closed.value.reason


async def test_origin_is_checked_against_the_site_of_connection_init(make_app, live_server):
    app = await make_app(env={"SVC_CORS_ORIGINS": "https://app.example.com"})
    server = await live_server(app)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    init = {"type": "connection_init", "payload": {**admin, "X-Svc-Site": site}}
    async with server.ws(
        "/api/v1/graphql", headers={"Origin": "https://app.example.com"}, subprotocols=[PROTOCOL]
    ) as ws:
        await ws.send_json(init)
        assert await ws.receive_json() == {"type": "connection_ack"}
    async with server.ws(
        "/api/v1/graphql", headers={"Origin": "https://evil.example"}, subprotocols=[PROTOCOL]
    ) as ws:
        await ws.send_json(init)  # the handshake named no site: the Origin is checked now
        with pytest.raises(WebSocketDisconnect) as closed:
            await ws.receive_json()
    assert closed.value.code == 4403
    assert closed.value.reason.startswith("PERMISSION_DENIED: The origin https://evil.example")
