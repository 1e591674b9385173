"""Fault: PostgreSQL or Redis hangs (``kill -STOP`` of every process of the server) for ``--pause``
seconds under write traffic, then is continued (``kill -CONT``).

A paused server keeps its connections open and its kernel still accepts new ones, so nothing is
refused or reset: only the client-side timeouts (``SVC_DB_COMMAND_TIMEOUT``,
``SVC_DB_CONNECT_TIMEOUT``, ``SVC_DB_POOL_TIMEOUT``, ``SVC_REDIS_TIMEOUT``) stand between a
request and waiting forever. Starts a private PostgreSQL 15 cluster and a private Redis (never
the machine's shared ones), ``svc serve --workers 2`` and ``svc worker --metrics-port`` on them,
and runs ``--clients`` create-then-read loops before, during and after the pause. Checks:

- **bounded**: no request takes longer than ``--bound`` seconds, none is dropped or 500;
- ``--target postgres``: every failure is 503 ``SERVICE_UNAVAILABLE`` in the envelope with
  ``Retry-After``, and there are such 503s during the pause; ``--target redis``: no failure at
  all (the per-process fallbacks serve), and ``svc_redis_up`` shows the outage on ``/metrics``;
- **recovery without restart**: after the CONT the same processes answer, the last requests all
  succeed, and for Redis every ``svc_redis_up`` is 1 again;
- ``svc worker``'s ``/metrics`` answers during the pause too (its database figures are a
  snapshot read on its own loop).

Prints one JSON verdict; exits 0 when every check passed. Loopback only, bounded everywhere.

    .venv/bin/python bench/faults/hang.py --target postgres --pause 15
    .venv/bin/python bench/faults/hang.py --target redis --pause 15
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
import time
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
    metric_values,
    tree,
    verdict,
    wait_until,
    workdir,
)
from postgres_restart import COLLECTION, Traffic, summary  # noqa: E402

PHASES = ("before", "paused", "after")


def postgres_pids(pg: PrivatePostgres) -> list[int]:
    """The postmaster (first line of ``postmaster.pid``) and every process it started."""
    postmaster = int((pg.data / "postmaster.pid").read_text().split()[0])
    return tree(postmaster)  # it and every process it started


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


async def scrape(url: str, timeout: float = 5.0) -> tuple[int | str, float, str]:
    """(status or the transport error's name, seconds, text) of one GET."""
    started = time.monotonic()
    try:
        async with httpx.AsyncClient(timeout=timeout) as http:
            resp = await http.get(url)
        return resp.status_code, time.monotonic() - started, resp.text
    except httpx.HTTPError as exc:
        return type(exc).__name__, time.monotonic() - started, ""


async def amain(args: argparse.Namespace) -> int:
    wd = workdir(f"hang-{args.target}")
    redis = PrivateRedis(args.redis_port, wd)
    pg = PrivatePostgres(args.pg_port, wd)
    env = base_env(wd, SVC_REDIS_URL=redis.url, SVC_DATABASE_URL=pg.url("svc"), SVC_RATE_LIMIT_ITEMS_WRITE="0",
                   SVC_RATE_LIMIT_ITEMS_READ="0", SVC_DB_COMMAND_TIMEOUT=str(args.command_timeout),
                   SVC_DB_CONNECT_TIMEOUT="2", SVC_DB_POOL_TIMEOUT=str(args.command_timeout),
                   SVC_REDIS_TIMEOUT=str(args.redis_timeout), SVC_METRICS_REFRESH_SECONDS="2")
    serve = Svc("serve", ["serve", "--port", str(args.port), "--workers", "2"], env, wd)
    worker = Svc("worker", ["worker", "--metrics-port", str(args.metrics_port)], env, wd)
    base = f"http://127.0.0.1:{args.port}/api/v1"
    worker_metrics = f"http://127.0.0.1:{args.metrics_port}/metrics"
    api = Api(base.removesuffix("/api/v1"), timeout=10)
    checks: dict[str, bool] = {}
    figures: dict[str, Any] = {"target": args.target, "pause_s": args.pause,
                               "command_timeout_s": args.command_timeout, "redis_timeout_s": args.redis_timeout}
    paused: list[int] = []
    try:
        redis.start()
        pg.init()
        pg.start()
        pg.createdb("svc")
        serve.start()
        api.wait_healthy(180)
        worker.start()
        wait_until(lambda: httpx.get(worker_metrics, timeout=2).status_code == 200, 180, "svc worker's /metrics")
        api.login()
        site = api.make_site(COLLECTION)
        pids = (serve.proc.pid, worker.proc.pid)
        figures["site"] = site

        traffic = Traffic(base, api.headers(), args.clients)
        runner = asyncio.create_task(traffic.run())
        await asyncio.sleep(args.before)

        # ---------------------------------------------------------------- the pause
        log_mark = len(serve.log())
        paused = postgres_pids(pg) if args.target == "postgres" else [redis.proc.pid]
        traffic.phase = "paused"
        signal_all(paused, signal.SIGSTOP)
        paused_at = time.monotonic()
        await asyncio.sleep(min(args.pause / 2, args.command_timeout + 3))
        worker_during = await scrape(worker_metrics)
        serve_during = await scrape(f"http://127.0.0.1:{args.port}/metrics", timeout=args.bound)
        await asyncio.sleep(max(0.0, args.pause - (time.monotonic() - paused_at)))
        signal_all(paused, signal.SIGCONT)
        paused = []
        continued_at = time.monotonic()
        traffic.phase = "after"
        await asyncio.sleep(args.after)
        traffic.stop_at = time.monotonic()
        await runner
        redis_up_after: dict[str, float] = {}
        if args.target == "redis":  # each serve worker tries Redis again within a second of a call
            for _ in range(20):
                status, _s, text = await scrape(f"http://127.0.0.1:{args.port}/metrics")
                redis_up_after = metric_values(text, "svc_redis_up") if status == 200 else {}
                if redis_up_after and min(redis_up_after.values()) == 1:
                    break
                await asyncio.sleep(0.5)
        log = serve.log()[log_mark:]

        # ---------------------------------------------------------------- verdict
        records = traffic.records
        failures = [r for r in records if r["status"] not in (200, 201) and not r.get("expected")]
        during = [r for r in records if r["phase"] == "paused"]
        after = [r for r in records if r["phase"] == "after"]
        first_ok = next((r["at"] for r in after if r["status"] in (200, 201)), None)
        tail = records[-args.clients * 5:]
        checks[f"no request took longer than {args.bound:g} s"] = max(r["ms"] for r in records) <= args.bound * 1000
        checks["no 500 and no dropped connection"] = not any(
            r["status"] == "transport-error" or (isinstance(r["status"], int) and r["status"] >= 500 and r["status"] != 503)
            for r in records)
        if args.target == "postgres":
            checks["every failure is 503 SERVICE_UNAVAILABLE in the envelope with Retry-After"] = all(
                r["status"] == 503 and r.get("code") == "SERVICE_UNAVAILABLE" and r.get("envelope")
                and r.get("retryAfter") for r in failures)
            checks["the hang was seen (503s while PostgreSQL was paused)"] = any(r["status"] == 503 for r in during)
        else:
            checks["no failure at all while Redis hangs (per-process fallbacks)"] = not failures
            redis_up_during = metric_values(serve_during[2], "svc_redis_up")
            checks["svc_redis_up shows the outage during the pause"] = bool(redis_up_during) and min(
                redis_up_during.values()) == 0
            checks["every svc_redis_up is 1 again after the CONT"] = bool(redis_up_after) and min(
                redis_up_after.values()) == 1
            figures["svc_redis_up_during"] = redis_up_during
        checks["recovery without restart: the last requests all succeed"] = bool(tail) and all(
            r["status"] in (200, 201) or r.get("expected") for r in tail)
        checks["recovery without restart: the same svc serve and svc worker processes"] = (
            serve.alive() and worker.alive() and (serve.proc.pid, worker.proc.pid) == pids)
        checks["svc worker's /metrics answers during the pause"] = worker_during[0] == 200 and bool(
            metric_values(worker_during[2], "svc_job_worker_slots"))
        figures.update({
            "phases": {p: summary([r for r in records if r["phase"] == p]) for p in PHASES},
            "slowest_failure_ms": max((r["ms"] for r in failures), default=None),
            "first_success_after_cont_s": round(first_ok - continued_at, 2) if first_ok else None,
            "worker_metrics_during": {"status": worker_during[0], "seconds": round(worker_during[1], 2),
                                      "refresh_failures": metric_values(worker_during[2],
                                                                        "svc_metrics_refresh_failures_total")},
            "serve_metrics_during": {"status": serve_during[0], "seconds": round(serve_during[1], 2)},
            "log_database_unavailable_lines": log.count("database unavailable"),
            "log_redis_unreachable_lines": log.count("Redis unreachable"),
            "log_errors": log.count(" ERROR "),
            "worker_log_errors": worker.log().count(" ERROR "),
        })
        if args.keep:
            figures["workdir"] = str(wd)
    finally:
        signal_all(paused, signal.SIGCONT)
        worker.stop()
        serve.stop()
        redis.stop()
        pg.stop("immediate")
    code = verdict(f"hang_{args.target}", checks, figures)
    if not args.keep:
        shutil.rmtree(wd, ignore_errors=True)
    return code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=("postgres", "redis"), required=True)
    parser.add_argument("--pause", type=float, default=15.0, help="seconds between STOP and CONT (default 15)")
    parser.add_argument("--before", type=float, default=3.0, help="seconds of traffic before the pause")
    parser.add_argument("--after", type=float, default=8.0, help="seconds of traffic after the CONT")
    parser.add_argument("--command-timeout", type=float, default=3.0,
                        help="SVC_DB_COMMAND_TIMEOUT and SVC_DB_POOL_TIMEOUT for the run (default 3)")
    parser.add_argument("--redis-timeout", type=float, default=1.0, help="SVC_REDIS_TIMEOUT for the run (default 1)")
    parser.add_argument("--bound", type=float, default=15.0, help="longest acceptable request, seconds")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--port", type=int, default=19361, help="svc serve's port")
    parser.add_argument("--metrics-port", type=int, default=19362, help="svc worker's metrics port")
    parser.add_argument("--redis-port", type=int, default=16392)
    parser.add_argument("--pg-port", type=int, default=55435)
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, database) afterwards")
    return asyncio.run(amain(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
