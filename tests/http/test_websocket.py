"""WebSocket routes get request id, site, principal (token or ticket), Origin check, rate limit,
and close with 4xxx codes; through a real uvicorn server."""

from __future__ import annotations

import pytest
from httpx_ws import WebSocketDisconnect

from kernel import ANONYMOUS, Principal, TicketGrant
from kernel.http.websocket import CLOSE_CODES, close_code_for
from kernel.testing import METRICS_HEADERS, svc_test_redis_url
from tests.http.live_plugin import LivePlugin

ECHO = "/api/v1/live-test/echo"


@pytest.fixture
async def live(make_app, live_server):
    """An app with the test plugin, served by uvicorn, with an admin token and two sites."""
    plugin = LivePlugin()
    app = await make_app(plugins=["utils", plugin], env={"SVC_RATE_LIMIT_AUTH": "1000",
                                                         "SVC_CORS_ORIGINS": "https://studio.example.org"})
    server = await live_server(app)
    token = await app.login()
    admin = {"Authorization": f"Bearer {token}"}
    sites = [await app.create_site(admin, name="S") for _ in range(2)]
    return Live(app, server, plugin, admin, *sites)


class Live:
    def __init__(self, app, server, plugin, admin, site, site_b):
        self.app, self.server, self.plugin, self.admin = app, server, plugin, admin
        self.site, self.site_b = site, site_b

    def headers(self, site=None, **extra):
        return {**self.admin, "X-Svc-Site": site or self.site, **extra}


async def closed_with(session_cm, *send: str) -> WebSocketDisconnect:
    """Open the socket, send ``send`` frames, read until the server closes it; the close."""
    async with session_cm as ws:
        try:
            for frame in send:
                await ws.send_text(frame)
            while True:
                await ws.receive_text()
        except WebSocketDisconnect as close:
            return close
    raise AssertionError("the server did not close the socket")


async def test_a_socket_gets_site_principal_and_request_id(live):
    async with live.server.ws(ECHO, headers=live.headers(**{"X-Request-Id": "req-ws-1"})) as ws:
        hello = await ws.receive_json()
        assert ws.response.headers["x-request-id"] == "req-ws-1"
        assert ws.response.headers["x-ratelimit-limit"] == "1000"
        await ws.send_json({"n": 1})
        assert await ws.receive_json() == {"type": "echo", "frame": {"n": 1}}
    assert hello["site"] == live.site and hello["user"] and hello["requestId"] == "req-ws-1"


@pytest.mark.parametrize(("headers", "code", "reason"), [
    ({}, 4401, "UNAUTHENTICATED"),
    ({"Authorization": "Bearer not-a-token"}, 4401, "UNAUTHENTICATED"),
    ({"X-Svc-Site": "no-such-site"}, 4404, "SITE_NOT_FOUND"),
])
async def test_handshake_failures_close_with_4xxx(live, headers, code, reason):
    base = {"X-Svc-Site": live.site} if "X-Svc-Site" not in headers else {**live.admin}
    close = await closed_with(live.server.ws(ECHO, headers={**base, **headers}))
    assert close.code == code and close.reason.startswith(reason), (close.code, close.reason)


async def test_no_site_and_unknown_route(live):
    close = await closed_with(live.server.ws(ECHO, headers=live.admin))
    assert (close.code, close.reason.split(":")[0]) == (4400, "VALIDATION_FAILED")
    close = await closed_with(live.server.ws("/api/v1/live-test/nowhere", headers=live.headers()))
    assert (close.code, close.reason.split(":")[0]) == (4404, "NOT_FOUND")


async def test_errors_in_the_responder_close_with_4xxx_and_never_a_trace(live):
    for frame, code, reason in (("not json", 4400, "VALIDATION_FAILED"), ('"x"', 4400, "VALIDATION_FAILED"),
                                ("x" * 2000, 4413, "PAYLOAD_TOO_LARGE"),
                                ('{"fail": "forbidden"}', 4403, "PERMISSION_DENIED"),
                                ('{"fail": "crash"}', 4500, "INTERNAL")):
        close = await closed_with(live.server.ws(ECHO, headers=live.headers()), frame)
        assert close.code == code and close.reason.startswith(reason), (close.code, close.reason)
        assert "secret" not in close.reason and "Traceback" not in close.reason


async def test_origin_is_checked_against_the_sites_allowed_origins(live):
    live.plugin.origins[live.site] = ["https://blog.example.com/home", "shop.example.com"]
    allowed = ["https://blog.example.com", "https://shop.example.com", "https://studio.example.org",
               "HTTPS://Blog.Example.com:443"]
    for origin in allowed:
        async with live.server.ws(ECHO, headers=live.headers(Origin=origin)) as ws:
            assert (await ws.receive_json())["type"] == "hello"
    for origin in ("https://evil.example.net", "http://blog.example.com", "null", "https://blog.example.com:8443"):
        close = await closed_with(live.server.ws(ECHO, headers=live.headers(Origin=origin)))
        assert close.code == 4403 and close.reason.startswith("PERMISSION_DENIED"), origin
    # Cross-tenant: site A's origins do not open site B.
    close = await closed_with(live.server.ws(ECHO, headers=live.headers(live.site_b, Origin="https://blog.example.com")))
    assert close.code == 4403
    # The server's own origin (a page it served) is not cross-site.
    async with live.server.ws(ECHO, headers=live.headers(Origin=live.server.base_url)) as ws:
        assert (await ws.receive_json())["type"] == "hello"


