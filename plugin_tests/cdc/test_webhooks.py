"""Webhook delivery to a real local HTTP endpoint: signatures, order, retries, 410, 429 with
Retry-After, redirects not followed, dead and revived subscriptions, independence, timeouts."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from kernel.testing import Calls, HttpReceiver, ReceivedRequest
from kernel.testing import shared as testing_shared
from plugin_tests.cdc.conftest import CDC_ENV

# Every test subscribes and writes in a site of its own, and each subscription reads only its
# site's events: they share the module's app (the change feed's settings), each in a new site of
# it (kernel/testing/shared.py). The timeout test needs settings of its own and starts its own.
shared_site = testing_shared.shared_site_started_with(env=CDC_ENV)
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

SUBS = "/cdc/subscriptions"
SECRET = "whsec-0123456789abcdef"


class Endpoint:
    """A path on the receiver that answers ``status()`` (and ``headers``) and keeps what it got.
    ``held=True``: each request is kept in ``arrived`` and not answered until ``release`` is set
    (at most ``HOLD_BOUND`` seconds), so a test decides when the endpoint is slow, not a clock."""

    HOLD_BOUND = 30.0

    def __init__(self, receiver: HttpReceiver, path: str, status: int = 200, delay: float = 0.0,
                 held: bool = False) -> None:
        self.path, self.status, self.delay = path, status, delay
        self.headers: dict[str, str] = {}
        self.got: list[ReceivedRequest] = []
        self.arrived: list[ReceivedRequest] = []
        self.release = threading.Event()
        if not held:
            self.release.set()
        self.lock = threading.Lock()
        self.url = receiver.respond(path, self._answer)

    def _answer(self, request: ReceivedRequest) -> tuple[int, bytes, dict[str, str]]:
        self.arrived.append(request)
        self.release.wait(self.HOLD_BOUND)
        if self.delay:
            time.sleep(self.delay)
        with self.lock:
            self.got.append(request)
            return self.status, b"{}", dict(self.headers)

    def deliveries(self) -> list[dict[str, Any]]:
        return [json.loads(r.body) for r in self.got]

    def event_ids(self) -> list[str]:
        return [e["id"] for d in self.deliveries() for e in d["events"]]


async def until(check: Callable[[], Any], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)


async def recorded(calls: Calls, sub: dict[str, Any], check: Callable[[list[Any]], Any]) -> list[Any]:
    """The subscription's delivery log, once ``check(log)`` holds (a record follows its attempt)."""
    log: list[Any] = []
    for _ in range(500):
        log = await calls.ok("get", f"{SUBS}/{sub['id']}/deliveries", params={"limit": 100})
        if check(log):
            return log
        await asyncio.sleep(0.02)
    raise AssertionError(f"the delivery log never matched: {log}")


