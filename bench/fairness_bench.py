"""Per-site fairness: does one site sending 10x its rate limit slow the other sites down?

Against a real ``svc serve --workers W`` (SQLite by default; PostgreSQL and Redis with
``--database-url`` and ``--redis-url``), this script

1. creates ``--quiet`` quiet sites and one noisy site, each with a ``posts`` collection of 50
   items, through the API (the instance admin's token works in every site; the item-read limit
   counts per principal *and site*, so each site has its own bucket);
2. **phase "alone"**: each quiet site reads ``GET /items/posts?limit=10&meta=none`` at
   ``--quiet-rate`` requests/s for ``--duration`` seconds, open loop (a request starts on its
   schedule whether or not the previous one has answered, so a slow server is not hidden by a
   client that waits for it);
3. **phase "noisy"**: the same, while the noisy site sends ``--noisy-factor`` (10) times its
   limit (``--limit`` reads per minute, set as ``SVC_RATE_LIMIT_ITEMS_READ``). A per-minute
   limit lets a minute's allowance through at once, so the noisy site first sends until it is
   refused (its first 429), and only then is the steady state measured;
4. reports the quiet sites' p50 and p99 in each phase, the p99's change, the share of the
   noisy site's requests answered 429, and the server's CPU seconds per second (its whole
   process tree, from ``/proc``) in each phase.

Without Redis the limiter counts per worker process, so with ``--workers 2`` the noisy site may
get up to twice its limit through (the rest is 429). The load generator is one asyncio process on
the same machine, so figures move with the machine's load: compare phases of one run.

    .venv/bin/python bench/fairness_bench.py --port 19450
    .venv/bin/python bench/fairness_bench.py --port 19451 \\
        --database-url postgresql://postgres@127.0.0.1:5432/svc_bench_fair --redis-url redis://127.0.0.1:6379/14
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from loadclient import (  # noqa: E402
    Http,
    cpu_seconds,
    percentile,
    refuse_taken,
    server_env,
    stop_server,
    tree,
    wait_healthy,
)

API = "/api/v1"
PASSWORD = "bench-pass-1"
READ = f"{API}/items/posts?limit=10&meta=none"


def fairness_env(args: argparse.Namespace, data_dir: str) -> dict[str, str]:
    env = server_env(args.database_url or "", args.redis_url or "", data_dir,
                     SVC_RATE_LIMIT_ITEMS_READ=str(args.limit), SVC_REDIS_NAMESPACE=f"fair{uuid.uuid4().hex[:8]}")
    if not args.database_url:
        env.pop("SVC_DATABASE_URL")
    if not args.redis_url:
        env.pop("SVC_REDIS_URL", None)
    return env


def fresh_postgres(url: str) -> None:
    """Drop and create the bench database named in ``url`` (never a database of the tests)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    parsed = make_url(url.replace("postgresql://", "postgresql+psycopg://", 1))
    name = parsed.database
    if not name or not name.startswith("svc_bench"):
        raise SystemExit("--database-url must name a database starting with svc_bench (it is recreated)")
    engine = create_engine(parsed.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()


async def call(conn: Http, method: str, target: str, body: Any = None, ok: int = 200) -> Any:
    status, payload = await conn.request(method, target, body)
    if status != ok:
        raise SystemExit(f"{method} {target}: {status} {payload[:300]!r}")
    return json.loads(payload) if payload else None


async def prepare(args: argparse.Namespace) -> tuple[str, list[str], str]:
    """Log in, create the sites with their posts; returns (token, quiet sites, noisy site)."""
    conn = Http(args.host, args.port, {})
    token = (await call(conn, "POST", f"{API}/auth/login", {"email": "admin@example.com",
                                                            "password": PASSWORD}))["data"]["token"]
    await conn.close()
    tag = uuid.uuid4().hex[:6]
    sites = [f"quiet{i}-{tag}" for i in range(args.quiet)] + [f"noisy-{tag}"]
    admin = Http(args.host, args.port, {"Authorization": f"Bearer {token}"})
    for site in sites:
        await call(admin, "POST", f"{API}/sites", {"id": site, "name": site}, ok=201)
        conn = Http(args.host, args.port, {"Authorization": f"Bearer {token}", "X-Svc-Site": site})
        await call(conn, "POST", f"{API}/collections", {"name": "posts"}, ok=201)
        await call(conn, "POST", f"{API}/fields/posts", {"field": "title", "type": "string"}, ok=201)
        await call(conn, "POST", f"{API}/items/posts", [{"title": f"post {i}"} for i in range(50)], ok=201)
        await conn.close()
    await admin.close()
    return token, sites[:-1], sites[-1]


class Sender:
    """Open-loop reads of one site at ``rate`` per second; latencies and statuses kept."""

    def __init__(self, args: argparse.Namespace, token: str, site: str, rate: float) -> None:
        self.args, self.site, self.rate = args, site, rate
        self.headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": site}
        self.idle: list[Http] = []
        self.latencies: list[float] = []
        self.statuses: dict[int, int] = {}
        self.inflight: set[asyncio.Task[None]] = set()

    async def one(self) -> None:
        conn = self.idle.pop() if self.idle else Http(self.args.host, self.args.port, self.headers)
        t0 = time.perf_counter()
        try:
            status, _ = await conn.request("GET", READ)
        except OSError:
            status = 599
            await conn.close()
        else:
            self.idle.append(conn)
        self.latencies.append(time.perf_counter() - t0)
        self.statuses[status] = self.statuses.get(status, 0) + 1

    async def run(self, until: float, offset: float) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time() + offset
        n = 0
        while (due := start + n / self.rate) < until:
            await asyncio.sleep(max(0.0, due - loop.time()))
            task = asyncio.create_task(self.one())
            self.inflight.add(task)
            task.add_done_callback(self.inflight.discard)
            n += 1
        if self.inflight:
            await asyncio.gather(*self.inflight)

    async def close(self) -> None:
        for conn in self.idle:
            await conn.close()


async def phase(args: argparse.Namespace, token: str, quiet: list[str], noisy: str | None,
                server_pid: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    senders = [Sender(args, token, site, args.quiet_rate) for site in quiet]
    noisy_rate = args.noisy_factor * args.limit / 60.0
    loud = Sender(args, token, noisy, noisy_rate) if noisy else None
    loud_run = None
    if loud is not None:
        # A per-minute limit admits a minute's allowance at once: measure the steady state, once
        # the noisy site is refused (its first 429), not the burst before it.
        loud_run = asyncio.create_task(loud.run(loop.time() + args.warmup_max + args.duration, 0.0))
        deadline = loop.time() + args.warmup_max
        while 429 not in loud.statuses and loop.time() < deadline:
            await asyncio.sleep(0.1)
        loud.latencies.clear()
        loud.statuses.clear()
    until = loop.time() + args.duration
    pids = tree(server_pid)
    cpu0, t0 = cpu_seconds(pids), loop.time()
    await asyncio.gather(*(s.run(until, i / (len(senders) * args.quiet_rate)) for i, s in enumerate(senders)))
    server_cpu = (cpu_seconds(pids) - cpu0) / (loop.time() - t0)
    if loud is not None and loud_run is not None:
        measured = dict(loud.statuses), list(loud.latencies)
        loud_run.cancel()
        await asyncio.gather(loud_run, *loud.inflight, return_exceptions=True)
        loud.statuses, loud.latencies = measured[0], measured[1]
    for s in [*senders, *([loud] if loud else [])]:
        await s.close()
    lat = [x for s in senders for x in s.latencies]
    statuses: dict[int, int] = {}
    for s in senders:
        for k, v in s.statuses.items():
            statuses[k] = statuses.get(k, 0) + v
    out: dict[str, Any] = {"quiet_requests": len(lat), "quiet_p50_ms": percentile(lat, 0.5), "quiet_p99_ms": percentile(lat, 0.99),
                           "quiet_statuses": statuses, "server_cpu_s_per_s": round(server_cpu, 3)}
    if loud is not None:
        total = sum(loud.statuses.values())
        out.update(noisy_rate=round(noisy_rate, 1), noisy_requests=total,
                   noisy_429_share=round(loud.statuses.get(429, 0) / total, 3) if total else 0.0,
                   noisy_p50_ms=percentile(loud.latencies, 0.5), noisy_statuses=loud.statuses)
    return out


async def main(args: argparse.Namespace) -> None:
    refuse_taken(args.host, args.port)
    if args.database_url:
        fresh_postgres(args.database_url)
    with tempfile.TemporaryDirectory() as data_dir:
        svc = str(Path(sys.executable).with_name("svc"))
        proc = subprocess.Popen([svc, "serve", "--host", args.host, "--port", str(args.port),
                                 "--workers", str(args.workers)], env=fairness_env(args, data_dir))
        try:
            await wait_healthy(args.host, args.port, proc)
            token, quiet, noisy = await prepare(args)
            await asyncio.sleep(args.settle)
            results: dict[str, list[dict[str, Any]]] = {"alone": [], "noisy": []}
            for rnd in range(args.rounds):
                for name in ("alone", "noisy"):
                    res = await phase(args, token, quiet, noisy if name == "noisy" else None, proc.pid)
                    results[name].append(res)
                    print(f"round {rnd + 1} {name:6s} " + json.dumps(res, separators=(",", ":")), flush=True)
                    await asyncio.sleep(2.0 if name == "noisy" else 0.5)  # let the noisy backlog drain

            def median(name: str, key: str) -> float:
                vals = sorted(r[key] for r in results[name])
                return vals[len(vals) // 2]

            alone, loud = median("alone", "quiet_p99_ms"), median("noisy", "quiet_p99_ms")
            backend = ("postgresql+redis" if args.redis_url else "postgresql") if args.database_url else "sqlite"
            print(f"\n{backend}, {args.workers} workers, {args.quiet} quiet sites at {args.quiet_rate:g}/s, "
                  f"noisy at {args.noisy_factor:g}x a limit of {args.limit}/min, median of {args.rounds} "
                  f"rounds of {args.duration:g} s")
            print(f"quiet p50 {median('alone', 'quiet_p50_ms'):.2f} -> {median('noisy', 'quiet_p50_ms'):.2f} ms, "
                  f"p99 {alone:.2f} -> {loud:.2f} ms ({100 * (loud - alone) / alone:+.0f}%), "
                  f"noisy 429 share {median('noisy', 'noisy_429_share'):.1%}, server CPU "
                  f"{median('alone', 'server_cpu_s_per_s'):.2f} -> {median('noisy', 'server_cpu_s_per_s'):.2f} s/s")
            print(json.dumps({"backend": backend, "results": results}, separators=(",", ":")))
        finally:
            stop_server(proc)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default="", help="postgresql://.../svc_bench_<x> (recreated); "
                        "default: SQLite in a temporary folder")
    parser.add_argument("--redis-url", default="")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8078)
    parser.add_argument("--quiet", type=int, default=10, help="quiet sites")
    parser.add_argument("--quiet-rate", type=float, default=3.0, help="reads per second of each quiet site")
    parser.add_argument("--limit", type=int, default=600, help="SVC_RATE_LIMIT_ITEMS_READ (per minute)")
    parser.add_argument("--noisy-factor", type=float, default=10.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--settle", type=float, default=2.0)
    parser.add_argument("--warmup-max", type=float, default=70.0,
                        help="most seconds the noisy site sends before its first 429")
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
