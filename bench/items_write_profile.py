"""In-process anatomy of an item write (no server, no network): what a create and a patch cost,
and what runs while they hold the SQLite write lock.

Builds an app on a fresh SQLite file (or ``--database-url``), seeds the shared workload's
``articles`` (``--items`` of them, 200 by default), then for each scenario (create one item, patch
one field of a random item: the bodies of ``bench/items_http_bench.py``) sends sequential
requests through httpx's ASGI transport and reports:

- **calls per request**: cProfile's count of Python calls over ``--profiled`` requests (100)
  after ``--warmup`` (30), divided by the requests: the figure a loaded machine does not change;
- **CPU per request**: ``time.process_time`` over ``--timed`` requests (client included), the
  median of ``--blocks`` blocks;
- **the write section**: the time from the moment the writer's turn is granted (the process's
  write gate and the file lock) to the moment it is given back, wall and CPU (the main
  thread's), the statements sent inside it, and (with cProfile) the Python calls made inside
  it. On SQLite the write section is what every writer of the deployment waits for.

``--top N`` prints the N functions with the most own time inside the write section.
``--concurrency N`` then runs N senders at once for ``--seconds``: requests/s, CPU per request,
and the write section's wall (mean, p50, p99) while other requests' steps share the event loop.
Run it from a worktree, or point ``PYTHONPATH`` at another one to compare two commits with one
venv (``PYTHONPATH=/work/wt/old:/work/wt/old/bench``).

    .venv/bin/python bench/items_write_profile.py
    .venv/bin/python bench/items_write_profile.py --scenarios patch --top 25
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import pstats
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from inprocess import ADMIN_EMAIL, PASSWORD, in_process_app  # noqa: E402
from items_query_bench import FIELDS, make_item  # noqa: E402
from sqlalchemy import event  # noqa: E402

API = "/api/v1"


class WriteSection:
    """Times the write turns of one ``Database`` (wrapping its ``_writer_turn``) and lists the
    statements run inside them."""

    def __init__(self, database: Any) -> None:
        self.database = database
        self.inside = False
        self.recording = False
        self.profiler: cProfile.Profile | None = None
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.statements: list[str] = []
        self.turns = 0
        self.last: pstats.Stats | None = None  # the last profile of write sections
        section = self
        self._w0 = self._c0 = 0.0

        def started() -> None:
            section.inside = True
            if section.recording and section.profiler is not None:
                section.profiler.enable()
            section._w0, section._c0 = time.perf_counter(), time.thread_time()

        def ended() -> None:
            wall, cpu = time.perf_counter() - section._w0, time.thread_time() - section._c0
            if section.recording and section.profiler is not None:
                section.profiler.disable()
            section.inside = False
            if section.recording:
                section.walls.append(wall)
                section.cpus.append(cpu)
                section.turns += 1

        if hasattr(database, "_take_turn"):  # the turn ends when the transaction has
            take, give = database._take_turn, database._give_turn  # noqa: SLF001 - the bench reaches in

            async def timed_take() -> None:
                await take()
                started()

            def timed_give() -> None:
                ended()
                give()

            database._take_turn, database._give_turn = timed_take, timed_give  # noqa: SLF001
        else:  # before: the turn is a context manager around the connection's whole use
            original = database._writer_turn  # noqa: SLF001

            @contextlib.asynccontextmanager
            async def timed_turn() -> Any:
                async with original():
                    started()
                    try:
                        yield
                    finally:
                        ended()

            database._writer_turn = timed_turn  # noqa: SLF001

        def before(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
            if section.inside and section.recording:
                section.statements.append(" ".join(statement.split())[:110])

        event.listen(database.engine.sync_engine, "before_cursor_execute", before)
        # BEGIN IMMEDIATE / COMMIT go through the dialect, not a cursor event: count them apart.
        event.listen(
            database.engine.sync_engine,
            "commit",
            lambda conn: before(None, None, "COMMIT", None, None, False),
        )


async def seed(client: Any, n: int) -> tuple[dict[str, str], list[str]]:
    async def call(method: str, path: str, headers: dict[str, str], **kw: Any) -> Any:
        resp = await client.request(method, API + path, headers=headers, **kw)
        if resp.status_code >= 300:
            raise SystemExit(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
        return resp.json() if resp.content else None

    login = await call("POST", "/auth/login", {}, json={"email": ADMIN_EMAIL, "password": PASSWORD})
    headers = {"Authorization": f"Bearer {login['data']['token']}"}
    await call("POST", "/sites", headers, json={"id": "bench", "name": "Bench"})
    headers["X-Svc-Site"] = "bench"
    await call("POST", "/collections", headers, json={"name": "articles"})
    for name, kind in FIELDS:
        await call("POST", "/fields/articles", headers, json={"field": name, "type": kind})
    rng = random.Random(7)
    ids: list[str] = []
    for start in range(0, n, 100):
        batch = [make_item(rng, i) for i in range(start, min(n, start + 100))]
        for item in batch:
            item.pop("author")
        ids += [row["id"] for row in (await call("POST", "/items/articles", headers, json=batch))["data"]]
    return headers, ids


def request_of(scenario: str, rng: random.Random, ids: list[str]) -> tuple[str, str, Any]:
    base = f"{API}/items/articles"
    if scenario == "create":  # bench/items_http_bench.py's bodies
        return (
            "POST",
            base,
            {
                "title": f"bench-http-created {rng.random()}",
                "views": rng.randint(0, 1000),
                "rating": 2.5,
                "published": True,
                "tags": ["local"],
                "category": "news",
            },
        )
    if scenario == "patch":
        return "PATCH", f"{base}/{rng.choice(ids)}", {"views": rng.randint(0, 1000)}
    raise SystemExit(f"unknown scenario {scenario!r}")


async def send(
    client: Any, headers: dict[str, str], scenario: str, rng: random.Random, ids: list[str]
) -> None:
    method, path, body = request_of(scenario, rng, ids)
    resp = await client.request(method, path, headers=headers, json=body)
    if resp.status_code not in (200, 201):
        raise SystemExit(f"{method} {path}: {resp.status_code} {resp.text[:300]}")


async def measure(
    client: Any,
    headers: dict[str, str],
    section: WriteSection,
    scenario: str,
    ids: list[str],
    args: argparse.Namespace,
) -> dict[str, Any]:
    rng = random.Random(11)
    for _ in range(args.warmup):
        await send(client, headers, scenario, rng, ids)
    # Calls per request: a profiler over whole requests, then (one profiler at a time) another
    # over the write sections alone, on as many more requests.
    whole = cProfile.Profile()
    for _ in range(args.profiled):
        whole.enable()
        await send(client, headers, scenario, rng, ids)
        whole.disable()
    calls = pstats.Stats(whole).total_calls / args.profiled  # type: ignore[attr-defined]
    section.profiler, section.recording = cProfile.Profile(), True
    section.walls.clear(), section.cpus.clear(), section.statements.clear()
    section.turns = 0
    for _ in range(args.profiled):
        await send(client, headers, scenario, rng, ids)
    section.recording = False
    inside = pstats.Stats(section.profiler)
    section.last, section.profiler = inside, None  # the timed blocks below run without one
    inside_calls = inside.total_calls / args.profiled  # type: ignore[attr-defined]
    statements = section.statements[: len(section.statements) // max(1, section.turns)]
    turns = section.turns / args.profiled
    if args.top:
        print(f"--- {scenario}: own time inside the write section, {args.profiled} requests")
        inside.sort_stats("tottime").print_stats(args.top)
    # CPU and the write section's time without a profiler.
    cpu_blocks, wall_blocks, held, held_cpu = [], [], [], []
    for _ in range(args.blocks):
        section.walls.clear(), section.cpus.clear()
        section.recording = True
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(args.timed):
            await send(client, headers, scenario, rng, ids)
        cpu_blocks.append(1000 * (time.process_time() - c0) / args.timed)
        wall_blocks.append(1000 * (time.perf_counter() - w0) / args.timed)
        section.recording = False
        held.append(1000 * statistics.mean(section.walls))
        held_cpu.append(1000 * statistics.mean(section.cpus))
    return {
        "calls_per_request": round(calls),
        "calls_in_write_section": round(inside_calls),
        "write_turns_per_request": round(turns, 2),
        "cpu_ms": round(statistics.median(cpu_blocks), 3),
        "cpu_ms_blocks": [round(c, 3) for c in cpu_blocks],
        "wall_ms": round(statistics.median(wall_blocks), 3),
        "held_ms": round(statistics.median(held), 3),
        "held_cpu_ms": round(statistics.median(held_cpu), 3),
        "statements": statements,
    }


async def concurrent(
    client: Any,
    headers: dict[str, str],
    section: WriteSection,
    scenario: str,
    ids: list[str],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """``--concurrency`` senders for ``--seconds``: requests/s, CPU per request, and the write
    section's wall (mean, p50, p99) and CPU while the other requests' steps share the loop."""
    rng, stop, done = random.Random(13), asyncio.Event(), [0]

    async def sender() -> None:
        while not stop.is_set():
            await send(client, headers, scenario, rng, ids)
            done[0] += 1

    section.walls.clear(), section.cpus.clear()
    section.recording = True
    tasks = [asyncio.create_task(sender()) for _ in range(args.concurrency)]
    c0, w0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(args.seconds)
    stop.set()
    await asyncio.gather(*tasks)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    section.recording = False
    walls = sorted(section.walls)
    return {
        "rps": round(done[0] / wall, 1),
        "cpu_ms": round(1000 * cpu / done[0], 3),
        "held_ms_mean": round(1000 * statistics.mean(walls), 3),
        "held_ms_p50": round(1000 * walls[len(walls) // 2], 3),
        "held_ms_p99": round(1000 * walls[int(len(walls) * 0.99)], 3),
        "held_cpu_ms": round(1000 * statistics.mean(section.cpus), 3),
    }


async def main(args: argparse.Namespace) -> None:
    async with in_process_app(args.database_url) as (app, client):
        kernel = app.kernel
        section = WriteSection(kernel.db)
        headers, ids = await seed(client, args.items)
        out: dict[str, Any] = {"dialect": kernel.db.dialect}
        for scenario in args.scenarios.split(","):
            out[scenario] = result = await measure(client, headers, section, scenario, ids, args)
            print(
                f"{scenario}: {result['calls_per_request']} calls/request "
                f"({result['calls_in_write_section']} in the write section), "
                f"CPU {result['cpu_ms']} ms (blocks {result['cpu_ms_blocks']}), wall {result['wall_ms']} ms, "
                f"write section {result['held_ms']} ms wall / {result['held_cpu_ms']} ms CPU, "
                f"{result['write_turns_per_request']} turns/request",
                flush=True,
            )
            for stmt in result["statements"]:
                print(f"    {stmt}")
            if args.concurrency > 1:
                result["concurrent"] = many = await concurrent(client, headers, section, scenario, ids, args)
                print(
                    f"{scenario}, {args.concurrency} at once: {many['rps']} req/s, CPU {many['cpu_ms']} ms, "
                    f"write section wall mean {many['held_ms_mean']} / p50 {many['held_ms_p50']} / "
                    f"p99 {many['held_ms_p99']} ms, CPU {many['held_cpu_ms']} ms",
                    flush=True,
                )
        print(json.dumps(out))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--scenarios", default="create,patch")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--profiled", type=int, default=100)
    parser.add_argument("--timed", type=int, default=300)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--top", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=1, help="then as many senders at once")
    parser.add_argument("--seconds", type=float, default=8.0, help="how long the concurrent senders run")
    asyncio.run(main(parser.parse_args()))
