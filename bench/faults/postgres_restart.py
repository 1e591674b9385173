"""Fault: PostgreSQL is restarted under write traffic (``pg_ctl stop -m fast|immediate``, down for
``--down`` seconds, then started again).

Starts a private PostgreSQL 15 cluster and a private Redis (never the machine's shared ones),
``svc serve --workers 2`` and ``svc worker`` on them, and runs ``--clients`` loops that each
create an item (a searchable ``title``) and read it back, before, during and after the restart.
Checks:

- **fail fast**: every answer that is not a success is 503 ``SERVICE_UNAVAILABLE`` in the error
  envelope with a ``Retry-After`` header (never 500, never a dropped connection), and no request
  takes longer than ``--bound`` seconds;
- **recovery without restart**: once PostgreSQL accepts connections, the same ``svc serve`` and
  ``svc worker`` processes answer again (the pools drop dead connections: an idle one is pinged at checkout, and a failed one invalidates the pool),
  and the last ``--clients * 5`` requests all succeed; health is 200 again;
- **no half-applied write**: for every create attempted (whatever its answer), the item row, its
  ``items.create`` event and its search row are all there or none is (read straight from the
  database); every 201 is all there.

Prints one JSON verdict; exits 0 when every check passed. Loopback only, bounded everywhere.

    .venv/bin/python bench/faults/postgres_restart.py --mode fast --down 5
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from faultkit import (  # noqa: E402
    Api,
    PrivatePostgres,
    PrivateRedis,
    Svc,
    base_env,
    verdict,
    wait_until,
    workdir,
)

COLLECTION = "posts"
PHASES = ("before", "down", "starting", "after")


class Traffic:
    """Create-and-read loops; every request's phase, status, code, Retry-After and latency."""

    def __init__(self, base: str, headers: dict[str, str], clients: int) -> None:
        self.base = base
        self.headers = headers
        self.clients = clients
        self.phase = "before"
        self.stop_at = float("inf")
        self.records: list[dict[str, Any]] = []
        self.attempted: list[tuple[str, str, str]] = []  # (item id, phase, outcome)

    def record(self, method: str, started: float, resp: httpx.Response | None, error: str | None) -> dict[str, Any]:
        entry: dict[str, Any] = {"phase": self.phase, "method": method,
                                 "ms": round((time.perf_counter() - started) * 1000, 1), "at": time.monotonic()}
        if resp is None:
            entry["status"] = "transport-error"
            entry["error"] = error
        else:
            entry["status"] = resp.status_code
            if resp.status_code >= 400:
                try:
                    body = resp.json()
                    entry["code"] = body["errors"][0]["code"]
                    entry["envelope"] = set(body) == {"errors"} and body["errors"][0]["extensions"]["code"] == entry["code"]
                except (ValueError, KeyError, IndexError, TypeError):
                    entry["code"], entry["envelope"] = None, False
                entry["retryAfter"] = resp.headers.get("Retry-After")
        self.records.append(entry)
        return entry

    async def loop(self, http: httpx.AsyncClient, n: int) -> None:
        for i in range(200_000):
            if time.monotonic() >= self.stop_at:
                return
            item_id = f"pg-{n}-{i}-{uuid.uuid4().hex[:6]}"
            started = time.perf_counter()
            try:
                resp = await http.post(f"/items/{COLLECTION}", json={"id": item_id, "title": f"restart probe {n} {i}"})
                entry = self.record("POST", started, resp, None)
            except httpx.HTTPError as exc:
                entry = self.record("POST", started, None, type(exc).__name__)
            self.attempted.append((item_id, entry["phase"], str(entry["status"])))
            created = entry["status"] == 201
            started = time.perf_counter()
            try:
                resp = await http.get(f"/items/{COLLECTION}/{item_id}")
                entry = self.record("GET", started, resp, None)
            except httpx.HTTPError as exc:
                entry = self.record("GET", started, None, type(exc).__name__)
            if entry["status"] == 404 and not created:
                entry["expected"] = True  # the create did not happen, so the read finds nothing
            if entry["status"] != 200 and not entry.get("expected"):
                await asyncio.sleep(0.1)  # a client backing off a little, so the loop is not a spin

    async def run(self) -> None:
        limits = httpx.Limits(max_connections=self.clients, max_keepalive_connections=self.clients)
        async with httpx.AsyncClient(base_url=self.base, limits=limits, timeout=60, headers=self.headers) as http:
            await asyncio.gather(*(self.loop(http, n) for n in range(self.clients)))


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    ms = sorted(r["ms"] for r in records)
    return {
        "requests": len(records),
        "statuses": dict(Counter(str(r["status"]) + (f" {r['code']}" if r.get("code") else "") for r in records)),
        "p50_ms": round(statistics.median(ms), 1) if ms else None,
        "p99_ms": ms[int(0.99 * (len(ms) - 1))] if ms else None,
        "max_ms": ms[-1] if ms else None,
    }


