"""The items API over HTTP, against a real ``svc serve``: requests/s, p50, p99, CPU ms and RSS.

For a database of ``--n`` articles (SQLite file or PostgreSQL, ``--database-url``), this script

1. prepares the database with ``bench/items_query_bench.py --requests 0 --reuse --search-index``
   (schema through the API, items through the API up to 20,000 and by bulk inserts beyond,
   search index rows, ``ANALYZE``; nothing is done when the database already holds them);
2. starts ``svc serve --workers W`` on it (rate limits off, a fresh data folder);
3. runs each scenario for ``--duration`` seconds with ``--concurrency`` keep-alive connections
   after a one-second warm-up, ``--rounds`` times, and reports per scenario the median over
   rounds of requests/s, p50 and p99 latency, server CPU ms per request (user + system time of
   the server's whole process tree, from ``/proc``, divided by the requests served; on
   PostgreSQL also the database server's processes' CPU per request, apart) and the peak RSS
   of the largest worker;
4. soft-deletes the items its ``create`` scenario made (so ``--reuse`` finds ``--n`` again) and
   stops the server.

Scenarios (those of the team's shared workload, ``workload.py``, kept outside this repository,
on the same ``articles``): list (limit 25, ``meta=none``), list with the total (the spec's default
``meta``), filter+sort, get by id, create one, patch one, aggregate count grouped by category, JSON
containment. Page
reads use ``meta=none`` as the shared workload asks of svc, so that both peers do the same work;
``list+total`` shows what counting costs.

The load generator is a small HTTP/1.1 client on asyncio streams (one process, one core), so
on a 2-core machine it competes with the server: compare runs of the same script, and quote
CPU ms per request, which does not depend on the client.

    .venv/bin/python bench/items_http_bench.py --n 10000 --database-url sqlite:////tmp/svc_http_10k.sqlite3
    .venv/bin/python bench/items_http_bench.py --n 1000000 \\
        --database-url postgresql://postgres@127.0.0.1:5432/svc_bench_1m
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from loadclient import (
    Http,
    cpu_seconds,
    database_pids,
    percentile,
    refuse_taken,
    rss_mb,
    server_env,
    stop_server,
    tree,
    wait_healthy,
)

HERE = Path(__file__).resolve().parent
API = "/api/v1"
SITE = "bench"
PASSWORD = "bench-pass-1"  # the one bench/items_query_bench.py gives the admin
CREATED = "bench-http-created"
FILTER = json.dumps({"views": {"_gt": 500}, "category": {"_eq": "news"}}, separators=(",", ":"))
CONTAINS = json.dumps({"tags": {"_json_contains": ["featured"]}}, separators=(",", ":"))
SCENARIOS = ["list", "list+total", "filter+sort", "get", "create", "patch", "aggregate", "jsonfilter"]


# ---------------------------------------------------------------------------- scenarios


class Bench:
    def __init__(self, args: argparse.Namespace, headers: dict[str, str], ids: list[str]) -> None:
        self.args, self.headers, self.ids = args, headers, ids
        self.created: list[str] = []
        self.rng = random.Random(5)

    def next_request(self, scenario: str) -> tuple[str, str, Any]:
        rng, base = self.rng, f"{API}/items/articles"
        if scenario == "list":
            return "GET", base + "?" + urlencode({"limit": 25, "meta": "none"}), None
        if scenario == "list+total":
            return "GET", base + "?" + urlencode({"limit": 25}), None
        if scenario == "filter+sort":
            return "GET", base + "?" + urlencode({"filter": FILTER, "sort": "-rating", "limit": 25,
                                                  "meta": "none"}), None
        if scenario == "get":
            return "GET", f"{base}/{rng.choice(self.ids)}", None
        if scenario == "create":
            return "POST", base, {"title": f"{CREATED} {rng.random()}", "views": rng.randint(0, 1000),
                                  "rating": 2.5, "published": True, "tags": ["local"], "category": "news"}
        if scenario == "patch":
            return "PATCH", f"{base}/{rng.choice(self.ids)}", {"views": rng.randint(0, 1000)}
        if scenario == "aggregate":
            return "GET", base + "?" + urlencode({"aggregate[count]": "*", "groupBy": "category"}), None
        if scenario == "jsonfilter":
            return "GET", base + "?" + urlencode({"filter": CONTAINS, "limit": 25, "meta": "none"}), None
        raise SystemExit(f"unknown scenario {scenario!r}")

    async def run(self, scenario: str, server_pid: int) -> dict[str, Any]:
        args = self.args
        conns = [Http(args.host, args.port, self.headers) for _ in range(args.concurrency)]
        latencies: list[float] = []
        errors: dict[int, int] = {}
        box = {"record": False, "stop": False}

        async def worker(conn: Http) -> None:
            while not box["stop"]:
                method, target, body = self.next_request(scenario)
                t0 = time.perf_counter()
                status, payload = await conn.request(method, target, body)
                elapsed = time.perf_counter() - t0
                if status >= 300:
                    errors[status] = errors.get(status, 0) + 1
                    if len(errors) == 1 and errors[status] == 1:
                        print(f"  {scenario}: {status} {payload[:200]!r}", flush=True)
                elif scenario == "create":
                    self.created.append(json.loads(payload)["data"]["id"])
                if box["record"]:
                    latencies.append(elapsed)

        pids = tree(server_pid)
        workers = [p for p in pids if p != server_pid] or [server_pid]
        db_pids = database_pids() if args.database_url.startswith("postgres") else []
        peak = {p: 0.0 for p in workers}
        tasks = [asyncio.create_task(worker(c)) for c in conns]
        await asyncio.sleep(args.warmup)
        latencies.clear()
        cpu0, db0, box["record"], t0 = cpu_seconds(pids), cpu_seconds(db_pids), True, time.perf_counter()
        while (elapsed := time.perf_counter() - t0) < args.duration:
            for p in workers:
                peak[p] = max(peak[p], rss_mb(p))
            await asyncio.sleep(min(0.25, args.duration - elapsed))
        box["record"] = False
        wall, cpu, served = time.perf_counter() - t0, cpu_seconds(pids) - cpu0, len(latencies)
        db_cpu = cpu_seconds(db_pids) - db0
        box["stop"] = True
        failed = [r for r in await asyncio.gather(*tasks, return_exceptions=True) if isinstance(r, BaseException)]
        if failed:
            raise SystemExit(f"{scenario}: {len(failed)} connections failed: {failed[0]!r}")
        for c in conns:
            await c.close()
        return {"rps": round(served / wall, 1), "p50_ms": percentile(latencies, 0.50),
                "p99_ms": percentile(latencies, 0.99),
                "cpu_ms_per_req": round(1000 * cpu / served, 2) if served else None,
                "db_cpu_ms_per_req": round(1000 * db_cpu / served, 2) if served and db_pids else None,
                "rss_mb_max_worker": round(max(peak.values()), 1), "requests": served, "errors": errors}


# ---------------------------------------------------------------------------- main


async def login_and_ids(args: argparse.Namespace) -> tuple[dict[str, str], list[str]]:
    conn = Http(args.host, args.port, {"X-Svc-Site": SITE})
    status, body = await conn.request("POST", f"{API}/auth/login",
                                      {"email": "admin@example.com", "password": PASSWORD})
    if status != 200:
        raise SystemExit(f"login: {status} {body[:200]!r}")
    headers = {"Authorization": f"Bearer {json.loads(body)['data']['token']}", "X-Svc-Site": SITE}
    await conn.close()
    conn = Http(args.host, args.port, headers)
    ids: list[str] = []
    for page in range(1, 11):  # 2,000 ids from the head of the id order
        status, body = await conn.request("GET", f"{API}/items/articles?" + urlencode(
            {"fields": "id", "limit": 200, "page": page, "sort": "id", "meta": "none"}))
        if status != 200:
            raise SystemExit(f"listing ids: {status} {body[:200]!r}")
        ids.extend(row["id"] for row in json.loads(body)["data"])
    await conn.close()
    return headers, ids


async def cleanup(args: argparse.Namespace, headers: dict[str, str], created: list[str]) -> None:
    todo = list(created)

    async def one() -> None:
        conn = Http(args.host, args.port, headers)
        while todo:
            status, body = await conn.request("DELETE", f"{API}/items/articles/{todo.pop()}")
            if status >= 300 and status != 404:
                raise SystemExit(f"cleanup: {status} {body[:200]!r}")
        await conn.close()

    await asyncio.gather(*(one() for _ in range(8)))
    print(f"deleted the {len(created):,} items the create scenario made")


async def main(args: argparse.Namespace) -> None:
    if not args.no_prepare:
        cmd = [sys.executable, str(HERE / "items_query_bench.py"), "--n", str(args.n), "--requests", "0",
               "--reuse", "--search-index", "--database-url", args.database_url]
        print("prepare:", " ".join(cmd[1:]), flush=True)
        subprocess.run(cmd, check=True)
    scenarios = [s for s in args.scenarios.split(",") if s]
    refuse_taken(args.host, args.port)
    with tempfile.TemporaryDirectory() as data_dir:
        svc = str(Path(sys.executable).with_name("svc"))
        proc = subprocess.Popen([svc, "serve", "--host", args.host, "--port", str(args.port),
                                 "--workers", str(args.workers)], env=server_env(args.database_url, "", data_dir))
        bench = None
        try:
            await wait_healthy(args.host, args.port, proc)
            await asyncio.sleep(args.settle)  # the workers' startup work (search backfill check, ANALYZE)
            headers, ids = await login_and_ids(args)
            bench = Bench(args, headers, ids)
            rounds: dict[str, list[dict[str, Any]]] = {s: [] for s in scenarios}
            for rnd in range(args.rounds):
                for scenario in scenarios:
                    res = await bench.run(scenario, proc.pid)
                    rounds[scenario].append(res)
                    print(f"round {rnd + 1} {scenario:12s} {res['rps']:8.1f} req/s  p50 {res['p50_ms']:8.2f} ms  "
                          f"p99 {res['p99_ms']:8.2f} ms  cpu {res['cpu_ms_per_req']} ms/req  "
                          + (f"+ postgres {res['db_cpu_ms_per_req']} ms/req  " if res["db_cpu_ms_per_req"] else "")
                          + f"rss {res['rss_mb_max_worker']} MB  errors {res['errors'] or '-'}", flush=True)
            summary = {}
            for scenario, runs in rounds.items():
                summary[scenario] = {key: statistics.median(r[key] for r in runs)
                                     for key in ("rps", "p50_ms", "p99_ms", "cpu_ms_per_req", "db_cpu_ms_per_req")
                                     if all(r[key] is not None for r in runs)}
                summary[scenario]["rss_mb_max_worker"] = max(r["rss_mb_max_worker"] for r in runs)
                summary[scenario]["errors"] = sum(sum(r["errors"].values()) for r in runs)
            dialect = "postgresql" if args.database_url.startswith("postgres") else "sqlite"
            print(f"\n{dialect}, {args.n:,} items, {args.workers} workers, {args.concurrency} connections, "
                  f"median of {args.rounds} rounds of {args.duration:g} s")
            print(f"{'scenario':12s} {'req/s':>8s} {'p50 ms':>8s} {'p99 ms':>8s} {'CPU ms/req':>10s} "
                  f"{'+PG ms/req':>10s} {'RSS MB':>7s}")
            for scenario, s in summary.items():
                print(f"{scenario:12s} {s.get('rps', 0):8.1f} {s.get('p50_ms', 0):8.2f} {s.get('p99_ms', 0):8.2f} "
                      f"{s.get('cpu_ms_per_req', 0):10.2f} {s.get('db_cpu_ms_per_req', 0):10.2f} "
                      f"{s['rss_mb_max_worker']:7.1f}" + (f"  ({s['errors']} errors)" if s["errors"] else ""))
            print(json.dumps({"dialect": dialect, "n": args.n, "workers": args.workers,
                              "concurrency": args.concurrency, "summary": summary}, separators=(",", ":")))
        finally:
            if bench is not None and bench.created:
                await cleanup(args, bench.headers, bench.created)
            stop_server(proc)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True,
                        help="sqlite:////path/file.sqlite3 or postgresql://user@host:port/svc_bench_x")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8077)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--no-prepare", action="store_true", help="the database is ready: skip step 1")
    asyncio.run(main(parser.parse_args()))
