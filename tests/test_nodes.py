"""Two nodes behind a balancer (issue 36, point 6): two `svc serve` processes on different ports
over one PostgreSQL and one Redis, as the README describes. Across them: a WebSocket on node A
gets the frame of a write through node B; a suspended user and a changed setting take effect on
the other node at the next request; the rate limits count over both; and each node's /metrics
adds up its workers and names its node.

Runs in the PostgreSQL+Redis pass (``SVC_TEST_DATABASE_URL``); it uses a database of its own
(``<test database>_nodes``) and a Redis database of its own (the configured number + 8, past the
xdist workers' numbers) under a namespace of its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families
from websockets.asyncio.client import connect as ws_connect

from kernel.testing import (
    METRICS_HEADERS,
    METRICS_TOKEN,
    free_port,
    fresh_test_database,
    skip_or_fail,
    stop_process,
    svc_test_database_url,
    wait_until_answering,
)

pytestmark = pytest.mark.svc_services
PASSWORD = "nodes-admin-pass"
AUTH_LIMIT = 6
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"


def own_redis_db(url: str) -> str:
    head, _, db = url.rpartition("/")
    return f"{head}/{(int(db) + 8) % 16}" if db.isdigit() and head.count("/") >= 2 else url


class Node:
    """One `svc serve` node: its own port, data dir and SVC_NODE_ID; the shared database and Redis."""

    def __init__(self, name: str, workers: int, env: dict[str, str], tmp: Path) -> None:
        self.name = name
        self.port = free_port()
        self.api = f"http://127.0.0.1:{self.port}/api/v1"
        self.log = tmp / f"{name}.log"
        node_env = {**env, "SVC_DATA_DIR": str(tmp / name), "SVC_NODE_ID": name}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernel.cli", "serve", "--port", str(self.port), "--workers", str(workers)],
            env=node_env, stdout=self.log.open("w"), stderr=subprocess.STDOUT)



def metric_samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [(s.labels, s.value) for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == name]


@pytest.fixture
def nodes(tmp_path, redis_url):
    if not svc_test_database_url():
        pytest.skip("two nodes need PostgreSQL: this runs in the PostgreSQL+Redis pass")
    try:
        database = fresh_test_database("nodes")
    except Exception as exc:  # noqa: BLE001 - any failure to reach the server
        skip_or_fail(f"PostgreSQL at {svc_test_database_url()} does not answer: {exc}")
    namespace = f"svctest-nodes-{uuid.uuid4().hex[:10]}"
    redis_db = own_redis_db(redis_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    env.update(SVC_DATABASE_URL=database, SVC_REDIS_URL=redis_db, SVC_REDIS_NAMESPACE=namespace,
               JWT_SECRET="n" * 40, SVC_ADMIN_PASSWORD=PASSWORD, SVC_RATE_LIMIT_AUTH=str(AUTH_LIMIT),
               SVC_LOG_LEVEL="warning", SVC_METRICS_TOKEN=METRICS_TOKEN)
    started: list[Node] = []
    try:
        # One after the other: the first migrates the shared database (operations.md).
        for name, workers in (("node-a", 2), ("node-b", 1)):
            node = Node(name, workers, env, tmp_path)
            started.append(node)
            wait_until_answering(node.proc, f"{node.api}/utils/version", timeout=90)
        yield started
    finally:
        for node in started:
            stop_process(node.proc)
        client = redis.Redis.from_url(redis_db)
        try:
            keys = list(client.scan_iter(f"{namespace}:*"))
            if keys:
                client.delete(*keys)
        finally:
            client.close()


async def test_two_nodes_over_one_postgresql_and_one_redis(nodes, tmp_path):
    a, b = nodes
    async with httpx.AsyncClient(timeout=30) as http:
        login = await http.post(f"{a.api}/auth/login", json={"email": "admin@example.com", "password": PASSWORD})
        assert login.status_code == 200, login.text
        admin = {"Authorization": f"Bearer {login.json()['data']['token']}", "X-Svc-Site": "default"}

        # 1. A WebSocket held by node A gets the frame of a write made through node B.
        assert (await http.post(f"{b.api}/collections", json={"name": "posts"}, headers=admin)).status_code == 201
        ticket = (await http.post(f"{a.api}/realtime/ticket", headers=admin)).json()["data"]["ticket"]
        ws_url = f"ws://127.0.0.1:{a.port}/api/v1/realtime?ticket={ticket}"
        async with ws_connect(ws_url, close_timeout=1) as ws:
            await ws.send(json.dumps({"type": "subscribe", "collection": "posts"}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 20))["type"] == "subscribed"
            created = await http.post(f"{b.api}/items/posts", json={"id": "from-b"}, headers=admin)
            assert created.status_code == 201, created.text
            seen = []
            while not seen or seen[-1]["type"] == "ping":
                seen.append(json.loads(await asyncio.wait_for(ws.recv(), 20)))
            assert seen[-1] == {"type": "event", "collection": "posts", "action": "create", "itemId": "from-b",
                                "payload": None}, seen

        # 2. A user suspended through node B is refused by node A at its next request.
        email = f"nodes-{uuid.uuid4().hex[:8]}@example.com"
        made = await http.post(f"{b.api}/users", json={"email": email, "password": "member-pass-1"}, headers=admin)
        assert made.status_code == 201, made.text
        member = await http.post(f"{a.api}/auth/login", json={"email": email, "password": "member-pass-1"},
                                 headers={"X-Svc-Site": "default"})
        assert member.status_code == 200, member.text
        bearer = {"Authorization": f"Bearer {member.json()['data']['token']}"}
        for _ in range(4):  # fresh connections: both workers of node A cache who the token is
            async with httpx.AsyncClient(timeout=30) as fresh:
                assert (await fresh.get(f"{a.api}/auth/me", headers=bearer)).status_code == 200
        suspended = await http.patch(f"{b.api}/users/{made.json()['data']['id']}", json={"status": "suspended"},
                                     headers=admin)
        assert suspended.status_code == 200, suspended.text
        for _ in range(4):
            async with httpx.AsyncClient(timeout=30) as fresh:
                me = await fresh.get(f"{a.api}/auth/me", headers=bearer)
                assert me.status_code == 401 and me.json()["errors"][0]["code"] == "UNAUTHENTICATED", me.text

        # 3. A setting changed through node B applies on node A at once. One keep-alive connection
        # to A (one worker): its first hit reads the setting (db-rollup: buffered in A for 300 s),
        # the second comes after B switched the site to hot-counter (counted in Redis at once).
        async def pageviews(value: dict) -> None:
            resp = await http.put(f"{b.api}/settings/pageviews", json={"value": {**value, "botFilter": False}},
                                  headers=admin)
            assert resp.status_code == 200, resp.text

        beacon = {"User-Agent": BROWSER, "Content-Type": "text/plain;charset=UTF-8"}
        await pageviews({"strategy": "db-rollup"})
        async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=1)) as one:
            assert (await one.post(f"{a.api}/pageviews/default/hit", content=b'{"path": "/x"}',
                                   headers=beacon)).status_code == 204
            await pageviews({"strategy": "hot-counter"})
            assert (await one.post(f"{a.api}/pageviews/default/hit", content=b'{"path": "/x"}',
                                   headers=beacon)).status_code == 204
        stats = await http.get(f"{b.api}/pageviews/stats", params={"path": "/x"}, headers=admin)
        assert stats.status_code == 200, stats.text
        assert sum(day["views"] for day in stats.json()["data"]) == 1, stats.json()  # the second hit, in Redis

        # 4. The auth rate limit (per client address) counts the requests of both nodes.
        client_ip = {"X-Forwarded-For": "203.0.113.36"}  # 127.0.0.1 is a trusted proxy
        statuses = []
        for i in range(AUTH_LIMIT + 1):
            node = (a, b)[i % 2]
            statuses.append((await http.post(f"{node.api}/auth/logout", headers=client_ip)).status_code)
        assert statuses == [204] * AUTH_LIMIT + [429], statuses

        # 5. Each node's /metrics names its node, and node A's adds up both of its workers.
        sent = 0
        for _ in range(6):
            async with httpx.AsyncClient(timeout=30) as fresh:
                assert (await fresh.get(f"{a.api}/utils/version")).status_code == 200
                sent += 1
        for node in (a, b):
            async with httpx.AsyncClient(timeout=30) as fresh:
                text = (await fresh.get(f"http://127.0.0.1:{node.port}/metrics", headers=METRICS_HEADERS)).text
            assert [labels["node"] for labels, _ in metric_samples(text, "svc_node_info")] == [node.name], text[:500]
            if node is a:
                answered = sum(v for labels, v in metric_samples(text, "svc_http_requests_total")
                               if labels.get("route", "").endswith("/utils/version"))
                assert answered >= sent + 1, (answered, sent)  # + the start's wait_until_answering
