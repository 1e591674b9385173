"""The change feed over HTTP against a real ``svc serve --workers 2`` (docs/performance.md,
"Change feed").

1. The cost the feed adds to an item create: the server's CPU per ``POST /items/posts`` (the
   whole process tree) with an active webhook subscription delivering every create to a local
   receiver, against the same with the subscription paused; alternating rounds, each waiting
   until its deliveries are done so their CPU is counted.
2. Delivery latency: item creates paced at ``--rate`` per second for ``--seconds``; for each,
   the time from the create's answer (its commit came just before) to the moment the receiver
   got the event. p50, p99, max.
3. Backlog drain: the receiver answers 503 while ``--backlog`` items are created (bulk creates of
   1,000), then comes back; ``dispatch`` is called and the time until it holds every event gives
   the drain rate.
4. Pull throughput: ``GET /cdc/events?limit=500`` from the start of the log to its end.

Usage::

    .venv/bin/python bench/cdc_bench.py                                    # SQLite in a temp dir
    .venv/bin/python bench/cdc_bench.py --database-url postgresql://postgres@127.0.0.1/svc_bench_cdc
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from loadclient import cpu_seconds, free_port, tree  # noqa: E402

PASSWORD = "bench-password-1"
SECRET = "bench-webhook-secret-0123"


class Receiver:
    """The webhook endpoint: notes when each item's event arrives; answers 503 while ``down``."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.deliveries = 0
        self.down = False
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                now = time.perf_counter()
                status = 503 if receiver.down else 204
                if not receiver.down:
                    with receiver.lock:
                        receiver.deliveries += 1
                        for event in json.loads(body)["events"]:
                            if event["type"] == "items.create":
                                receiver.arrived.setdefault(event["itemId"], now)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


