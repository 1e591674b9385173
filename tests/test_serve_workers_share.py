"""``svc serve --workers 2`` on SQLite: one truth across the two workers (issue 36, point 1).

Each leg starts one real server with two worker processes, once through the node's broker (no
Redis) and once with ``SVC_REDIS_URL``, and shows across the workers: a WebSocket held by one
worker gets the frame of a write made through the other, a notification reaches sessions on
both, a GraphQL SSE subscription sees the other worker's writes, a role change, a suspension, a
revoked session or API key and a changed setting take effect on the other worker at the next
request (through Redis: within a bound well under the caches' TTL, since pub/sub is not awaited),
and the rate limits and connection caps count across both.

Which worker answers is known, not hoped for: ``pinned(node, pid)`` keeps a keep-alive connection
that ``/utils/health`` showed to be on that worker, and ``ws_on(node, pid)`` asks the health
check on a raw socket, then upgrades that same socket to a WebSocket. Every wait is bounded and
fails with what it saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import aconnect_sse
from websockets.asyncio.client import connect as ws_connect

from kernel.testing import free_port, stop_process, svc_test_database_url, wait_until_answering
from kernel.workers.serve import reuseport_supported

pytestmark = [
    pytest.mark.skipif(not reuseport_supported(1, 2), reason="SO_REUSEPORT workers need Linux"),
    pytest.mark.skipif(bool(svc_test_database_url()), reason="runs on the embedded default (one SQLite file)"),
]

PASSWORD = "workers-admin-pass"
MEMBER_PASSWORD = "member-password-1"
READ_LIMIT = 4  # SVC_RATE_LIMIT_ITEMS_READ: per principal, across the workers
TRIES = 200  # fresh connections to find a given worker (SO_REUSEPORT spreads them by hash)
WAIT = 15.0  # seconds any one expected frame or answer may take
REDIS_DROP = 2.0  # seconds a cache drop may take through Redis pub/sub (the caches' TTL is 5 s)


@dataclass
class Node:
    """One ``svc serve --workers 2``: its URL, the two worker pids and the admin's headers."""

    port: int
    proc: subprocess.Popen[Any]
    out: Path
    pids: list[int] = field(default_factory=list)
    admin: dict[str, str] = field(default_factory=dict)
    leg: str = "broker"  # or "redis"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"


def _health_pid(answer: httpx.Response) -> int:
    assert answer.status_code == 200, answer.text
    body = answer.json()
    return int(body.get("data", body)["runtime"]["pid"])


def _start(data_dir: Path, extra: dict[str, str]) -> Node:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(SVC_DATA_DIR=str(data_dir), SVC_ADMIN_PASSWORD=PASSWORD, JWT_SECRET="w" * 40,
               SVC_LOG_LEVEL="warning", SVC_REALTIME_MAX_CONNECTIONS="3", SVC_GQL_MAX_SUBSCRIPTIONS="1",
               SVC_RATE_LIMIT_ITEMS_READ=str(READ_LIMIT), **extra)
    port = free_port()
    out = data_dir.parent / f"serve-{port}.log"
    with out.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", "serve", "--port", str(port), "--workers", "2"],
                                env=env, stdout=sink, stderr=subprocess.STDOUT, text=True)
    node = Node(port, proc, out)
    try:
        wait_until_answering(proc, f"{node.base}/utils/health")
        seen: set[int] = set()
        for _ in range(TRIES):
            pid = _health_pid(httpx.get(f"{node.base}/utils/health", timeout=10))
            if pid in seen:
                time.sleep(0.1)  # the other worker may still be starting: no busy loop on this one
            seen.add(pid)
            if len(seen) == 2:
                break
        assert len(seen) == 2, f"{TRIES} fresh connections all reached the workers {seen}"
        node.pids = sorted(seen)
        login = httpx.post(f"{node.base}/auth/login", json={"email": "admin@example.com", "password": PASSWORD},
                           timeout=20)
        assert login.status_code == 200, login.text
        node.admin = {"Authorization": f"Bearer {login.json()['data']['token']}", "X-Svc-Site": "default"}
    except BaseException:
        _stop(node)
        raise
    return node


def _stop(node: Node) -> int:
    """SIGTERM, then the exit code (killed after 40 s: the leg then fails on that code)."""
    return stop_process(node.proc, timeout=40)


