"""Flows, in process on SQLite (docs/performance.md, "Flows").

1. Item-create cost with 0 and with 20 active event flows on the collection: the latency of
   ``POST /items/posts`` (in-process ASGI), alternating rounds; in the flows round each create
   starts 20 runs (one ``log`` step each) that the event dispatcher runs on the same event loop
   while the next creates are served, so this is the cost a write pays with flows busy beside it.
2. Latency from commit to the first step of an event flow: creates paced every --pace s; the first
   step (a bench operation registered through ``register_flow_operations``) records when it ran;
   the time from the create's answer (the commit came just before) to that step: p50, p99.
3. Runs per second of a 3-step flow (``transform`` -> ``condition`` -> ``log``) on one worker
   (one event loop): runs created and executed one after another, and 8 at a time.

Usage::

    .venv/bin/python bench/flows_bench.py [--creates 300] [--database-url postgresql://...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from loadclient import quantile  # a sibling module of bench/
from sqlalchemy import func, select

from kernel import hookimpl
from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.base.settings import Settings
from kernel.db.engine import sync_url
from kernel.db.migrate import migration_paths, upgrade
from kernel.hooks.plugins import available_plugins
from plugins.flows import runner
from plugins.flows.api import Operation
from plugins.flows.tables import runs

PASSWORD = "bench-password-1"
SEEN: dict[str, float] = {}


class StampPlugin:
    name = "bench_stamp"

    @staticmethod
    async def stamp(ctx: Any, options: dict[str, Any]) -> dict[str, Any]:
        SEEN[str(ctx.data["$trigger"]["key"])] = time.perf_counter()
        return {}

    @hookimpl
    def register_flow_operations(self, kernel: Any) -> list[Operation]:
        return [Operation("stamp", self.stamp)]


def ms(samples: list[float]) -> str:
    return (f"p50 {statistics.median(samples) * 1000:6.2f} ms  p99 {quantile(samples, 0.99) * 1000:6.2f} ms  "
            f"(n={len(samples)})")


async def create_cost(client: httpx.AsyncClient, h: dict[str, str], creates: int, kernel: Any,
                      redis_url: str) -> None:
    """Part 1: item-create latency with 0 and with 20 active event flows, alternating rounds."""
    where = "a separate svc worker" if redis_url else "this process"
    cpu: dict[bool, list[float]] = {False: [], True: []}  # this process's CPU seconds per create

    async def create_round(n: int, flows_on: bool | None = None) -> list[float]:
        out = []
        c0 = time.process_time()
        for i in range(n):
            t0 = time.perf_counter()
            resp = await client.post("/api/v1/items/posts", headers=h, json={"title": f"t{i}"})
            out.append(time.perf_counter() - t0)
            assert resp.status_code == 201, resp.text
        if flows_on is not None:
            cpu[flows_on].append((time.process_time() - c0) / n)
        return out

    async def idle() -> None:  # until the finished runs stop growing for a second (at most 2 min)
        last, still = -1, 0
        for _ in range(1200):
            await asyncio.sleep(0.1)
            async with kernel.db.connect() as conn:
                done = (await conn.execute(select(func.count()).select_from(runs).where(
                    runs.c.status != "running"))).scalar()
            still = still + 1 if done == last else 0
            last = done
            if still >= 10:
                return

    await create_round(50)  # warm-up
    without: list[float] = []
    with_flows: list[float] = []
    flow_ids = []
    for i in range(20):
        r = await client.post("/api/v1/flows", headers=h, json={
            "name": f"e{i}", "status": "draft", "trigger": "event",
            "triggerOptions": {"collection": "posts", "action": "create", "role": "admin"},
            "graph": {"nodes": [{"id": "a", "operation": "log", "options": {"message": "{{ $trigger.key }}"}}],
                      "edges": []}})
        flow_ids.append(r.json()["data"]["id"])
    for _ in range(3):
        without += await create_round(creates // 3, False)
        for fid in flow_ids:
            await client.patch(f"/api/v1/flows/{fid}", headers=h, json={"status": "active"})
        with_flows += await create_round(creates // 3, True)
        await idle()
        for fid in flow_ids:
            await client.patch(f"/api/v1/flows/{fid}", headers=h, json={"status": "draft"})
    print(f"1. (flow work in {where}) item create, 0 event flows:  {ms(without)}")
    print(f"   item create, 20 event flows: {ms(with_flows)}")
    per_round = {on: " ".join(f"{c * 1000:.2f}" for c in cpu[on]) for on in (False, True)}
    print(f"   CPU of this process per create, ms per round (it serves the API{'' if redis_url else ' and runs the flows'}): "
          f"0 flows: {per_round[False]}; 20 flows: {per_round[True]}")


async def main(creates: int, pace: float, database_url: str, redis_url: str = "") -> None:
    data = Path(tempfile.mkdtemp())
    extra = {"SVC_DATABASE_URL": database_url} if database_url else {}
    worker = None
    if redis_url:  # part 1 only, with the flow work in a separate `svc worker` process
        extra.update({"SVC_REDIS_URL": redis_url, "SVC_EVENTS_DISPATCH": "false",
                      "SVC_REDIS_NAMESPACE": "flowsbench"})
    settings = Settings.from_env(environ={**extra, "SVC_DATA_DIR": str(data), "SVC_ADMIN_PASSWORD": PASSWORD,
                                          "SVC_ADMIN_EMAIL": "admin@example.com", "SVC_JOBS_INPROCESS": "false",
                                          "SVC_LOG_LEVEL": "warning", "SVC_RATE_LIMIT_ITEMS_WRITE": "0",
                                          "SVC_EVENTS_POLL_SECONDS": "0.2"})
    app = create_app(settings, [*available_plugins(), StampPlugin()])
    kernel = app.kernel
    upgrade(sync_url(database_url) if database_url else f"sqlite:///{data / 'svc.sqlite3'}",
            migration_paths(kernel.pm))
    await startup_kernel(kernel)
    if redis_url:
        worker = subprocess.Popen(
            [sys.executable, "-m", "kernel.cli", "worker", "--workers", "1"], cwd=str(Path(__file__).parents[1]),
            env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), "SVC_DATA_DIR": str(data),
                 "SVC_DATABASE_URL": database_url, "SVC_REDIS_URL": redis_url, "SVC_REDIS_NAMESPACE": "flowsbench",
                 "SVC_ADMIN_PASSWORD": PASSWORD, "SVC_LOG_LEVEL": "warning", "SVC_EVENTS_POLL_SECONDS": "0.2"})
    try:
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench")
        token = (await client.post("/api/v1/auth/login", json={"email": "admin@example.com",
                                                               "password": PASSWORD})).json()["data"]["token"]
        h = {"Authorization": f"Bearer {token}", "X-Svc-Site": "default"}
        r = await client.post("/api/v1/collections", headers=h, json={
            "name": "posts", "fields": [{"field": "title", "type": "string"}]})
        assert r.status_code == 201, r.text

        if redis_url:
            await create_cost(client, h, creates, kernel, redis_url)
            await client.aclose()
            return
        r = await client.post("/api/v1/flows", headers=h, json={
            "name": "stamp", "status": "active", "trigger": "event",
            "triggerOptions": {"collection": "posts", "action": "create"},
            "graph": {"nodes": [{"id": "s", "operation": "stamp", "options": {}}], "edges": []}})
        assert r.status_code == 201, r.text
        answered: dict[str, float] = {}
        for i in range(creates):
            resp = await client.post("/api/v1/items/posts", headers=h, json={"title": f"l{i}"})
            answered[resp.json()["data"]["id"]] = time.perf_counter()
            await asyncio.sleep(pace)
        for _ in range(100):
            if len(SEEN) >= creates:
                break
            await asyncio.sleep(0.1)
        lags = [SEEN[k] - t for k, t in answered.items() if k in SEEN]
        print(f"2. commit -> first step of an event flow: {ms(lags)}  ({len(lags)}/{creates} seen)")
        await client.patch(f"/api/v1/flows/{r.json()['data']['id']}", headers=h, json={"status": "draft"})

        r = await client.post("/api/v1/flows", headers=h, json={
            "name": "three", "status": "active", "trigger": "manual",
            "graph": {"nodes": [
                {"id": "t", "operation": "transform", "options": {"json": {"n": "{{ $trigger.n }}"}}},
                {"id": "c", "operation": "condition", "options": {"filter": {"t": {"n": {"_gt": 0}}}}},
                {"id": "l", "operation": "log", "options": {"message": "n={{ $t.n }}"}}],
                "edges": [{"from": "t", "to": "c"}, {"from": "c", "to": "l"}]}})
        flow_id = r.json()["data"]["id"]

        async def one_run(n: int) -> None:
            async with kernel.db.begin() as conn:
                run = await runner.create_run(kernel, conn, "default", flow_id, "manual", {"n": n},
                                              actor={"kind": "user", "userId": None, "instanceAdmin": True},
                                              claimed=True)
            outcome = await runner.execute(kernel, "default", run["id"], {"n": n}, claimed=True)
            assert outcome and outcome["status"] == "succeeded", outcome

        t0 = time.perf_counter()
        for i in range(creates):
            await one_run(i + 1)
        serial = creates / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        for start in range(0, creates, 8):
            await asyncio.gather(*(one_run(i + 1) for i in range(start, min(creates, start + 8))))
        parallel = creates / (time.perf_counter() - t0)
        print(f"3. 3-step flow runs per second on one worker: {serial:6.0f} one at a time, {parallel:6.0f} 8 at a time")
        await create_cost(client, h, creates, kernel, redis_url)

        await client.aclose()
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(10)
        await shutdown_kernel(kernel)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--creates", type=int, default=300)
    parser.add_argument("--pace", type=float, default=0.05, help="seconds between creates in part 2")
    parser.add_argument("--database-url", default="", help="a fresh PostgreSQL database (default: SQLite)")
    parser.add_argument("--redis-url", default="",
                        help="with --database-url: only part 1, the flow work in a separate `svc worker`")
    args = parser.parse_args()
    asyncio.run(main(args.creates, args.pace, args.database_url, args.redis_url))