async def wait_for(check: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("timed out waiting for deliveries")
        await asyncio.sleep(0.01)


async def create(client: httpx.AsyncClient, title: str) -> tuple[str, float]:
    resp = await client.post("/api/v1/items/posts", json={"title": title})
    if resp.status_code != 200 and resp.status_code != 201:
        raise SystemExit(f"create: {resp.status_code} {resp.text[:200]}")
    return resp.json()["data"]["id"], time.perf_counter()


async def subscribe(client: httpx.AsyncClient, receiver: Receiver, name: str) -> str:
    resp = await client.post("/api/v1/cdc/subscriptions", json={
        "name": name, "kind": "webhook", "url": receiver.url, "secret": SECRET, "operations": ["create"]})
    resp.raise_for_status()
    return resp.json()["data"]["id"]


async def cost(client: httpx.AsyncClient, receiver: Receiver, pids: list[int], rounds: int,
               per_round: int) -> dict[str, float]:
    """Median server CPU per create with a webhook subscription delivering each create, and with
    no subscription, in alternating rounds (a round's subscription is made before it and deleted
    after, so it starts at the tail and carries no backlog)."""
    out: dict[str, list[float]] = {"with a webhook": [], "without": []}
    for r in range(rounds * 2):
        mode = "with a webhook" if r % 2 == 0 else "without"
        sub = await subscribe(client, receiver, f"cost-{r}") if mode == "with a webhook" else None
        await asyncio.sleep(0.5)
        before = cpu_seconds(pids)
        ids: list[str] = []
        sem = asyncio.Semaphore(4)

        async def one(i: int, r: int = r, sem: asyncio.Semaphore = sem, ids: list[str] = ids) -> None:
            async with sem:
                ids.append((await create(client, f"c{r}-{i}"))[0])

        await asyncio.gather(*(one(i) for i in range(per_round)))
        if sub is not None:
            await wait_for(lambda ids=ids: all(i in receiver.arrived for i in ids))
        else:
            await asyncio.sleep(0.3)
        out[mode].append(1000 * (cpu_seconds(pids) - before) / per_round)
        if sub is not None:
            (await client.delete(f"/api/v1/cdc/subscriptions/{sub}")).raise_for_status()
    return {k: round(statistics.median(v), 2) for k, v in out.items()}


async def latency(client: httpx.AsyncClient, receiver: Receiver, rate: float, seconds: float) -> dict[str, Any]:
    answered: dict[str, float] = {}
    tasks = []
    start = time.perf_counter()
    n = int(rate * seconds)

    async def one(i: int) -> None:
        item, at = await create(client, f"l{i}")
        answered[item] = at

    for i in range(n):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i)))
    await asyncio.gather(*tasks)
    await wait_for(lambda: all(i in receiver.arrived for i in answered))
    gaps = sorted(1000 * max(0.0, receiver.arrived[i] - at) for i, at in answered.items())
    return {"writes": n, "achieved_rate": round(n / (time.perf_counter() - start), 1),
            "p50_ms": round(gaps[len(gaps) // 2], 1), "p99_ms": round(gaps[int(len(gaps) * 0.99) - 1], 1),
            "max_ms": round(gaps[-1], 1)}


async def drain(client: httpx.AsyncClient, receiver: Receiver, sub: str, backlog: int) -> dict[str, Any]:
    receiver.down = True
    ids: list[str] = []
    for start in range(0, backlog, 1000):
        resp = await client.post("/api/v1/items/posts", json=[{"title": f"b{i}"} for i in
                                                             range(start, min(backlog, start + 1000))])
        if resp.status_code not in (200, 201):
            raise SystemExit(f"bulk create: {resp.status_code} {resp.text[:200]}")
        ids.extend(row["id"] for row in resp.json()["data"])
    detail = (await client.get(f"/api/v1/cdc/subscriptions/{sub}")).json()["data"]
    deliveries_before = receiver.deliveries
    receiver.down = False
    began = time.perf_counter()
    (await client.post(f"/api/v1/cdc/subscriptions/{sub}/dispatch")).raise_for_status()
    await wait_for(lambda: all(i in receiver.arrived for i in ids))
    took = time.perf_counter() - began
    return {"events": len(ids), "lag_before": detail["lag"]["events"], "seconds": round(took, 2),
            "events_per_s": round(len(ids) / took), "deliveries": receiver.deliveries - deliveries_before}


async def pull(client: httpx.AsyncClient) -> dict[str, Any]:
    cursor, total, pages = None, 0, 0
    began = time.perf_counter()
    while True:
        params: dict[str, Any] = {"limit": 500, **({"cursor": cursor} if cursor else {})}
        resp = await client.get("/api/v1/cdc/events", params=params)
        resp.raise_for_status()
        body = resp.json()
        total += len(body["data"])
        pages += 1
        cursor = body["meta"]["nextCursor"]
        if not body["meta"]["hasMore"]:
            break
    took = time.perf_counter() - began
    return {"events": total, "pages": pages, "seconds": round(took, 2), "events_per_s": round(total / took)}


async def main(args: argparse.Namespace) -> None:
    data_dir = tempfile.mkdtemp(prefix="svc-cdc-bench-")
    port = free_port()
    env = {**os.environ, "SVC_DATA_DIR": data_dir, "SVC_ADMIN_EMAIL": "admin@example.com",
           "SVC_ADMIN_PASSWORD": PASSWORD, "JWT_SECRET": "bench-secret-0123456789-0123456789-0123",
           "SVC_ENCRYPTION_KEY": base64.b64encode(os.urandom(32)).decode(), "SVC_RATE_LIMIT_ITEMS_READ": "0",
           "SVC_RATE_LIMIT_ITEMS_WRITE": "0", "SVC_RATE_LIMIT_AUTH": "0", "SVC_RATE_LIMIT_CDC": "0",
           "SVC_LOG_LEVEL": "WARNING", "SVC_ACCESS_TOKEN_TTL": "86400",
           "SVC_OUTBOUND_ALLOW_NETWORKS": "127.0.0.1/32"}  # the local webhook receiver
    if args.database_url:
        env["SVC_DATABASE_URL"] = args.database_url
    if args.redis_url:
        env["SVC_REDIS_URL"] = args.redis_url
    proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", "serve", "--port", str(port), "--workers", "2"],
                            env=env, cwd=str(HERE.parent), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    if args.redis_url:  # with Redis the jobs and the dispatcher of a deployment also run in svc worker
        worker = subprocess.Popen([sys.executable, "-m", "kernel.cli", "worker"], env=env, cwd=str(HERE.parent),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=base, timeout=120,
                                     limits=httpx.Limits(max_connections=32)) as client:
            for _ in range(600):
                try:
                    if (await client.get("/api/v1/utils/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.2)
            login = await client.post("/api/v1/auth/login", json={"email": "admin@example.com", "password": PASSWORD},
                                      headers={"X-Svc-Site": "default"})
            login.raise_for_status()
            client.headers.update({"Authorization": f"Bearer {login.json()['data']['token']}",
                                   "X-Svc-Site": "default"})
            (await client.post("/api/v1/collections", json={"collection": "posts", "fields": [
                {"field": "title", "type": "string"}]})).raise_for_status()
            receiver = Receiver()
            pids = tree(proc.pid) + (tree(worker.pid) if worker else [])
            await create(client, "warm-up")
            results: dict[str, Any] = {"database": "postgresql" if args.database_url else "sqlite"}
            sub = None
            try:
                results["cpu_ms_per_create"] = await cost(client, receiver, pids, args.rounds, args.per_round)
                sub = await subscribe(client, receiver, "bench")
                results["latency"] = await latency(client, receiver, args.rate, args.seconds)
                results["drain"] = await drain(client, receiver, sub, args.backlog)
                results["pull"] = await pull(client)
            except TimeoutError:
                sub = sub or ""
                detail = (await client.get(f"/api/v1/cdc/subscriptions/{sub}")).json()
                log = (await client.get(f"/api/v1/cdc/subscriptions/{sub}/deliveries")).json()
                raise SystemExit(f"timed out: {results} {detail} {log}") from None
            print(json.dumps(results, indent=2))
    finally:
        for p in (proc, worker):
            if p is not None:
                p.terminate()
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default="")
    parser.add_argument("--redis-url", default="")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-round", type=int, default=200)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--backlog", type=int, default=10_000)
    asyncio.run(main(parser.parse_args()))