async def amain(args: argparse.Namespace) -> int:
    wd = workdir("pg")
    redis = PrivateRedis(args.redis_port, wd)
    pg = PrivatePostgres(args.pg_port, wd)
    env = base_env(wd, SVC_REDIS_URL=redis.url, SVC_DATABASE_URL=pg.url("svc"), SVC_RATE_LIMIT_ITEMS_WRITE="0",
                   SVC_RATE_LIMIT_ITEMS_READ="0")
    serve = Svc("serve", ["serve", "--port", str(args.port), "--workers", "2"], env, wd)
    worker = Svc("worker", ["worker"], env, wd)
    base = f"http://127.0.0.1:{args.port}/api/v1"
    api = Api(base.removesuffix("/api/v1"), timeout=10)
    checks: dict[str, bool] = {}
    figures: dict[str, Any] = {"mode": args.mode}
    try:
        redis.start()
        pg.init()
        pg.start()
        pg.createdb("svc")
        serve.start()
        api.wait_healthy(180)
        worker.start()
        channel = f"{env['SVC_REDIS_NAMESPACE']}:bus"
        wait_until(lambda: redis.subscribers(channel) >= 3, 180, "svc worker to subscribe to the bus", step=0.5)
        api.login()
        site = api.make_site(COLLECTION)
        pids = (serve.proc.pid, worker.proc.pid)

        traffic = Traffic(base, api.headers(), args.clients)
        runner = asyncio.create_task(traffic.run())
        await asyncio.sleep(args.before)

        # ---------------------------------------------------------------- the restart
        log_mark = len(serve.log())
        traffic.phase = "down"
        stopped_at = time.monotonic()
        await asyncio.to_thread(pg.stop, args.mode)
        stop_took = time.monotonic() - stopped_at
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            health_down = await http.get("/utils/health")
            await asyncio.sleep(max(0.0, args.down - (time.monotonic() - stopped_at)))
            traffic.phase = "starting"
            started_at = time.monotonic()
            await asyncio.to_thread(pg.start)
            accepting_at = time.monotonic()
            traffic.phase = "after"
            await asyncio.sleep(args.after)
            traffic.stop_at = time.monotonic()
            await runner
            health_after = await http.get("/utils/health")
        log = serve.log()[log_mark:]

        # ---------------------------------------------------------------- what the database holds
        def ids(sql: str) -> set[str]:
            return set(filter(None, pg.psql("svc", sql).splitlines()))

        items = ids(f"SELECT id FROM svc_items WHERE site_id = '{site}'")
        events = ids(f"SELECT item_id FROM svc_events WHERE site_id = '{site}' AND type = 'items.create'")
        searched = ids(f"SELECT DISTINCT item_id FROM svc_search WHERE site_id = '{site}'")
        outcomes: Counter[str] = Counter()
        half: list[str] = []
        lost_201: list[str] = []
        for item_id, _phase, status in traffic.attempted:
            present = (item_id in items, item_id in events, item_id in searched)
            if all(present):
                outcomes[f"{status}: all there"] += 1
            elif not any(present):
                outcomes[f"{status}: nothing there"] += 1
            else:
                half.append(f"{item_id} {status} item={present[0]} event={present[1]} search={present[2]}")
            if status == "201" and not all(present):
                lost_201.append(item_id)

        # ---------------------------------------------------------------- verdict
        records = traffic.records
        failures = [r for r in records if r["status"] not in (200, 201) and not r.get("expected")]
        outage = [r for r in records if r["phase"] in ("down", "starting")]
        after = [r for r in records if r["phase"] == "after"]
        first_ok = next((r["at"] for r in after if r["status"] in (200, 201)), None)
        tail = records[-args.clients * 5:]
        checks["every failure is 503 SERVICE_UNAVAILABLE in the envelope with Retry-After"] = all(
            r["status"] == 503 and r.get("code") == "SERVICE_UNAVAILABLE" and r.get("envelope") and r.get("retryAfter")
            for r in failures)
        checks["no 500 and no dropped connection"] = not any(
            r["status"] == "transport-error" or (isinstance(r["status"], int) and r["status"] >= 500 and r["status"] != 503)
            for r in records)
        checks[f"no request took longer than {args.bound:g} s"] = max(r["ms"] for r in records) <= args.bound * 1000
        checks["the restart was seen (503s while PostgreSQL was down)"] = any(r["status"] == 503 for r in outage)
        checks["health is 503 while down and 200 after"] = health_down.status_code == 503 and health_after.status_code == 200
        checks["recovery without restart: the last requests all succeed"] = bool(tail) and all(
            r["status"] in (200, 201) or r.get("expected") for r in tail)
        checks["recovery without restart: the same svc serve and svc worker processes"] = (
            serve.alive() and worker.alive() and (serve.proc.pid, worker.proc.pid) == pids)
        checks["no half-applied write: item, event and search row all there or none"] = not half
        checks["every 201 is all there"] = not lost_201
        figures.update({
            "stop_seconds": round(stop_took, 2),
            "down_seconds": round(accepting_at - stopped_at, 2),
            "start_seconds": round(accepting_at - started_at, 2),
            "first_success_after_start_s": round(first_ok - accepting_at, 2) if first_ok else None,
            "phases": {p: summary([r for r in records if r["phase"] == p]) for p in PHASES},
            "slowest_failure_ms": max((r["ms"] for r in failures), default=None),
            "creates_attempted": len(traffic.attempted),
            "write_outcomes": dict(outcomes),
            "half_applied": half[:10],
            "health_while_down": health_down.json().get("errors", [{}])[0].get("message"),
            "log_database_unavailable_lines": log.count("database unavailable"),
            "log_errors": log.count(" ERROR "),
            "worker_log_errors": worker.log().count(" ERROR "),
            "worker_jobs_put_back": worker.log().count("put back without spending an attempt"),
        })
        if args.keep:
            figures["workdir"] = str(wd)
    finally:
        worker.stop()
        serve.stop()
        redis.stop()
        pg.stop("immediate")
    code = verdict("postgres_restart", checks, figures)
    if not args.keep:
        shutil.rmtree(wd, ignore_errors=True)
    return code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("fast", "immediate"), default="fast", help="pg_ctl stop -m MODE")
    parser.add_argument("--down", type=float, default=5.0, help="seconds from the stop to the start (default 5)")
    parser.add_argument("--before", type=float, default=3.0, help="seconds of traffic before the restart")
    parser.add_argument("--after", type=float, default=8.0, help="seconds of traffic after PostgreSQL is back")
    parser.add_argument("--bound", type=float, default=10.0, help="longest acceptable request, seconds")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--port", type=int, default=19351, help="svc serve's port")
    parser.add_argument("--redis-port", type=int, default=16390)
    parser.add_argument("--pg-port", type=int, default=55433)
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, database) afterwards")
    return asyncio.run(amain(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
