"""A worker killed with SIGKILL mid-delivery: nothing is lost, and only unacknowledged
deliveries come twice.

Starts ``svc serve --workers 2`` (API only: ``SVC_EVENTS_DISPATCH=false``) and one ``svc
worker`` (the event dispatcher) on PostgreSQL and Redis. One site has three durable consumers
of the same item events, each delivering to a local recording receiver:

- ``webhook``: a change-feed webhook subscription (signed batches, ``SVC_CDC_WEBHOOK_BATCH``);
- ``store_sync``: an ``rtdb`` store-sync pipeline (``PUT /db/posts/<id>.json?auth=...``);
- ``flow``: an event flow whose ``request`` step posts ``{key, eventId}`` with ``X-Event-Id``.

The receiver answers each request after a short delay, so deliveries are in flight when the
worker is killed with SIGKILL (once every consumer has got part of the items). The checkpoints
are read from the database right after the kill (what was acknowledged); a new worker is
started, and the script waits until every item reached every receiver. The verdict holds when

- no item is missing at any receiver (nothing lost);
- every duplicate is an event the dead worker had delivered but not acknowledged (its position
  is after the consumer's checkpoint at the kill), so duplicates <= in flight;
- every webhook delivery's signature verifies.

    .venv/bin/python bench/faults/worker_kill.py --items 200
    .venv/bin/python bench/faults/worker_kill.py --database-url '' --redis-url ''   # SQLite: serve only

Without Redis (SQLite), ``svc serve --workers 1`` dispatches and is the process killed.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import signal
import sys
import tempfile
import time
from collections import Counter
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
    reset_postgres,
    verdict,
    wait_until,
)

SITE = "faults"
SECRET = "fault-webhook-secret-0123456789"
RTDB_SECRET = "rtdb-fault-secret-0123"


def signature_ok(headers: dict[str, str], body: bytes) -> bool:
    parts = dict(p.split("=", 1) for p in headers.get("x-svc-signature", "").split(",") if "=" in p)
    expected = hmac.new(SECRET.encode(), parts.get("t", "").encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts.get("v1", ""))


def positions(database_url: str | None, data_dir: Path) -> dict[str, tuple[int, int]]:
    """Every event of the site: its id -> (txid, id), the log's order."""
    rows = _query(database_url, data_dir, "select id, txid from svc_events where site_id = %s", (SITE,))
    return {str(i): (int(t), int(i)) for i, t in rows}


def item_events(database_url: str | None, data_dir: Path) -> dict[str, str]:
    rows = _query(database_url, data_dir, "select item_id, id from svc_events where site_id = %s and type = %s",
                  (SITE, "items.create"))
    return {str(item): str(i) for item, i in rows}


def checkpoints(database_url: str | None, data_dir: Path) -> dict[str, tuple[int, int]]:
    rows = _query(database_url, data_dir,
                  "select consumer, cursor_txid, cursor_id from svc_event_checkpoints where site_id = %s", (SITE,))
    return {c: (int(t), int(i)) for c, t, i in rows}


class CheckpointSampler:
    """Samples the site's consumer checkpoints every ``step`` seconds in a thread, so a duplicate
    can be judged against the position acknowledged just before it arrived."""

    def __init__(self, database_url: str | None, data_dir: Path, step: float = 0.1) -> None:
        import threading

        self.samples: list[tuple[float, dict[str, tuple[int, int]]]] = []
        self.stop_flag = threading.Event()
        self.args = (database_url, data_dir)
        self.step = step
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for _ in range(int(3600 / self.step)):  # bounded: an hour at most
            if self.stop_flag.is_set():
                return
            taken = time.monotonic()
            try:
                self.samples.append((taken, checkpoints(*self.args)))
            except Exception:  # noqa: BLE001 - the database is busy for a moment: sample again
                pass
            self.stop_flag.wait(self.step)

    def before(self, at: float, consumer: str) -> tuple[int, int]:
        """The consumer's checkpoint in the last sample taken before ``at``."""
        found = (0, 0)
        for taken, cps in self.samples:
            if taken >= at:
                break
            found = cps.get(consumer, found)
        return found

    def stop(self) -> None:
        self.stop_flag.set()
        self.thread.join(5)


