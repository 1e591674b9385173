"""Slow webhook receivers: other subscriptions keep their delivery latency, the API keeps its
latency, and the slow deliveries time out and are retried on schedule.

Starts ``svc serve --workers 2`` (API only) and one ``svc worker`` (the event dispatcher) on
PostgreSQL and Redis. Site ``fast-tenant`` has a webhook subscription whose receiver answers at
once. Three phases of ``--phase-seconds`` each, while a writer creates an item every
``--write-every`` seconds in both sites and a reader lists items in a loop:

1. ``baseline``: only the fast subscription;
2. ``one_slow``: plus one subscription in the same site whose receiver takes ``--slow-seconds``
   (30) per request;
3. ``many_slow``: plus ``--many`` (10) such subscriptions in another site, ``slow-tenant`` (more
   than the dispatcher's concurrent deliveries of one process).

Each phase reports p50/p99 of the API reads and of the fast subscription's delivery latency (from
just before the item's ``POST`` to the delivery's arrival). At the end, the slow subscriptions'
delivery records (``GET /cdc/subscriptions/:id/deliveries``) show each attempt's duration
against ``SVC_CDC_READ_TIMEOUT`` and the gaps between attempts against ``SVC_CDC_RETRY_SCHEDULE``.

    .venv/bin/python bench/faults/slow_webhook.py
    .venv/bin/python bench/faults/slow_webhook.py --slow-seconds 10 --read-timeout 4 --phase-seconds 25

The verdict holds when the fast subscription's p50 in each slow phase stays within
``max(3 x baseline p50, baseline p50 + 1 s)`` and its p99 below half the read timeout (a
delivery queued behind a slow one waits about the whole timeout), the API's read p99 within
``max(3 x baseline, baseline + 0.25 s)``,
every slow attempt failed as a timeout after about the read timeout, and every retry followed
the schedule.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from deliverykit import (  # noqa: E402 - the script's own directory first
    DEFAULT_DATABASE,
    DEFAULT_REDIS,
    Api,
    Deployment,
    Receiver,
    Route,
    clear_redis,
    quantile,
    reset_postgres,
    verdict,
    wait_until,
)

FAST, SLOW = "fast-tenant", "slow-tenant"
SECRET = "slow-webhook-secret-0123456789"
SCHEDULE = (5, 30, 120)


def summary(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "p50_ms": _ms(quantile(values, 0.5, None)), "p99_ms": _ms(quantile(values, 0.99, None)),
            "max_ms": _ms(max(values) if values else None)}


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 1)


def run_phase(name: str, api_base: str, fast: Receiver, seconds: float, every: float,
              sites: list[str]) -> dict[str, Any]:
    """Write and read for ``seconds``; the read latencies and the fast deliveries' latencies."""
    stop = time.monotonic() + seconds
    reads: list[float] = []
    sent: dict[str, float] = {}
    errors: list[str] = []

    def reader() -> None:
        api = Api(api_base, FAST)
        api.token = token
        try:
            for _ in range(int(seconds / 0.01)):  # bounded in count as well as time
                if time.monotonic() >= stop:
                    return
                started = time.monotonic()
                resp = api.call("get", "/items/posts", params={"limit": 10})
                reads.append(time.monotonic() - started)
                if resp.status_code != 200:
                    errors.append(f"read {resp.status_code}")
        finally:
            api.close()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    writer = Api(api_base)
    writer.token = token
    try:
        for i in range(int(seconds / every) + 1):
            if time.monotonic() >= stop:
                break
            for site in sites:
                started = time.monotonic()
                resp = writer.call("post", "/items/posts", site=site, json={"title": f"{name} {i}"})
                if resp.status_code != 201:
                    errors.append(f"write {resp.status_code}")
                elif site == FAST:
                    sent[str(resp.json()["data"]["id"])] = started
            time.sleep(every)
    finally:
        writer.close()
    thread.join(seconds + 30)
    wait_until(lambda: set(sent) <= arrived(fast), 60, "the fast deliveries of the phase", step=0.1)
    first = arrivals(fast)
    latencies = [first[item] - at for item, at in sent.items()]
    return {"phase": name, "api_reads": summary(reads), "fast_delivery": summary(latencies),
            "fast_delivery_s_in_order": [round(v, 1) for v in latencies], "errors": errors[:10]}