@pytest.fixture(scope="module", params=["broker", "redis"])
def node(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    extra: dict[str, str] = {}
    if request.param == "redis":
        extra = {"SVC_REDIS_URL": request.getfixturevalue("redis_url"),
                 "SVC_REDIS_NAMESPACE": f"svctest:{uuid.uuid4().hex[:12]}"}
    started = _start(tmp_path_factory.mktemp(f"workers-{request.param}") / "data", extra)
    started.leg = request.param
    yield started
    # Stopped cleanly: the parent and both workers exit on SIGTERM (this is the serve smoke test too:
    # tests/test_serve_reuseport.py starts no server of its own).
    code = _stop(started)
    if extra:  # the leg's keys (rate limits, connection slots, cache) go with it
        import redis

        client = redis.Redis.from_url(extra["SVC_REDIS_URL"])
        try:
            for key in client.scan_iter(f"{extra['SVC_REDIS_NAMESPACE']}:*"):
                client.delete(key)
        finally:
            client.close()
    assert code == 0, f"svc serve --workers 2 exited {code}:\n{started.out.read_text()[-3000:]}"


# ------------------------------------------------------------------------------ pinned connections


class Pinned:
    """An HTTP client whose one keep-alive connection is on the worker ``pid``; every call first
    checks that (and re-pins if the server closed the idle connection meanwhile)."""

    def __init__(self, node: Node, pid: int) -> None:
        self.node, self.pid = node, pid
        self.client: httpx.AsyncClient | None = None

    async def _pin(self) -> httpx.AsyncClient:
        seen = []
        for _ in range(TRIES):
            if self.client is None:
                self.client = httpx.AsyncClient(base_url=self.node.base, timeout=WAIT,
                                                limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))
            pid = _health_pid(await self.client.get("/utils/health"))
            if pid == self.pid:
                return self.client
            seen.append(pid)
            await self.client.aclose()
            self.client = None
        raise AssertionError(f"no connection reached worker {self.pid} in {TRIES} tries (reached {set(seen)})")

    async def call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        client = await self._pin()
        return await client.request(method, path, **kw)

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.aclose()


@contextlib.asynccontextmanager
async def workers(node: Node) -> AsyncIterator[tuple[Pinned, Pinned]]:
    a, b = Pinned(node, node.pids[0]), Pinned(node, node.pids[1])
    try:
        yield a, b
    finally:
        await a.aclose()
        await b.aclose()