def _query(database_url: str | None, data_dir: Path, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    if database_url:
        import psycopg

        with psycopg.connect(database_url) as conn:
            return list(conn.execute(sql, params).fetchall())
    import sqlite3

    conn = sqlite3.connect(data_dir / "svc.sqlite3", timeout=30)
    try:
        return list(conn.execute(sql.replace("%s", "?"), params).fetchall())
    finally:
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--port", type=int, default=19400, help="svc serve's port")
    parser.add_argument("--receiver-port", type=int, default=19401)
    parser.add_argument("--database-url", default=DEFAULT_DATABASE, help="'' for SQLite")
    parser.add_argument("--redis-url", default=DEFAULT_REDIS, help="'' for none")
    parser.add_argument("--delay", type=float, default=0.15, help="seconds the receiver takes per request")
    parser.add_argument("--kill-at", type=float, default=0.2, help="kill once every consumer got this share")
    parser.add_argument("--timeout", type=float, default=240.0, help="bound of every wait, in seconds")
    args = parser.parse_args()
    if args.database_url:
        reset_postgres(args.database_url)
    data_dir = Path(tempfile.mkdtemp(prefix="svc-fault-kill-"))
    lease = 10
    dep = Deployment(data_dir, args.database_url or None, args.redis_url or None, extra={
        "SVC_EVENTS_LEASE_SECONDS": str(lease), "SVC_EVENTS_POLL_SECONDS": "0.5",
        "SVC_CDC_WEBHOOK_BATCH": "10", "SVC_STORE_SYNC_BATCH": "10", "SVC_CDC_READ_TIMEOUT": "4",
        "SVC_STORE_SYNC_READ_TIMEOUT": "4", "SVC_FLOWS_REQUEST_TIMEOUT": "4",
        "SVC_OUTBOUND_ALLOW_NETWORKS": "127.0.0.1/32", "SVC_JOBS_POLL_MS": "200"})
    receiver = Receiver(args.receiver_port)
    # A webhook delivery carries SVC_CDC_WEBHOOK_BATCH (10) events, the others one item each: the
    # webhook's receiver is ten times slower per request, so all three are part-way together.
    receiver.routes["/hook"] = Route(delay=args.delay * 10)
    for prefix in ("/db", "/flow"):
        receiver.routes[prefix] = Route(delay=args.delay)
    with_redis = bool(args.redis_url)
    api = Api(f"http://127.0.0.1:{args.port}", SITE)
    result: dict[str, Any] = {}
    try:
        # With Redis the API workers only serve and `svc worker` dispatches (the process killed);
        # without it the one `svc serve` worker dispatches and is killed itself.
        serve = dep.serve(args.port, workers=2 if with_redis else 1,
                          SVC_EVENTS_DISPATCH="false" if with_redis else "true")
        api.login()
        api.create_site(SITE)
        api.collection("posts", {"title": "string", "n": "integer"})
        sub = api.ok("post", "/cdc/subscriptions", 201, json={"name": "hook", "kind": "webhook",
                                                              "url": receiver.url("/hook"), "secret": SECRET})
        api.ok("post", "/store-sync/pipelines", 201, json={
            "name": "mirror", "target": "rtdb", "collections": ["posts"], "role": "admin",
            "credentials": {"databaseUrl": receiver.url("/db"), "secret": RTDB_SECRET}})
        api.ok("post", "/flows", 201, json={
            "name": "relay", "status": "active", "trigger": "event",
            "triggerOptions": {"collection": "posts", "action": "create"},
            "graph": {"nodes": [{"id": "send", "operation": "request", "options": {
                "url": receiver.url("/flow"), "method": "POST", "headers": {"X-Event-Id": "{{ $trigger.eventId }}"},
                "body": {"key": "{{ $trigger.key }}", "eventId": "{{ $trigger.eventId }}"}}}], "edges": []}})
        sampler = CheckpointSampler(args.database_url or None, data_dir)
        killed = dep.worker("worker-1") if with_redis else serve
        ids: list[str] = []
        for start in range(0, args.items, 50):
            made = api.ok("post", "/items/posts", 201, json=[{"title": f"post {i}", "n": i}
                                                              for i in range(start, min(args.items, start + 50))])
            ids.extend(str(m["id"]) for m in made)
        expected = set(ids)
        assert len(expected) == args.items, "the items API created fewer items than asked"

        def legs() -> dict[str, set[str]]:
            """Per consumer, the item ids its receiver got."""
            hooks = {str(e["itemId"]) for r in receiver.requests("/hook") for e in r.json()["events"]}
            rtdb = {r.path.rsplit("/", 1)[1].removesuffix(".json") for r in receiver.requests("/db")
                    if r.method == "PUT"}
            flow = {str(r.json()["key"]) for r in receiver.requests("/flow")}
            return {"webhook": hooks & expected, "store_sync": rtdb & expected, "flow": flow & expected}

        share = max(1, int(args.items * args.kill_at))
        wait_until(lambda: all(len(v) >= share for v in legs().values()), args.timeout,
                   "every consumer to be part-way", step=0.02)
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        killed_at = time.monotonic()
        before = {k: len(v) for k, v in legs().items()}
        counts_before = {"webhook": len(receiver.requests("/hook")), "store_sync": len(receiver.requests("/db")),
                         "flow": len(receiver.requests("/flow"))}
        acked = checkpoints(args.database_url or None, data_dir)
        if not with_redis:
            serve.wait(10)
            serve = dep.serve(args.port, workers=1, SVC_EVENTS_DISPATCH="true")
        else:
            dep.worker("worker-2")
        wait_until(lambda: all(v >= expected for v in legs().values()), args.timeout,
                   "every item at every receiver", step=0.1)
        recovered_s = time.monotonic() - killed_at
        time.sleep(lease + 1)  # late duplicates, if any, would land now
        sampler.stop()
        pos = positions(args.database_url or None, data_dir)
        created_event = item_events(args.database_url or None, data_dir)
        flow_consumer = next(c for c in acked if c.startswith("flows.event:"))
        sync_consumer = next(c for c in acked if c.startswith("store_sync:"))
        legs_out: dict[str, Any] = {}
        # What each receiver got, as event ids (the dedupe key), with the count before the kill.
        hook_reqs = receiver.requests("/hook")
        per_leg = {
            "webhook": ([str(e["id"]) for r in hook_reqs for e in r.json()["events"]],
                        [str(e["id"]) for r in hook_reqs[:counts_before["webhook"]] for e in r.json()["events"]],
                        f"cdc.webhook:{sub['id']}"),
            "store_sync": ([created_event[r.path.rsplit("/", 1)[1].removesuffix(".json")]
                            for r in receiver.requests("/db") if r.method == "PUT"],
                           [created_event[r.path.rsplit("/", 1)[1].removesuffix(".json")]
                            for r in receiver.requests("/db")[:counts_before["store_sync"]] if r.method == "PUT"],
                           sync_consumer),
            "flow": ([r.headers.get("x-event-id", "") for r in receiver.requests("/flow")],
                     [r.headers.get("x-event-id", "") for r in receiver.requests("/flow")[:counts_before["flow"]]],
                     flow_consumer),
        }
        arrivals: dict[tuple[str, str], list[float]] = {}
        for r in hook_reqs:
            for e in r.json()["events"]:
                arrivals.setdefault(("webhook", str(e["id"])), []).append(r.at)
        for r in receiver.requests("/db"):
            arrivals.setdefault(("store_sync", created_event[r.path.rsplit("/", 1)[1].removesuffix(".json")]),
                                []).append(r.at)
        for r in receiver.requests("/flow"):
            arrivals.setdefault(("flow", r.headers.get("x-event-id", "")), []).append(r.at)
        all_ok = True
        for leg, (got, got_before, consumer) in per_leg.items():
            cursor = acked.get(consumer, (0, 0))
            in_flight = {e for e in got_before if pos[e] > cursor}
            counts = Counter(got)
            duplicates = {e for e, n in counts.items() if n > 1}
            lost = {created_event[i] for i in expected} - set(got)
            # Every repeat must arrive while its event was still unacknowledged (after the
            # consumer's checkpoint as sampled just before it arrived): a failed attempt retried,
            # or the batch the kill cut short.
            acked_twice = sorted((e for e in duplicates for t in arrivals[(leg, e)][1:]
                                  if sampler.before(t, consumer) >= pos[e]), key=lambda e: pos[e])
            by_kill = {e for e in duplicates if arrivals[(leg, e)][0] < killed_at < arrivals[(leg, e)][-1]}
            by_retry = duplicates - by_kill
            ok = not lost and not acked_twice and by_kill <= in_flight
            all_ok &= ok
            legs_out[leg] = {"ok": ok, "received_items_before_kill": before[leg], "lost": len(lost),
                             "in_flight_at_kill": len(in_flight), "duplicates": len(duplicates),
                             "duplicates_from_the_kill": len(by_kill),
                             "duplicates_from_retries_before_the_kill": len(by_retry),
                             "duplicate_deliveries": sum(n - 1 for n in counts.values() if n > 1),
                             "redelivered_after_ack": acked_twice[:10],
                             "requests": len(receiver.requests({"webhook": "/hook", "store_sync": "/db",
                                                                "flow": "/flow"}[leg]))}
        signed = all(signature_ok(r.headers, r.body) for r in hook_reqs)
        all_ok &= signed
        runs = api.ok("get", "/flows", 200)
        result = verdict("worker_kill", all_ok, items=args.items, backend="postgresql+redis" if with_redis else "sqlite",
                         killed="svc worker" if with_redis else "svc serve --workers 1", lease_seconds=lease,
                         receiver_delay_s=args.delay, recovered_all_s=round(recovered_s, 2),
                         webhook_signatures_ok=signed, legs=legs_out, flows=len(runs), load=os.getloadavg())
    except Exception as exc:  # noqa: BLE001 - the verdict says what went wrong
        result = verdict("worker_kill", False, error=f"{type(exc).__name__}: {exc}",
                         worker_log=dep.log_tail("worker-2") or dep.log_tail("worker-1"))
    finally:
        api.close()
        dep.stop_all()
        receiver.stop()
        if args.redis_url:
            clear_redis(args.redis_url, dep.namespace)
    return 0 if result.get("ok") else 1


if __name__ == "__main__":
    raise SystemExit(main())