def arrivals(receiver: Receiver) -> dict[str, float]:
    """Item id -> when its first delivery arrived."""
    out: dict[str, float] = {}
    for request in receiver.requests("/fast"):
        for event in request.json()["events"]:
            out.setdefault(str(event["itemId"]), request.at)
    return out


def arrived(receiver: Receiver) -> set[str]:
    return set(arrivals(receiver))


token: str | None = None


def main() -> int:
    global token
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=19410)
    parser.add_argument("--fast-port", type=int, default=19411)
    parser.add_argument("--slow-port", type=int, default=19412)
    parser.add_argument("--database-url", default=DEFAULT_DATABASE, help="'' for SQLite")
    parser.add_argument("--redis-url", default=DEFAULT_REDIS, help="'' for none")
    parser.add_argument("--slow-seconds", type=float, default=30.0)
    parser.add_argument("--read-timeout", type=float, default=15.0, help="SVC_CDC_READ_TIMEOUT (documented: 15)")
    parser.add_argument("--phase-seconds", type=float, default=45.0)
    parser.add_argument("--write-every", type=float, default=0.5)
    parser.add_argument("--many", type=int, default=10)
    args = parser.parse_args()
    if args.database_url:
        reset_postgres(args.database_url)
    data_dir = Path(tempfile.mkdtemp(prefix="svc-fault-slow-"))
    with_redis = bool(args.redis_url)
    dep = Deployment(data_dir, args.database_url or None, args.redis_url or None, extra={
        "SVC_EVENTS_POLL_SECONDS": "0.5", "SVC_CDC_READ_TIMEOUT": str(args.read_timeout),
        "SVC_CDC_RETRY_SCHEDULE": ",".join(str(s) for s in SCHEDULE),
        "SVC_EVENTS_LEASE_SECONDS": str(int(args.read_timeout * 2 + 10))})
    fast = Receiver(args.fast_port)
    slow = Receiver(args.slow_port)
    slow.routes["/slow"] = Route(delay=args.slow_seconds)
    api = Api(f"http://127.0.0.1:{args.port}", FAST)
    result: dict[str, Any] = {}
    try:
        dep.serve(args.port, workers=2, SVC_EVENTS_DISPATCH="false" if with_redis else "true")
        if with_redis:
            dep.worker()
        api.login()
        token = api.token
        for site in (FAST, SLOW):
            api.create_site(site)
            api.ok("post", "/collections", 201, site=site, json={"name": "posts", "fields": [
                {"field": "title", "type": "string"}]})
        api.ok("post", "/cdc/subscriptions", 201, json={"name": "fast", "kind": "webhook",
                                                        "url": fast.url("/fast"), "secret": SECRET})
        # Warm up until a delivery arrives within 2 s: the worker's first start migrates, imports
        # and runs its first periodic jobs (whose transactions hold PostgreSQL's visibility
        # horizon, and so the deliveries, back for a while under load).
        for _ in range(30):
            started = time.monotonic()
            warm = str(api.ok("post", "/items/posts", 201, json={"title": "warm-up"})["id"])
            wait_until(lambda w=warm: w in arrived(fast), 180, "a warm-up delivery", step=0.1)
            if arrivals(fast)[warm] - started < 2:
                break
        phases = [run_phase("baseline", api.base, fast, args.phase_seconds, args.write_every, [FAST])]
        slow_subs = [(FAST, api.ok("post", "/cdc/subscriptions", 201, json={
            "name": "slow-0", "kind": "webhook", "url": slow.url("/slow/0"), "secret": SECRET})["id"])]
        phases.append(run_phase("one_slow", api.base, fast, args.phase_seconds, args.write_every, [FAST]))
        for i in range(args.many):
            slow_subs.append((SLOW, api.ok("post", "/cdc/subscriptions", 201, site=SLOW, json={
                "name": f"slow-{i + 1}", "kind": "webhook", "url": slow.url(f"/slow/{i + 1}"),
                "secret": SECRET})["id"]))
        phases.append(run_phase("many_slow", api.base, fast, args.phase_seconds, args.write_every, [FAST, SLOW]))
        # The slow subscriptions' attempts: each a timeout after about the read timeout, and the
        # next one the schedule's delay after the previous ended.
        attempts_out, timing_ok = [], True
        for site, sub_id in slow_subs:
            records = api.ok("get", f"/cdc/subscriptions/{sub_id}/deliveries", site=site,
                             params={"limit": 100})
            records = sorted(records, key=lambda r: r["attemptedAt"])
            durations = [r["durationMs"] / 1000 for r in records]
            timed_out = all("timed out" in (r["error"] or "") for r in records)
            near_timeout = all(args.read_timeout - 0.5 <= d <= args.read_timeout + 5 for d in durations)
            gaps = []
            for n, (a, b) in enumerate(zip(records, records[1:], strict=False)):
                start_a = _epoch(a["attemptedAt"]) - a["durationMs"] / 1000
                start_b = _epoch(b["attemptedAt"]) - b["durationMs"] / 1000
                waited = start_b - _epoch(a["attemptedAt"])  # from the end of one to the next's start
                gaps.append({"after_attempt": n + 1, "waited_s": round(waited, 1),
                             "schedule_s": SCHEDULE[min(n, len(SCHEDULE) - 1)], "start_to_start_s":
                             round(start_b - start_a, 1)})
            on_schedule = all(g["schedule_s"] - 1 <= g["waited_s"] <= g["schedule_s"] + 6 for g in gaps)
            timing_ok &= bool(records) and timed_out and near_timeout and on_schedule
            attempts_out.append({"site": site, "attempts": len(records), "all_timed_out": timed_out,
                                 "durations_s": [round(d, 1) for d in durations], "retry_gaps": gaps,
                                 "on_schedule": on_schedule})
        base = phases[0]
        latency_ok = True
        for phase in phases[1:]:
            fast_p50 = phase["fast_delivery"]["p50_ms"] / 1000
            fast_p99 = phase["fast_delivery"]["p99_ms"] / 1000
            base_p50 = base["fast_delivery"]["p50_ms"] / 1000
            api_p99 = phase["api_reads"]["p99_ms"] / 1000
            api_base = base["api_reads"]["p99_ms"] / 1000
            # Queued behind a slow delivery, a fast one would wait about the read timeout.
            phase["fast_within_bound"] = fast_p50 <= max(3 * base_p50, base_p50 + 1) and \
                fast_p99 < args.read_timeout / 2
            phase["api_within_bound"] = api_p99 <= max(3 * api_base, api_base + 0.25)
            latency_ok &= phase["fast_within_bound"] and phase["api_within_bound"] and not phase["errors"]
        result = verdict("slow_webhook", latency_ok and timing_ok, backend="postgresql+redis" if with_redis else "sqlite",
                         slow_seconds=args.slow_seconds, read_timeout_s=args.read_timeout,
                         retry_schedule_s=list(SCHEDULE), phases=phases, slow_attempts=attempts_out,
                         slow_requests_received=len(slow.requests("/slow")), load=os.getloadavg())
    except Exception as exc:  # noqa: BLE001 - the verdict says what went wrong
        result = verdict("slow_webhook", False, error=f"{type(exc).__name__}: {exc}",
                         worker_log=dep.log_tail("worker"))
    finally:
        api.close()
        dep.stop_all()
        fast.stop()
        slow.stop()
        if args.redis_url:
            clear_redis(args.redis_url, dep.namespace)
    return 0 if result.get("ok") else 1


def _epoch(iso: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


if __name__ == "__main__":
    raise SystemExit(main())
