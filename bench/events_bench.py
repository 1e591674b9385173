"""The event log's cost and latency, in process (docs/performance.md, "Durable events").

1. CPU per item create (``POST /items/articles`` over ASGI, one item of five fields) with the
   event log and without it (``UnitOfWork.emit`` replaced by a no-op, so no event row is
   written), in alternating rounds so drift hits both alike; no consumer runs meanwhile.
2. The latency from a commit to a durable consumer: a writer commits one event at a time (a
   short random pause between them) and a registered consumer notes when each arrives;
   median and p99 over ``--latency-events`` events.

Usage::

    .venv/bin/python bench/events_bench.py                      # SQLite in a temporary dir
    .venv/bin/python bench/events_bench.py --database-url postgresql://postgres@127.0.0.1/svc_bench
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.base.settings import Settings
from kernel.core.uow import UnitOfWork
from kernel.db.migrate import migration_paths, upgrade
from kernel.events import EventConsumer
from kernel.hooks.hookspecs import hookimpl
from kernel.hooks.plugins import make_plugin_manager

PASSWORD = "bench-password-1"


class LatencyProbe:
    """A plugin with one durable consumer that notes when each event arrives."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.changed = asyncio.Event()

    @hookimpl
    def register_event_consumers(self, kernel: Any) -> list[EventConsumer]:
        async def note(kernel: Any, site_id: str, events: list[Any]) -> None:
            now = time.perf_counter()
            for event in events:
                if event.type == "bench.ping":
                    self.arrived[event.item_id] = now
            self.changed.set()

        return [EventConsumer("latency-probe", note)]


async def create_rounds(client: httpx.AsyncClient, headers: dict[str, str], rounds: int, per_round: int) -> dict[str, list[float]]:
    real_emit = UnitOfWork.emit
    cpu: dict[str, list[float]] = {"with": [], "without": []}
    n = 0
    for _ in range(rounds):
        for mode in ("with", "without"):
            UnitOfWork.emit = real_emit if mode == "with" else (lambda self, *a, **k: None)  # type: ignore[method-assign]
            start = time.process_time()
            for _ in range(per_round):
                n += 1
                resp = await client.post("/api/v1/items/articles", headers=headers, json={
                    "title": f"title {n}", "body": "some body text " * 8, "views": n, "rating": n / 7,
                    "slug": f"slug-{n}"})
                assert resp.status_code == 201, resp.text
            cpu[mode].append((time.process_time() - start) / per_round)
    UnitOfWork.emit = real_emit  # type: ignore[method-assign]
    return cpu


async def latency(kernel: Any, probe: LatencyProbe, site: str, count: int) -> list[float]:
    committed: dict[str, float] = {}
    for i in range(count):
        async with kernel.unit_of_work(site) as uow:
            uow.emit("bench.ping", item_id=str(i))
        committed[str(i)] = time.perf_counter()
        await asyncio.sleep(random.uniform(0.002, 0.01))
    while len(probe.arrived) < count:
        probe.changed.clear()
        await asyncio.wait_for(probe.changed.wait(), 30)
    return sorted(probe.arrived[k] - committed[k] for k in committed)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--per-round", type=int, default=150)
    parser.add_argument("--latency-events", type=int, default=300)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="svc-events-bench-"))
    # The dispatcher starts only for the latency part: the CPU figure is the log's own cost
    # (the event row written in the transaction), not the consumers' work.
    env = {"SVC_DATA_DIR": str(data_dir), "SVC_ADMIN_PASSWORD": PASSWORD, "SVC_JOBS_INPROCESS": "false",
           "SVC_RATE_LIMIT_ITEMS_WRITE": "0", "SVC_LOG_LEVEL": "warning", "SVC_EVENTS_DISPATCH": "false"}
    if args.database_url:
        env["SVC_DATABASE_URL"] = args.database_url
    settings = Settings.from_env(environ=env)
    url = args.database_url or f"sqlite:///{data_dir / 'svc.sqlite3'}"
    upgrade(url, migration_paths(make_plugin_manager()[0]))
    probe = LatencyProbe()
    app = create_app(settings, plugins=[probe])
    kernel = app.kernel
    await startup_kernel(kernel)
    site = f"bench{random.randrange(10**6)}"
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:
            resp = await client.post("/api/v1/auth/login", json={"email": "admin@example.com", "password": PASSWORD})
            headers = {"Authorization": f"Bearer {resp.json()['data']['token']}"}
            assert (await client.post("/api/v1/sites", json={"id": site}, headers=headers)).status_code == 201
            headers["X-Svc-Site"] = site
            assert (await client.post("/api/v1/collections", json={"name": "articles"}, headers=headers)).status_code == 201
            for name, type_ in (("title", "string"), ("body", "text"), ("views", "integer"), ("rating", "float"),
                                ("slug", "string")):
                resp = await client.post("/api/v1/fields/articles", json={"field": name, "type": type_}, headers=headers)
                assert resp.status_code == 201, resp.text
            await create_rounds(client, headers, 1, 30)  # warm up
            cpu = await create_rounds(client, headers, args.rounds, args.per_round)
        with_ms, without_ms = statistics.median(cpu["with"]) * 1000, statistics.median(cpu["without"]) * 1000
        print(f"database: {kernel.db.dialect}")
        print(f"CPU per create, with the event log:    {with_ms:.3f} ms (rounds: "
              + ", ".join(f"{v * 1000:.3f}" for v in cpu["with"]) + ")")
        print(f"CPU per create, without the event log: {without_ms:.3f} ms (rounds: "
              + ", ".join(f"{v * 1000:.3f}" for v in cpu["without"]) + ")")
        print(f"event log cost: {100 * (with_ms - without_ms) / without_ms:+.1f}%")
        kernel.settings.values["events_dispatch"] = True
        await kernel.events.start()
        delays = await latency(kernel, probe, site, args.latency_events)
        print(f"commit -> durable consumer over {len(delays)} events: median {statistics.median(delays) * 1000:.2f} ms, "
              f"p99 {delays[int(len(delays) * 0.99) - 1] * 1000:.2f} ms, max {delays[-1] * 1000:.2f} ms")
    finally:
        await shutdown_kernel(kernel)


if __name__ == "__main__":
    asyncio.run(main())