def _raw_health(port: int) -> tuple[socket.socket, int]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    sock.sendall(b"GET /api/v1/utils/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    parsed = json.loads(body)
    return sock, int(parsed.get("data", parsed)["runtime"]["pid"])


@contextlib.asynccontextmanager
async def ws_on(node: Node, pid: int, path: str) -> AsyncIterator[Any]:
    """A WebSocket on worker ``pid``: the health check on a raw connection names the worker, and
    the same connection is then upgraded."""
    seen = []
    for _ in range(TRIES):
        sock, got = await asyncio.to_thread(_raw_health, node.port)
        if got == pid:
            break
        seen.append(got)
        sock.close()
    else:
        raise AssertionError(f"no connection reached worker {pid} in {TRIES} tries (reached {set(seen)})")
    sock.setblocking(False)
    async with ws_connect(f"ws://127.0.0.1:{node.port}/api/v1{path}", sock=sock, close_timeout=1) as ws:
        yield ws


async def next_frame(ws: Any, want: str) -> dict[str, Any]:
    """The next frame of type ``want`` (pings skipped); fails after ``WAIT`` with what came."""
    seen: list[Any] = []
    try:
        async with asyncio.timeout(WAIT):
            while True:
                frame = json.loads(await ws.recv())
                if frame.get("type") == want:
                    return frame
                seen.append(frame)
    except TimeoutError:
        raise AssertionError(f"no {want!r} frame within {WAIT} s; got {seen}") from None


async def ticket(worker: Pinned, headers: dict[str, str]) -> str:
    resp = await worker.call("post", "/realtime/ticket", headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["ticket"]


async def new_site(node: Node, worker: Pinned) -> tuple[str, dict[str, str]]:
    """A site of the test's own with a ``posts`` collection, and the admin's headers for it."""
    site = f"w{uuid.uuid4().hex[:10]}"
    resp = await worker.call("post", "/sites", json={"id": site, "name": site}, headers=node.admin)
    assert resp.status_code == 201, resp.text
    headers = {**node.admin, "X-Svc-Site": site}
    resp = await worker.call("post", "/collections", json={"name": "posts"}, headers=headers)
    assert resp.status_code == 201, resp.text
    return site, headers


async def new_member(node: Node, worker: Pinned, headers: dict[str, str]) -> tuple[str, str, dict[str, Any]]:
    """A user of the site (default role): id, email and the login answer."""
    email = f"m{uuid.uuid4().hex[:8]}@example.com"
    resp = await worker.call("post", "/users", json={"email": email, "password": MEMBER_PASSWORD}, headers=headers)
    assert resp.status_code == 201, resp.text
    login = await worker.call("post", "/auth/login", json={"email": email, "password": MEMBER_PASSWORD},
                              headers={"X-Svc-Site": headers["X-Svc-Site"]})
    assert login.status_code == 200, login.text
    return resp.json()["data"]["id"], email, login.json()["data"]


async def seen_on(node: Node, worker: Pinned, want: Any, method: str, path: str, **kw: Any) -> None:
    """Through the broker: the very next request on ``worker`` answers ``want`` (``(status, code)``,
    or the setting's value). Through Redis the drop travels by pub/sub and is not awaited by the
    next request (docs/decisions/multi-worker-without-redis.md): the answer must come within
    ``REDIS_DROP`` seconds, well under the caches' 5-second TTL."""
    seen = []
    deadline = asyncio.get_running_loop().time() + (REDIS_DROP if node.leg == "redis" else 0)
    while True:
        resp = await worker.call(method, path, **kw)
        got = resp.json()["data"]["value"] if path.startswith("/settings/") else _code(resp)
        seen.append(got)
        if got == want or asyncio.get_running_loop().time() >= deadline:
            break
        await asyncio.sleep(0.02)
    assert seen[-1] == want, f"{method.upper()} {path} on worker {worker.pid} answered {seen}"


def _code(resp: httpx.Response) -> tuple[int, str | None]:
    errors = resp.json().get("errors") if resp.content else None
    return resp.status_code, (errors[0]["code"] if errors else None)


# ------------------------------------------------------------------------------ the tests


async def test_a_socket_on_one_worker_gets_the_other_workers_writes_and_notifications(node):
    async with workers(node) as (a, b):
        site, headers = await new_site(node, a)
        async with ws_on(node, a.pid, f"/realtime?ticket={await ticket(a, headers)}") as on_a, \
                ws_on(node, b.pid, f"/realtime?ticket={await ticket(b, headers)}") as on_b:
            for ws in (on_a, on_b):
                await ws.send(json.dumps({"type": "subscribe", "collection": "posts"}))
                await next_frame(ws, "subscribed")
            created = await b.call("post", "/items/posts", json={"id": "from-b"}, headers=headers)
            assert created.status_code == 201, created.text
            for ws in (on_a, on_b):  # the socket of worker A too
                assert await next_frame(ws, "event") == {"type": "event", "collection": "posts", "action": "create",
                                                         "itemId": "from-b", "payload": None}
            # A notification made through worker A reaches the sessions on both workers.
            frozen = await a.call("post", "/agent/kill-switch", json={"scope": "site"}, headers=headers)
            assert frozen.status_code == 201, frozen.text
            for ws in (on_a, on_b):
                note = (await next_frame(ws, "notification"))["notification"]
                assert (note["kind"], note["entityId"]) == ("agent.frozen", frozen.json()["data"]["id"])


async def test_a_graphql_stream_on_one_worker_sees_the_other_workers_writes(node):
    async with workers(node) as (a, b):
        site, headers = await new_site(node, a)
        await a._pin()
        assert a.client is not None
        query = "subscription { posts_events { action itemId } }"
        async with aconnect_sse(a.client, "GET", "/graphql", params={"query": query},
                                headers={**headers, "Accept": "text/event-stream"}) as events:
            assert events.response.status_code == 200
            stream = events.aiter_sse()
            created = await b.call("post", "/items/posts", json={"id": "via-b"}, headers=headers)
            assert created.status_code == 201, created.text
            seen = []
            async with asyncio.timeout(WAIT):
                async for event in stream:
                    seen.append(event.data)
                    if event.event == "next":
                        break
            assert json.loads(seen[-1])["data"]["posts_events"] == {"action": "create", "itemId": "via-b"}, seen
            # The stream cap (1 per site) counts across the workers: worker B refuses a second.
            again = await b.call("get", "/graphql", params={"query": query},
                                 headers={**headers, "Accept": "text/event-stream"})
            assert _code(again) == (429, "RATE_LIMITED")


async def test_role_suspension_session_key_and_setting_changes_hold_at_once_on_the_other_worker(node):
    async with workers(node) as (a, b):
        site, headers = await new_site(node, a)
        user_id, email, login = await new_member(node, a, headers)
        member = {"Authorization": f"Bearer {login['token']}", "X-Svc-Site": site}
        # Role: refused on A (and cached there), granted through B, allowed on A at once.
        assert _code(await a.call("get", "/users", headers=member)) == (403, "PERMISSION_DENIED")
        roles = (await a.call("get", "/roles", headers=headers)).json()["data"]
        admin_role = next(r["id"] for r in roles if r.get("systemKey") == "admin" or r["name"] == "Administrator")
        assert (await b.call("patch", f"/users/{user_id}", json={"roleId": admin_role}, headers=headers)).status_code == 200
        await seen_on(node, a, (200, None), "get", "/users", headers=member)
        # Setting: read (and cached) on A, changed through B, read anew on A.
        assert (await b.call("put", "/settings/banner", json={"value": "old"}, headers=headers)).status_code == 200
        assert (await a.call("get", "/settings/banner", headers=headers)).json()["data"]["value"] == "old"
        assert (await b.call("put", "/settings/banner", json={"value": "new"}, headers=headers)).status_code == 200
        await seen_on(node, a, "new", "get", "/settings/banner", headers=headers)
        # Session: revoked through B, its refresh token refused on A, and its access token too
        # (accepted on A before, so cached there: sessions.changed reaches A).
        sessions = (await a.call("get", "/me/sessions", headers=member)).json()["data"]
        assert len(sessions) == 1
        assert (await b.call("delete", f"/me/sessions/{sessions[0]['id']}", headers=member)).status_code == 204
        refreshed = await a.call("post", "/auth/refresh", json={"refreshToken": login["refreshToken"]})
        assert _code(refreshed) == (401, "UNAUTHENTICATED"), refreshed.text
        await seen_on(node, a, (401, "UNAUTHENTICATED"), "get", "/auth/me", headers=member)
        again = await a.call("post", "/auth/login", json={"email": email, "password": MEMBER_PASSWORD},
                             headers={"X-Svc-Site": site})
        assert again.status_code == 200, again.text
        member = {"Authorization": f"Bearer {again.json()['data']['token']}", "X-Svc-Site": site}
        # API key: used on A, revoked through B, refused on A.
        key = (await a.call("post", "/api-keys", json={"name": "ci"}, headers=headers)).json()["data"]
        with_key = {"Authorization": f"Bearer {key['key']}", "X-Svc-Site": site}
        assert (await a.call("get", "/collections", headers=with_key)).status_code == 200
        assert (await b.call("delete", f"/api-keys/{key['id']}", headers=headers)).status_code == 204
        assert _code(await a.call("get", "/collections", headers=with_key)) == (401, "UNAUTHENTICATED")
        # Suspension: accepted on A (cached there), suspended through B, refused on A.
        assert (await a.call("get", "/auth/me", headers=member)).status_code == 200
        resp = await b.call("patch", f"/users/{user_id}", json={"status": "suspended"}, headers=headers)
        assert resp.status_code == 200, resp.text
        await seen_on(node, a, (401, "UNAUTHENTICATED"), "get", "/auth/me", headers=member)


async def test_rate_limits_and_socket_caps_count_across_the_workers(node):
    async with workers(node) as (a, b):
        site, headers = await new_site(node, a)
        answers = []  # the admin's item reads in this new site: a bucket of its own (per principal and site)
        for i in range(READ_LIMIT + 1):
            answers.append(_code(await (a if i % 2 else b).call("get", "/items/posts", headers=headers)))
        assert answers == [(200, None)] * READ_LIMIT + [(429, "RATE_LIMITED")], answers
        # Three sockets per site: two on A and one on B fill it; a fourth (on B) is closed with 4429.
        async with ws_on(node, a.pid, f"/realtime?ticket={await ticket(a, headers)}"), \
                ws_on(node, a.pid, f"/realtime?ticket={await ticket(a, headers)}"), \
                ws_on(node, b.pid, f"/realtime?ticket={await ticket(b, headers)}"):
            async with ws_on(node, b.pid, f"/realtime?ticket={await ticket(b, headers)}") as fourth:
                with pytest.raises(Exception) as closed:  # noqa: PT011 - websockets' ConnectionClosed
                    async with asyncio.timeout(WAIT):
                        await fourth.recv()
                assert getattr(closed.value, "rcvd", None) is not None, repr(closed.value)
                assert closed.value.rcvd.code == 4429, repr(closed.value)


def test_the_start_says_what_still_differs(node):
    out = node.out.read_text()
    assert "with 2 workers (SO_REUSEPORT)" in out, out
    if node.leg == "broker":
        assert "share the local broker at" in out, out
        assert "several nodes need Redis" in out, out
    else:
        assert "share the local broker" not in out, out
        assert "through Redis pub/sub" in out, out