async def test_a_ticket_names_site_and_principal_once(live):
    live.plugin.tickets["t-1"] = TicketGrant(live.site, Principal(kind="user", user_id="u-ticket"))
    # X-Svc-Site names site B, but the ticket decides: site A.
    async with live.server.ws(ECHO, params={"ticket": "t-1"}, headers={"X-Svc-Site": live.site_b}) as ws:
        hello = await ws.receive_json()
    assert (hello["site"], hello["user"]) == (live.site, "u-ticket")
    close = await closed_with(live.server.ws(ECHO, params={"ticket": "t-1"}))  # used up
    assert close.code == 4401 and "ticket" in close.reason
    close = await closed_with(live.server.ws(ECHO, params={"ticket": "expired-1"}))
    assert close.code == 4401 and "expired" in close.reason
    close = await closed_with(live.server.ws(ECHO, params={"ticket": "x" * 5000}))
    assert close.code == 4401


async def test_route_auth_applies_to_a_ticket_principal(live):
    live.plugin.tickets["anon"] = TicketGrant(live.site, ANONYMOUS)  # a ticket for nobody
    close = await closed_with(live.server.ws(ECHO, params={"ticket": "anon"}))
    assert close.code == 4401
    live.plugin.tickets["gone"] = TicketGrant("no-such-site", ANONYMOUS)
    close = await closed_with(live.server.ws(ECHO, params={"ticket": "gone"}))
    assert close.code == 4404


async def test_rate_limit_closes_with_4429(make_app, live_server):
    app = await make_app(plugins=[LivePlugin()], env={"SVC_RATE_LIMIT_AUTH": "2"})
    server = await live_server(app)
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "no-site"}
    # The login above took one slot of the per-IP auth bucket; each handshake takes one more.
    close = await closed_with(server.ws(ECHO, headers={**headers}))
    assert close.code == 4404  # counted only after site and auth: this one was refused before
    async with server.ws("/api/v1/live-test/anyone") as ws:  # public, no bucket
        assert (await ws.receive_json())["type"] == "hello"
    resp = await app.client.post("/api/v1/sites", json={"id": "rl-site", "name": "R"},
                                 headers={"Authorization": headers["Authorization"]})
    assert resp.status_code == 201
    headers["X-Svc-Site"] = "rl-site"
    async with server.ws(ECHO, headers=headers) as ws:
        assert (await ws.receive_json())["type"] == "hello"
    close = await closed_with(server.ws(ECHO, headers=headers))
    assert close.code == 4429 and close.reason.startswith("RATE_LIMITED")


async def test_subprotocol_is_chosen_from_the_route(live):
    async with live.server.ws("/api/v1/live-test/proto", headers={"X-Svc-Site": live.site},
                              subprotocols=["svc.v1", "svc.v2"]) as ws:
        assert ws.subprotocol == "svc.v1"  # the client's first acceptable choice
    close = await closed_with(live.server.ws("/api/v1/live-test/proto", headers={"X-Svc-Site": live.site},
                                             subprotocols=["other"]))
    assert close.code == 4400 and "subprotocol" in close.reason


async def test_topic_messages_reach_the_socket_and_a_slow_one_is_dropped(live):
    topics = live.app.kernel.topics
    async with live.server.ws("/api/v1/live-test/topic", headers=live.headers()) as ws:
        assert await ws.receive_json() == {"type": "ready"}
        await ws.send_json({"go": True})
        await topics.publish(live.site_b, "news.flash", {"id": "other-site"})
        await topics.publish(live.site, "news.flash", {"id": "n1"})
        assert await ws.receive_json() == {"type": "event", "topic": "news.flash", "data": {"id": "n1"}}
    # A subscriber with a queue of 1 that cannot keep up is dropped, never waited for.
    async with live.server.ws("/api/v1/live-test/topic", params={"queue": "1"}, headers=live.headers()) as ws:
        assert await ws.receive_json() == {"type": "ready"}
        for n in range(3):
            await topics.publish(live.site, "news.flash", {"n": n})
        await ws.send_json({"go": True})  # the server reads its subscription only now
        frames = []
        try:
            while True:
                frames.append(await ws.receive_json())
        except WebSocketDisconnect as close:
            assert close.code == 4408
        assert frames == [{"type": "event", "topic": "news.flash", "data": {"n": 0}}]


async def test_close_codes_are_documented():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    for code in CLOSE_CODES:
        assert f"`{code}`" in text, code
    assert close_code_for(429) == 4429 and close_code_for(302) == 4500


async def test_metrics_count_sockets_and_subscribers(live):
    async with live.server.ws("/api/v1/live-test/topic", headers=live.headers()) as ws:
        assert await ws.receive_json() == {"type": "ready"}
        text = (await live.server.client.get("/metrics", headers=METRICS_HEADERS)).text
        assert "svc_topic_subscribers 1.0" in text
    await closed_with(live.server.ws(ECHO, headers={"X-Svc-Site": live.site}))
    text = (await live.server.client.get("/metrics", headers=METRICS_HEADERS)).text
    assert 'svc_websocket_outcomes_total{outcome="4401"} 1.0' in text
    assert 'svc_websocket_outcomes_total{outcome="accepted"}' in text


@pytest.mark.skipif(not svc_test_redis_url(), reason="SVC_TEST_REDIS_URL is not set")
async def test_a_topic_published_by_one_process_reaches_a_socket_of_another(live, make_app):
    other = await make_app(plugins=[LivePlugin()])  # another app (process) on the same Redis namespace
    async with live.server.ws("/api/v1/live-test/topic", headers=live.headers()) as ws:
        assert await ws.receive_json() == {"type": "ready"}
        await ws.send_json({"go": True})
        await other.kernel.topics.publish(live.site, "news.flash", {"id": "from-elsewhere"})
        assert (await ws.receive_json())["data"] == {"id": "from-elsewhere"}
