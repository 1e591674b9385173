"""Fault: Redis goes away for ``--down`` seconds (default 30) under traffic, then comes back.

Starts a private PostgreSQL cluster and a private Redis (never the machine's shared ones),
``svc serve --workers 2`` and ``svc worker`` on them, opens realtime sockets on both workers and
keep-alive clients pinned to each worker, then:

1. **before**: a write made through each worker reaches every socket, on both workers;
2. **Redis killed** (SIGKILL) for ``--down`` seconds while writers, readers and list queries run:
   no 5xx and no transport error; the auth rate limit still refuses (per process now); health
   answers 200 with ``runtime.checkDetails.cache`` "degraded ..."; ``/metrics`` shows
   ``svc_redis_up{component="rate limits"} 0`` on each worker; the log has the one WARNING
   "Redis unreachable for ..."; a new realtime socket is still admitted; a write still reaches
   the sockets of its own worker (realtime works within one process);
3. **Redis started again** on the same port: every ``svc_redis_up`` is back to 1 on both
   workers and a write through either worker reaches the sockets of both, with no restart;
4. **nothing lost**: every write answered 201 during the outage reads back 200, and the change
   feed (``GET /cdc/events``) holds an ``items.create`` event for each.

Prints one JSON verdict; exits 0 when every check passed. Loopback only, bounded everywhere.

    .venv/bin/python bench/faults/redis_down.py --down 30
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect as ws_connect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from faultkit import (  # noqa: E402
    Api,
    PrivatePostgres,
    PrivateRedis,
    Svc,
    base_env,
    metric_values,
    server_pid_of,
    verdict,
    wait_until,
    workdir,
)

COLLECTION = "posts"


class Socket:
    """A realtime WebSocket subscribed to the collection, and the item ids it received."""

    def __init__(self, ws: Any, pid: int | None) -> None:
        self.ws = ws
        self.pid = pid
        self.items: set[str] = set()
        self.lagged = 0
        self.task: asyncio.Task[None] | None = None

    async def read(self) -> None:
        async for raw in self.ws:
            frame = json.loads(raw)
            if frame.get("type") == "event":
                self.items.add(frame.get("itemId"))
            elif frame.get("type") == "lagged":
                self.lagged += 1


class Scenario:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.port = args.port
        self.base = f"http://127.0.0.1:{args.port}/api/v1"
        self.api = Api(self.base.removesuffix("/api/v1"), timeout=10)
        self.sockets: list[Socket] = []
        self.pinned: dict[int, httpx.AsyncClient] = {}  # worker pid -> a keep-alive client on it
        self.spare: list[httpx.AsyncClient] = []
        self.checks: dict[str, bool] = {}
        self.figures: dict[str, Any] = {}

    # ---------------------------------------------------------------- helpers

    def headers(self) -> dict[str, str]:
        return self.api.headers()

    async def pid_of(self, client: httpx.AsyncClient) -> int:
        body = (await client.get("/utils/health")).json()
        report = body["data"] if "data" in body else body["errors"][0]["extensions"]["health"]
        return int(report["runtime"]["pid"])

    async def pin_clients(self, workers: int) -> None:
        """Keep-alive clients (one connection each) until every worker has one; bounded tries."""
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        for _ in range(16):
            client = httpx.AsyncClient(base_url=self.base, limits=limits, timeout=10, headers=self.headers())
            pid = await self.pid_of(client)
            if pid in self.pinned:
                self.spare.append(client)
            else:
                self.pinned[pid] = client
            if len(self.pinned) >= workers:
                return
        raise RuntimeError(f"could not reach {workers} workers over 16 connections: {sorted(self.pinned)}")

    async def client_on(self, pid: int) -> httpx.AsyncClient:
        """The keep-alive client pinned to worker ``pid``, connected again if its connection
        closed (an idle keep-alive ends after a few seconds and may reopen on the other worker)."""
        client = self.pinned[pid]
        if await self.pid_of(client) == pid:
            return client
        await client.aclose()
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        for _ in range(24):
            client = httpx.AsyncClient(base_url=self.base, limits=limits, timeout=10, headers=self.headers())
            if await self.pid_of(client) == pid:
                self.pinned[pid] = client
                return client
            self.spare.append(client)
        raise RuntimeError(f"no connection reached worker {pid} in 24 tries")

    async def open_socket(self, http: httpx.AsyncClient) -> Socket:
        ticket = (await http.post("/realtime/ticket", headers=self.headers())).json()["data"]["ticket"]
        ws = await ws_connect(f"ws://127.0.0.1:{self.port}/api/v1/realtime?ticket={ticket}", ping_interval=None,
                              open_timeout=10)
        await ws.send(json.dumps({"type": "subscribe", "collection": COLLECTION}))
        first = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if first.get("type") != "subscribed":
            raise RuntimeError(f"subscribe answered {first}")
        sock = Socket(ws, server_pid_of(ws.local_address[1], self.port))
        sock.task = asyncio.create_task(sock.read())
        return sock

    async def open_sockets(self, http: httpx.AsyncClient, workers: int) -> None:
        for _ in range(24):
            self.sockets.append(await self.open_socket(http))
            pids = Counter(s.pid for s in self.sockets)
            if len(self.sockets) >= 4 and len(pids) >= workers and min(pids.values()) >= 2:
                return
        raise RuntimeError(f"sockets did not reach every worker: {Counter(s.pid for s in self.sockets)}")

    async def write_through(self, pid: int, label: str) -> str | None:
        """Create an item on the client pinned to ``pid``; its id, or None when it was not 201
        or the connection moved to another worker meanwhile."""
        client = await self.client_on(pid)
        item_id = f"{label}-{uuid.uuid4().hex[:10]}"
        resp = await client.post(f"/items/{COLLECTION}", json={"id": item_id, "title": label})
        if resp.status_code != 201:
            return None
        if await self.pid_of(client) != pid:
            return None
        return item_id

    async def fanout(self, label: str, wait: float) -> dict[str, float]:
        """Write through each worker; the share of sockets, per (writer, socket worker), that got it."""
        written = {pid: await self.write_through(pid, f"{label}-{pid}") for pid in self.pinned}
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if all(item in s.items for item in written.values() if item for s in self.sockets):
                break
            await asyncio.sleep(0.05)
        shares: dict[str, float] = {}
        for writer, item in written.items():
            for worker in self.pinned:
                mine = [s for s in self.sockets if s.pid == worker]
                got = sum(1 for s in mine if item and item in s.items)
                shares[f"{'same' if writer == worker else 'cross'} {writer}->{worker}"] = \
                    round(got / len(mine), 2) if mine and item else 0.0
        return shares

    async def metrics(self, pid: int) -> dict[str, float]:
        text = (await (await self.client_on(pid)).get("/metrics")).text
        return metric_values(text, "svc_redis_up")

    # ---------------------------------------------------------------- the outage

    async def traffic(self, seconds: float) -> dict[str, Any]:
        """Writers and readers on a shared pool until ``seconds`` pass (bounded in count too)."""
        statuses: Counter[str] = Counter()
        latencies: list[float] = []
        written: list[str] = []
        errors: list[str] = []
        deadline = time.monotonic() + seconds
        limits = httpx.Limits(max_connections=self.args.clients, max_keepalive_connections=self.args.clients)
        async with httpx.AsyncClient(base_url=self.base, limits=limits, timeout=10, headers=self.headers()) as http:

            async def one(n: int) -> None:
                for i in range(100_000):
                    if time.monotonic() >= deadline:
                        return
                    item_id = f"down-{n}-{i}-{uuid.uuid4().hex[:6]}"
                    for method, path, body in (
                        ("POST", f"/items/{COLLECTION}", {"id": item_id, "title": f"outage {i}"}),
                        ("GET", f"/items/{COLLECTION}/{item_id}", None),
                        ("GET", f"/items/{COLLECTION}?limit=5&sort=-id", None),
                    ):
                        started = time.perf_counter()
                        try:
                            resp = await http.request(method, path, json=body)
                        except httpx.HTTPError as exc:
                            statuses["transport-error"] += 1
                            errors.append(f"{method} {path}: {type(exc).__name__}")
                            continue
                        latencies.append((time.perf_counter() - started) * 1000)
                        statuses[str(resp.status_code)] += 1
                        if resp.status_code >= 500:
                            errors.append(f"{method} {path}: {resp.status_code} {resp.text[:200]}")
                        if method == "POST" and resp.status_code == 201:
                            written.append(item_id)

            await asyncio.gather(*(one(n) for n in range(self.args.clients)))
        latencies.sort()
        return {
            "statuses": dict(statuses), "written": written, "errors": errors[:10],
            "requests": sum(statuses.values()),
            "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
            "p99_ms": round(latencies[int(0.99 * (len(latencies) - 1))], 1) if latencies else None,
            "max_ms": round(latencies[-1], 1) if latencies else None,
        }

    async def auth_limit_during_outage(self) -> Counter[int]:
        """30 malformed logins on fresh connections: the auth bucket (10/min here) still refuses."""
        out: Counter[int] = Counter()
        for _ in range(30):
            async with httpx.AsyncClient(base_url=self.base, timeout=10) as fresh:
                out[(await fresh.post("/auth/login", json={})).status_code] += 1
        return out

    async def nothing_lost(self, written: list[str]) -> tuple[int, int]:
        """(items that read back 200, items with an items.create event in the change feed)."""
        found = 0
        limits = httpx.Limits(max_connections=8)
        async with httpx.AsyncClient(base_url=self.base, limits=limits, timeout=30, headers=self.headers()) as http:
            sem = asyncio.Semaphore(8)

            async def get(item_id: str) -> bool:
                async with sem:
                    return (await http.get(f"/items/{COLLECTION}/{item_id}")).status_code == 200

            found = sum(await asyncio.gather(*(get(i) for i in written)))
            events: set[str] = set()
            cursor = None
            for _ in range(2000):
                params = {"collections": COLLECTION, "operations": "create", "limit": "500"}
                if cursor:
                    params["cursor"] = cursor
                page = (await http.get("/cdc/events", params=params)).json()
                events.update(e["itemId"] for e in page["data"] if e.get("type") == "items.create")
                cursor = page["meta"]["nextCursor"]
                if not page["meta"]["hasMore"]:
                    break
        return found, sum(1 for i in written if i in events)

    async def run(self, serve: Svc, redis: PrivateRedis, worker: Svc) -> None:
        args = self.args
        self.api.wait_healthy(180)
        self.api.login()
        self.api.make_site(COLLECTION)
        async with httpx.AsyncClient(base_url=self.base, timeout=10) as http:
            await self.pin_clients(2)
            await self.open_sockets(http, 2)
            self.figures["sockets_per_worker"] = dict(Counter(s.pid for s in self.sockets))

            before = await self.fanout("before", 10)
            self.checks["before: a write through either worker reaches the sockets of both"] = \
                all(v == 1.0 for v in before.values())
            self.figures["fanout_before"] = before
            warm = await self.traffic(3)  # the same mix with Redis up, for comparison
            self.figures["with_redis"] = {k: v for k, v in warm.items() if k not in ("written", "errors")}

            # ------------------------------------------------------------ Redis goes away
            log_mark = len(serve.log())
            redis.stop()
            killed_at = time.monotonic()
            traffic_task = asyncio.create_task(self.traffic(args.down))
            await asyncio.sleep(min(3.0, args.down / 3))
            limited = await self.auth_limit_during_outage()
            health = {pid: (await (await self.client_on(pid)).get("/utils/health")) for pid in list(self.pinned)}
            ups = {pid: await self.metrics(pid) for pid in self.pinned}
            try:
                extra = await self.open_socket(http)
                new_socket_ok = True
                self.sockets.append(extra)
            except Exception as exc:  # noqa: BLE001 - the verdict says it
                new_socket_ok = False
                self.figures["new_socket_error"] = repr(exc)
            during = await self.fanout("during", 3)
            outage = await traffic_task
            outage_seconds = time.monotonic() - killed_at

            # ------------------------------------------------------------ Redis comes back
            redis.start()
            back_at = time.monotonic()
            recovered_after = None
            after: dict[str, float] = {}
            for _ in range(60):
                if time.monotonic() - back_at > args.recover_within:
                    break
                for pid in list(self.pinned):  # requests that touch each Redis-backed part
                    c = await self.client_on(pid)
                    await c.get("/utils/health")
                    await c.get(f"/items/{COLLECTION}?limit=1")
                    try:
                        probe = await self.open_socket(http)
                        await probe.ws.close()
                        probe.task.cancel()
                    except Exception:  # noqa: BLE001,S112 - retried next round
                        continue
                ups_after = {pid: await self.metrics(pid) for pid in self.pinned}
                all_up = all(v == 1.0 for m in ups_after.values() for v in m.values())
                if all_up:
                    after = await self.fanout("after", 3)
                    if all(v == 1.0 for v in after.values()):
                        recovered_after = round(time.monotonic() - back_at, 2)
                        break
                await asyncio.sleep(0.5)

            found, in_feed = await self.nothing_lost(outage["written"])
            log = serve.log()[log_mark:]

        # ---------------------------------------------------------------- verdict
        self.checks["outage: no 5xx and no transport error"] = (
            outage["requests"] > 0 and not any(k.startswith("5") or k == "transport-error" for k in outage["statuses"]))
        self.checks["outage: writes succeed (201)"] = outage["statuses"].get("201", 0) > 0
        self.checks["outage: the auth rate limit still refuses, per process (429)"] = limited.get(429, 0) > 0 \
            and not any(s >= 500 for s in limited)
        self.checks["outage: health 200 with cache detail 'degraded'"] = all(
            r.status_code == 200 and r.json()["data"]["runtime"].get("checkDetails", {}).get("cache", "")
            .startswith("degraded") for r in health.values())
        self.checks["outage: svc_redis_up{rate limits} and {topics listener} are 0 on every worker"] = all(
            m.get('{component="rate limits"}') == 0.0 and m.get('{component="topics listener"}') == 0.0
            for m in ups.values())
        self.checks["outage: one WARNING 'Redis unreachable for' per part and process in the log"] = (
            0 < log.count("Redis unreachable for") <= 2 * 5)
        self.checks["outage: a new realtime socket is admitted"] = new_socket_ok
        self.checks["outage: a write reaches the sockets of its own worker"] = all(
            v == 1.0 for k, v in during.items() if k.startswith("same"))
        self.checks["recovery: every svc_redis_up back to 1 and cross-worker fan-out works, no restart"] = \
            recovered_after is not None
        self.checks["recovery: the same svc serve and svc worker processes"] = serve.alive() and worker.alive()
        self.checks["nothing lost: every write of the outage reads back"] = found == len(outage["written"])
        self.checks["nothing lost: every write of the outage is in the change feed"] = in_feed == len(outage["written"])
        self.figures.update({
            "down_seconds": round(outage_seconds, 1),
            "outage": {k: v for k, v in outage.items() if k != "written"},
            "writes_during_outage": len(outage["written"]),
            "read_back": found, "in_change_feed": in_feed,
            "auth_limit_statuses": dict(limited),
            "health_cache_detail": {pid: r.json().get("data", {}).get("runtime", {}).get("checkDetails", {}).get("cache")
                                    for pid, r in health.items()},
            "svc_redis_up_during": ups,
            "fanout_during": during,
            "fanout_after": after,
            "recovered_seconds_after_redis_start": recovered_after,
            "log_warnings_redis_unreachable": log.count("Redis unreachable for"),
            "log_errors": log.count(" ERROR "),
        })


async def amain(args: argparse.Namespace) -> int:
    wd = workdir("redis")
    redis = PrivateRedis(args.redis_port, wd)
    pg = PrivatePostgres(args.pg_port, wd)
    env = base_env(wd, SVC_REDIS_URL=redis.url, SVC_DATABASE_URL=pg.url("svc"), SVC_RATE_LIMIT_AUTH="10",
                   SVC_REALTIME_LEASE_SECONDS="15")
    serve = Svc("serve", ["serve", "--port", str(args.port), "--workers", "2"], env, wd)
    worker = Svc("worker", ["worker"], env, wd)
    scenario = Scenario(args)
    try:
        redis.start()
        pg.init()
        pg.start()
        pg.createdb("svc")
        serve.start()
        scenario.api.wait_healthy(180)
        worker.start()
        # Ready once every process listens on the bus: 2 API workers and the job worker.
        channel = f"{env['SVC_REDIS_NAMESPACE']}:bus"
        wait_until(lambda: redis.subscribers(channel) >= 3, 180, "svc worker to subscribe to the bus", step=0.5)
        await scenario.run(serve, redis, worker)
    finally:
        for sock in scenario.sockets:
            if sock.task is not None:
                sock.task.cancel()
            await sock.ws.close()
        for client in [*scenario.pinned.values(), *scenario.spare]:
            await client.aclose()
        worker.stop()
        serve.stop()
        redis.stop()
        pg.stop("immediate")
    scenario.figures["workdir"] = str(wd) if args.keep else None
    code = verdict("redis_down", scenario.checks, scenario.figures)
    if not args.keep:
        shutil.rmtree(wd, ignore_errors=True)
    return code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--down", type=float, default=30.0, help="seconds Redis stays down (default 30)")
    parser.add_argument("--port", type=int, default=19350, help="svc serve's port")
    parser.add_argument("--redis-port", type=int, default=16390)
    parser.add_argument("--pg-port", type=int, default=55433)
    parser.add_argument("--clients", type=int, default=4, help="concurrent traffic loops during the outage")
    parser.add_argument("--recover-within", type=float, default=30.0, help="seconds allowed for recovery")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, database) afterwards")
    return asyncio.run(amain(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