async def subscription(calls: Calls, sub: dict[str, Any], check: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """The subscription's detail, once ``check(detail)`` holds."""
    detail: dict[str, Any] = {}
    for _ in range(500):
        detail = await calls.ok("get", f"{SUBS}/{sub['id']}")
        if check(detail):
            return detail
        await asyncio.sleep(0.02)
    raise AssertionError(f"the subscription never matched: {detail}")


async def collection(calls: Calls, name: str = "posts") -> None:
    await calls.collection(name, {"title": "string"})


async def hook(calls: Calls, endpoint: Endpoint, name: str = "hook", **extra: Any) -> dict[str, Any]:
    return await calls.ok("post", SUBS, status=201,
                          json={"name": name, "kind": "webhook", "url": endpoint.url, "secret": SECRET, **extra})


def verify(request: ReceivedRequest, secret: str = SECRET) -> dict[str, Any]:
    header = request.headers["X-Svc-Signature"]
    parts = dict(p.split("=", 1) for p in header.split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + request.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(parts["v1"], expected)
    assert abs(int(parts["t"]) - time.time()) < 60
    return json.loads(request.body)


async def test_deliveries_are_signed_thin_and_in_order(calls, http_receiver):
    endpoint = Endpoint(http_receiver, "/hook")
    await collection(calls)
    sub = await hook(calls, endpoint)
    ids = [(await calls.create("posts", {"title": f"t{i}"}))["id"] for i in range(5)]
    await calls.ok("patch", f"/items/posts/{ids[0]}", json={"title": "changed"})
    await until(lambda: len(endpoint.event_ids()) == 6)
    for request in endpoint.got:
        body = verify(request)
        assert request.headers["X-Svc-Delivery"] == body["deliveryId"]
        assert request.headers["Content-Type"] == "application/json"
    events = [e for d in endpoint.deliveries() for e in d["events"]]
    assert [(e["type"], e["itemId"]) for e in events] == [("items.create", i) for i in ids] + [
        ("items.update", ids[0])]
    assert events[-1]["fields"] == ["title"] and "changed" not in repr(events)
    assert [int(e["id"]) for e in events] == sorted(int(e["id"]) for e in events)
    with pytest.raises(AssertionError):  # a wrong secret does not verify
        verify(endpoint.got[0], "another-secret-entirely")
    detail = await subscription(calls, sub, lambda d: d["lag"]["events"] == 0)
    assert detail["attempts"] == 0 and detail["lastError"] is None
    log = await recorded(calls, sub, lambda log: sum(d["events"] for d in log) == 6)
    assert all(d["statusCode"] == 200 and d["error"] is None for d in log)
    assert log[0]["id"] == endpoint.deliveries()[-1]["deliveryId"]  # newest first
    body = await calls.ok("get", f"{SUBS}/{sub['id']}/deliveries", full=True, params={"limit": 1, "page": 2})
    assert body["meta"]["total"] == len(log) and len(body["data"]) == min(1, len(log) - 1)


async def test_an_endpoint_down_for_a_while_gets_everything_in_order(calls, http_receiver):
    endpoint = Endpoint(http_receiver, "/flaky", status=500)
    await collection(calls)
    sub = await hook(calls, endpoint, operations=["create"])
    ids = [(await calls.create("posts", {"title": f"t{i}"}))["id"] for i in range(3)]
    await until(lambda: len(endpoint.got) >= 3)  # failed three times, retried on the schedule
    endpoint.status = 200
    await until(lambda: endpoint.got and endpoint.got[-1].body and
                [e["itemId"] for e in endpoint.deliveries()[-1]["events"]] == ids)
    # A retry carries the same events with the same ids (and the ones committed since).
    first_try = [e["id"] for e in endpoint.deliveries()[0]["events"]]
    assert [e["id"] for e in endpoint.deliveries()[-1]["events"]][:len(first_try)] == first_try
    log = await recorded(calls, sub, lambda log: log and log[0]["statusCode"] == 200)
    assert log[0]["statusCode"] == 200 and all(d["statusCode"] == 500 for d in log[1:])
    assert [d["attempt"] for d in reversed(log)] == list(range(1, len(log) + 1))
    assert "HTTP 500" in log[1]["error"]
    assert (await calls.ok("get", f"{SUBS}/{sub['id']}"))["status"] == "active"


async def test_exhausted_retries_make_it_dead_and_replay_revives_it(calls, http_receiver):
    endpoint = Endpoint(http_receiver, "/down", status=503)
    await collection(calls)
    sub = await hook(calls, endpoint)
    cursor = sub["cursor"]
    await calls.create("posts", {"title": "x"})
    one = f"{SUBS}/{sub['id']}"
    await until(lambda: len(endpoint.got) == 6)  # the first try and five retries (the test schedule)
    detail = await subscription(calls, sub, lambda d: d["status"] == "dead")
    assert "6 attempts" in detail["statusReason"]
    await asyncio.sleep(0.3)
    assert len(endpoint.got) == 6  # nothing more is sent
    await calls.err("patch", one, 409, "CONFLICT", json={"status": "active"})
    await calls.err("post", f"{one}/dispatch", 409, "CONFLICT")
    endpoint.status = 204
    revived = await calls.ok("post", f"{one}/replay", json={"cursor": cursor})
    assert revived["status"] == "active"
    await until(lambda: len(endpoint.got) == 7)
    assert verify(endpoint.got[-1])["events"] == verify(endpoint.got[0])["events"]  # the same event again


async def test_410_gone_marks_it_dead_at_once(calls, http_receiver):
    endpoint = Endpoint(http_receiver, "/gone", status=410)
    await collection(calls)
    sub = await hook(calls, endpoint)
    await calls.create("posts", {"title": "x"})
    await until(lambda: len(endpoint.got) == 1)
    detail = await subscription(calls, sub, lambda d: d["status"] == "dead")
    assert "410" in detail["statusReason"]
    await calls.create("posts", {"title": "y"})
    await asyncio.sleep(0.3)
    assert len(endpoint.got) == 1


async def test_429_with_retry_after_waits_as_told(calls, http_receiver):
    endpoint = Endpoint(http_receiver, "/busy", status=429)
    endpoint.headers = {"Retry-After": "3600"}
    await collection(calls)
    sub = await hook(calls, endpoint)
    await calls.create("posts", {"title": "x"})
    await until(lambda: len(endpoint.got) == 1)
    detail = await subscription(calls, sub, lambda d: d["nextRetryAt"])
    wait = _seconds_until(detail["nextRetryAt"])
    assert 3500 < wait <= 3600 and detail["attempts"] == 1 and "429" in detail["lastError"]
    # An on-demand dispatch does not wait.
    endpoint.status = 200
    await calls.ok("post", f"{SUBS}/{sub['id']}/dispatch", status=202)
    await until(lambda: len(endpoint.got) == 2)


def _seconds_until(iso: str) -> float:
    import datetime as dt

    return (dt.datetime.fromisoformat(iso.replace("Z", "+00:00")) - dt.datetime.now(dt.UTC)).total_seconds()


async def test_redirects_are_failures_and_never_followed(calls, http_receiver):
    target = Endpoint(http_receiver, "/elsewhere")
    endpoint = Endpoint(http_receiver, "/moved", status=307)
    endpoint.headers = {"Location": target.url}
    await collection(calls)
    sub = await hook(calls, endpoint)
    await calls.create("posts", {"title": "x"})
    await until(lambda: len(endpoint.got) >= 2)
    assert target.got == []
    log = await recorded(calls, sub, lambda log: log)
    assert log[-1]["statusCode"] == 307 and "redirect" in log[-1]["error"]


async def test_a_slow_endpoint_never_delays_another(calls, http_receiver):
    slow = Endpoint(http_receiver, "/slow", held=True)
    fast = Endpoint(http_receiver, "/fast")
    await collection(calls)
    await hook(calls, slow, name="slow")
    await hook(calls, fast, name="fast")
    try:
        await calls.create("posts", {"title": "x"})
        await until(lambda: len(slow.arrived) == 1)  # slow's delivery is in flight, unanswered
        second = (await calls.create("posts", {"title": "y"}))["id"]
        # Delivered to fast while slow still holds its first delivery.
        await until(lambda: second in [e["itemId"] for d in fast.deliveries() for e in d["events"]])
        assert slow.got == [] and len(slow.arrived) == 1
    finally:
        slow.release.set()
    await until(lambda: len(slow.event_ids()) == 2)


async def test_filters_narrow_what_is_delivered(calls, http_receiver):
    posts, updates = Endpoint(http_receiver, "/posts"), Endpoint(http_receiver, "/updates")
    await collection(calls)
    await collection(calls, "tags")
    await hook(calls, posts, name="posts-only", collections=["posts"])
    await hook(calls, updates, name="updates-only", operations=["update"])
    post = (await calls.create("posts", {"title": "x"}))["id"]
    tag = (await calls.create("tags", {"title": "t"}))["id"]
    await calls.ok("patch", f"/items/tags/{tag}", json={"title": "u"})
    await until(lambda: len(updates.event_ids()) == 1 and len(posts.event_ids()) == 1)
    assert posts.deliveries()[0]["events"][0]["itemId"] == post
    assert [(e["type"], e["itemId"]) for e in updates.deliveries()[0]["events"]] == [("items.update", tag)]


async def test_a_timeout_is_a_failure(make_app, http_receiver):
    app = await make_app(env={**CDC_ENV, "SVC_CDC_READ_TIMEOUT": "0.2", "SVC_CDC_RETRY_SCHEDULE": "3600"})
    calls = Calls(app.client, {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"})
    endpoint = Endpoint(http_receiver, "/sleepy", held=True)
    await collection(calls)
    sub = await hook(calls, endpoint)
    try:
        await calls.create("posts", {"title": "x"})
        log = await recorded(calls, sub, lambda log: log)
        # The attempt ended while the endpoint still held the request: the read timeout cut it.
        assert endpoint.got == [] and len(endpoint.arrived) == 1
    finally:
        endpoint.release.set()
    assert log[0]["statusCode"] is None and "timed out" in log[0]["error"]
    assert isinstance(log[0]["durationMs"], int)


async def test_an_unreachable_endpoint_is_a_failure(calls):
    from kernel.testing import free_port

    await collection(calls)
    sub = await calls.ok("post", SUBS, status=201, json={
        "name": "nowhere", "kind": "webhook", "url": f"http://127.0.0.1:{free_port()}/x", "secret": SECRET})
    await calls.create("posts", {"title": "x"})
    log = await recorded(calls, sub, lambda log: log)
    assert log[0]["statusCode"] is None and "could not connect" in log[0]["error"]


async def test_site_b_writes_never_reach_site_a_hooks(calls, calls_b, http_receiver):
    endpoint = Endpoint(http_receiver, "/a")
    await collection(calls)
    await collection(calls_b)
    await hook(calls, endpoint)
    await calls_b.create("posts", {"title": "b"})
    mine = (await calls.create("posts", {"title": "a"}))["id"]
    await until(lambda: len(endpoint.event_ids()) == 1)
    await asyncio.sleep(0.2)
    assert [e["itemId"] for e in endpoint.deliveries()[0]["events"]] == [mine] and len(endpoint.got) == 1


async def test_a_paused_webhook_holds_its_events_and_delivers_them_on_resume(calls, http_receiver):
    endpoint = Endpoint(http_receiver, "/resume")
    await collection(calls)
    sub = await hook(calls, endpoint)
    await calls.ok("patch", f"{SUBS}/{sub['id']}", json={"status": "paused"})
    control = Endpoint(http_receiver, "/control")  # an active hook: the dispatcher has seen the events
    await hook(calls, control, name="control")
    ids = [(await calls.create("posts", {"title": f"t{i}"}))["id"] for i in range(3)]
    await until(lambda: [e["itemId"] for d in control.deliveries() for e in d["events"]] == ids)
    assert endpoint.got == []
    paused = await calls.ok("get", f"{SUBS}/{sub['id']}")
    assert paused["lag"]["events"] == 3 and paused["nextRetryAt"] is None
    resumed = await calls.ok("patch", f"{SUBS}/{sub['id']}", json={"status": "active"})
    assert resumed["attempts"] == 0
    await until(lambda: [e["itemId"] for d in endpoint.deliveries() for e in d["events"]] == ids)
