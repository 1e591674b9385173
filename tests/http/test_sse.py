"""The SSE helper: text/event-stream, topic messages as events, heartbeats, teardown on disconnect."""

from __future__ import annotations

import asyncio
import json

import pytest
from falcon.asgi import SSEvent

from kernel import Principal, TicketGrant
from kernel.http.sse import _emit, encode_event
from kernel.messaging.topics import Lagged, TopicMessage
from tests.http.live_plugin import LivePlugin

NEWS = "/api/v1/live-test/news"


@pytest.fixture
async def live(make_app, live_server):
    plugin = LivePlugin()
    app = await make_app(plugins=[plugin])
    server = await live_server(app)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    sites = [await app.create_site(admin, name="S") for _ in range(2)]
    return app, server, plugin, admin, sites


async def wait_until(predicate, attempts: int = 500) -> None:
    for _ in range(attempts):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


async def test_topic_messages_stream_as_events_of_that_site_only(live):
    app, server, _plugin, admin, (site, site_b) = live
    topics = app.kernel.topics
    async with server.sse(NEWS, headers={**admin, "X-Svc-Site": site}, params={"heartbeat": "30"}) as events:
        assert events.response.status_code == 200
        assert events.response.headers["content-type"].startswith("text/event-stream")
        assert events.response.headers["cache-control"] == "no-store"
        assert events.response.headers["x-request-id"]
        await wait_until(lambda: topics.subscriber_count == 1)
        await topics.publish(site_b, "news.flash", {"id": "other"})
        await topics.publish(site, "news.flash", {"id": "n1"})
        await topics.publish(site, "news.sports", {"id": "n2"})
        got = []
        async for sse in events.aiter_sse():
            got.append((sse.event, json.loads(sse.data)))
            if len(got) == 2:
                break
    assert got == [("news.flash", {"id": "n1"}), ("news.sports", {"id": "n2"})]


async def test_heartbeats_on_an_idle_stream_and_teardown_when_the_client_leaves(live):
    app, server, plugin, admin, (site, _b) = live
    topics = app.kernel.topics
    async with server.sse(NEWS, headers={**admin, "X-Svc-Site": site}, params={"heartbeat": "0.02"}) as events:
        comments = 0
        async for line in events.response.aiter_lines():
            if line.startswith(":"):
                comments += 1
                if comments == 3:
                    break
        assert topics.subscriber_count == 1
    # The client went away: the next heartbeat finds it gone and the subscription is released.
    await asyncio.wait_for(plugin.news.closed.wait(), 10)
    assert topics.subscriber_count == 0


async def test_stream_needs_credentials_and_takes_a_ticket(live):
    app, server, plugin, admin, (site, site_b) = live
    resp = await server.client.get(NEWS, headers={"X-Svc-Site": site})
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"
    resp = await server.client.get(NEWS, headers={"X-Svc-Site": site}, params={"ticket": "unknown"})
    assert resp.status_code == 401
    plugin.tickets["t-sse"] = TicketGrant(site, Principal(kind="user", user_id="u-1"))
    async with server.sse(NEWS, params={"ticket": "t-sse", "heartbeat": "30"},
                          headers={"X-Svc-Site": site_b}) as events:  # the ticket's site wins
        await wait_until(lambda: app.kernel.topics.subscriber_count == 1)
        await app.kernel.topics.publish(site_b, "news.flash", {"id": "b"})
        await app.kernel.topics.publish(site, "news.flash", {"id": "a"})
        async for sse in events.aiter_sse():
            assert json.loads(sse.data) == {"id": "a"}
            break


def test_items_become_events():
    assert encode_event(TopicMessage("s", "news.flash", {"a": 1})).serialize() == \
        b'event: news.flash\ndata: {"a": 1}\n\n'
    assert b"event: lagged" in encode_event(Lagged(3)).serialize()
    event = SSEvent(event="x", data=b"y")
    assert encode_event(event) is event


async def test_a_heartbeat_never_loses_the_item_being_waited_for():
    queue: asyncio.Queue[int] = asyncio.Queue()
    closed = []

    async def source():
        while True:
            yield await queue.get()

    gen = source()
    stream = _emit(gen, 0.01, lambda n: SSEvent(json={"n": n}), lambda: closed.append(True))
    first = await stream.__anext__()
    assert first.comment == "heartbeat"
    await queue.put(1)
    events = []
    while not events:
        event = await stream.__anext__()
        if event.comment is None:
            events.append(event)
    assert events[0].serialize() == b'data: {"n": 1}\n\n'
    await stream.aclose()
    assert closed == [True]
    assert gen.ag_frame is None  # the source was closed too
