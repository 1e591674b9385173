"""Soak (issue 27): minutes of a steady mix against ``svc serve --workers 2`` and ``svc worker`` on
PostgreSQL and Redis, watching for leaks and drift.

The mix, in one site with a ``posts`` collection: item list and get, item writes (create and
patch), GraphQL queries, change-feed pulls (``GET /cdc/events`` after the last cursor), webhook
deliveries of every item event to a receiver on this machine (a webhook subscription), and
``--sockets`` realtime WebSockets (ticket, connect, subscribe to ``posts``, count the event
frames), each closed and opened again with a fresh ticket every ``--reconnect`` seconds.

1. A short ramp (closed loop, 2 to 16 connections, ``--ramp-seconds`` each) measures the peak
   requests/s of the mix; the soak then runs open loop at ``--rate`` (default 80% of that peak):
   a request is started every ``1/rate`` seconds on a pool of 32 connections.
2. Every minute: requests, 5xx, p50/p99, RSS and open file descriptors of each ``svc`` process
   (``/proc``, counted a second after the minute's client connections closed, so only the
   realtime sockets and pooled database connections remain), the database's connections
   (``pg_stat_activity``), frames and deliveries.
3. After the last minute, the load stops and the webhook deliveries drain (up to 60 s).

The verdict (JSON, exit status 1 when a check fails): no 5xx; each process's RSS after the
first (warm-up) minute stays within 10% of its value at the end of that minute; open file
descriptors of the last minute exceed the first minute's by at most ``--fd-slack``, database
connections by at most ``--conn-slack`` (a sample catches the sockets in use at that moment,
so the peak is printed, not judged); the last minute's p99 is at most twice the first
minute's; every written item event reached the webhook receiver; every socket received frames.

    .venv/bin/python bench/soak.py --minutes 10
    .venv/bin/python bench/soak.py --minutes 3 --rate 20

On a PostgreSQL with autovacuum off (this development machine's), the soak vacuums the
database every 60 s itself (``--vacuum-every``), as autovacuum would in a deployment.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from loadclient import (
    API,
    SVC,
    Http,
    Server,
    admin_token,
    open_fds,
    percentile,
    rss_mb,
    server_env,
)
from scale_sites import reset_postgres, run_migrate

SITE = "soak"
ENCRYPTION_KEY = "soak:" + "c29hay1iZW5jaC1rZXktMzItYnl0ZXMtbG9uZyEhISE="  # 32 bytes, bench only
GRAPHQL = {"query": "{ posts(limit: 10, sort: [\"-views\"]) { id title views } }"}
KINDS = ("list", "get", "write", "graphql", "changes")
WEIGHTS = (30, 25, 15, 15, 15)


def pg_connections(url: str) -> int:
    import psycopg
    from sqlalchemy.engine import make_url

    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND pid <> pg_backend_pid()").fetchone()
    return int(row[0])


class Receiver:
    """A webhook endpoint on loopback: answers 200 and keeps the ids of the events delivered."""

    def __init__(self) -> None:
        self.event_ids: set[str] = set()
        self.deliveries = 0
        self.server: asyncio.AbstractServer | None = None

    async def start(self, port: int) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode("latin-1").split("\r\n")[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                body = await reader.readexactly(length) if length else b""
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    for event in json.loads(body)["events"]:
                        self.event_ids.add(str(event["id"]))
                self.deliveries += 1
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the sender closed, or the receiver stops
        finally:
            writer.close()

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


class Soak:
    def __init__(self, args: argparse.Namespace, headers: dict[str, str], ids: list[str]) -> None:
        self.args, self.headers, self.ids = args, headers, ids
        self.rng = random.Random(27)
        self.cursor = ""
        self.written_events: set[str] = set()  # filled from the change feed: every items.* event of posts
        self.writes = 0
        self.frames = [0] * args.sockets
        self.latencies: dict[str, list[float]] = {k: [] for k in KINDS}
        self.errors: dict[int, int] = {}
        self.first_5xx: list[str] = []
        self.stop = False

    def pick(self) -> str:
        return self.rng.choices(KINDS, WEIGHTS)[0]

    async def one(self, conn: Http, kind: str) -> None:
        base = f"{API}/items/posts"
        if kind == "list":
            req = ("GET", base + "?" + urlencode({"limit": 25, "meta": "none", "sort": "-views"}), None)
        elif kind == "get":
            req = ("GET", f"{base}/{self.rng.choice(self.ids)}", None)
        elif kind == "write":
            if self.rng.random() < 0.3:
                req = ("POST", base, {"title": f"Soak {self.rng.random():.6f}", "views": self.rng.randint(0, 999)})
            else:
                req = ("PATCH", f"{base}/{self.rng.choice(self.ids)}", {"views": self.rng.randint(0, 999)})
        elif kind == "graphql":
            req = ("POST", f"{API}/graphql", GRAPHQL)
        else:
            params = {"limit": 500, "collections": "posts"}
            if self.cursor:
                params["cursor"] = self.cursor
            req = ("GET", f"{API}/cdc/events?" + urlencode(params), None)
        t0 = time.perf_counter()
        status, body = await conn.request(*req, headers=self.headers)
        self.latencies[kind].append(time.perf_counter() - t0)
        if status >= 300:
            self.errors[status] = self.errors.get(status, 0) + 1
            if status >= 500 and len(self.first_5xx) < 5:
                self.first_5xx.append(f"{req[0]} {req[1]}: {status} {body[:200]!r}")
        elif kind == "write":
            self.writes += 1
            if req[0] == "POST":
                self.ids.append(json.loads(body)["data"]["id"])
        elif kind == "changes":
            answer = json.loads(body)
            self.cursor = answer["meta"]["nextCursor"]
            self.written_events.update(str(e["id"]) for e in answer["data"] if e["type"].startswith("items."))

    # ------------------------------------------------------------------ closed loop (the ramp)

    async def closed(self, connections: int, seconds: float) -> float:
        done = [0]
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            conn = Http("127.0.0.1", self.args.port)
            while time.perf_counter() < deadline:
                await self.one(conn, self.pick())
                done[0] += 1
            await conn.close()

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(connections)))
        return done[0] / (time.perf_counter() - started)

    # ------------------------------------------------------------------ open loop (the soak)

    async def open_loop(self, rate: float, seconds: float) -> None:
        pool: asyncio.Queue[Http] = asyncio.Queue()
        for _ in range(32):
            pool.put_nowait(Http("127.0.0.1", self.args.port))
        tasks: set[asyncio.Task[None]] = set()
        late = 0

        async def run(kind: str) -> None:
            conn = await pool.get()
            try:
                await self.one(conn, kind)
            finally:
                pool.put_nowait(conn)

        started = time.perf_counter()
        n = 0
        while (now := time.perf_counter()) - started < seconds:
            due = started + n / rate
            if due > now:
                await asyncio.sleep(due - now)
            elif pool.empty():
                late += 1
            task = asyncio.create_task(run(self.pick()))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            n += 1
        if tasks:
            await asyncio.gather(*tasks)
        while not pool.empty():
            await pool.get_nowait().close()
        self.late = late

    # ------------------------------------------------------------------ realtime sockets

    async def socket(self, index: int) -> None:
        import websockets

        conn = Http("127.0.0.1", self.args.port)
        while not self.stop:
            data = await conn.data("POST", f"{API}/realtime/ticket", None, self.headers)
            url = f"ws://127.0.0.1:{self.args.port}{API}/realtime?ticket={data['ticket']}"
            async with websockets.connect(url, compression=None) as ws:
                await ws.send(json.dumps({"type": "subscribe", "collection": "posts"}))
                until = time.perf_counter() + self.args.reconnect * (0.5 + self.rng.random())
                while not self.stop and time.perf_counter() < until:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(1.0):
                            frame = json.loads(await ws.recv())
                            if frame.get("type") == "event":
                                self.frames[index] += 1
        await conn.close()


async def minute_sample(soak: Soak, pids: dict[str, int], args: argparse.Namespace, since: dict[str, Any],
                        receiver: Receiver, minute: int) -> dict[str, Any]:
    lat = {k: list(v) for k, v in soak.latencies.items()}
    for v in soak.latencies.values():
        v.clear()
    every = [x for v in lat.values() for x in v]
    errors_5xx = sum(n for status, n in soak.errors.items() if status >= 500)
    row = {"minute": minute, "requests": len(every), "rps": round(len(every) / 60, 1),
           "5xx": errors_5xx - since["5xx"], "p50_ms": percentile(every, 0.5), "p99_ms": percentile(every, 0.99),
           **{f"{k}_p99_ms": percentile(v, 0.99) for k, v in lat.items()},
           "writes": soak.writes - since["writes"], "frames": sum(soak.frames) - since["frames"],
           "deliveries": receiver.deliveries - since["deliveries"],
           "rss_mb": {name: rss_mb(pid) for name, pid in pids.items()},
           "fds": {name: open_fds(pid) for name, pid in pids.items()},
           "db_connections": pg_connections(args.database_url)}
    since.update({"5xx": errors_5xx, "writes": soak.writes, "frames": sum(soak.frames),
                  "deliveries": receiver.deliveries})
    return row


def verdict(rows: list[dict[str, Any]], soak: Soak, receiver: Receiver, args: argparse.Namespace,
            missing_events: int) -> dict[str, Any]:
    base, measured = rows[0], rows[1:] or rows
    checks: dict[str, Any] = {}
    checks["zero_5xx"] = sum(n for status, n in soak.errors.items() if status >= 500) == 0
    growth = {name: round(max(r["rss_mb"][name] for r in measured) / base["rss_mb"][name] - 1, 3)
              for name in base["rss_mb"] if base["rss_mb"][name]}
    checks["rss_flat_within_10pct"] = all(g <= 0.10 for g in growth.values())
    # A sample catches the sockets and pooled connections in use at that moment (they swing by
    # a few dozen under load): a leak shows as the last minute above the first, not as a peak.
    last_row = rows[-1]
    fd_growth = {name: last_row["fds"][name] - base["fds"][name] for name in base["fds"]}
    fd_peak = {name: max(r["fds"][name] for r in rows) - base["fds"][name] for name in base["fds"]}
    checks["fds_flat"] = all(g <= args.fd_slack for g in fd_growth.values())
    conn_growth = last_row["db_connections"] - base["db_connections"]
    checks["db_connections_flat"] = conn_growth <= args.conn_slack
    first, last = rows[0]["p99_ms"], last_row["p99_ms"]
    checks["p99_stable"] = last <= 2 * first if first else True
    checks["webhooks_all_delivered"] = missing_events == 0
    checks["frames_on_every_socket"] = all(n > 0 for n in soak.frames)
    return {"ok": all(checks.values()), "checks": checks, "rss_growth": growth, "fd_growth": fd_growth,
            "fd_peak_over_first": fd_peak,
            "db_connection_growth": conn_growth, "p99_first_ms": first, "p99_last_ms": last,
            "events_written": len(soak.written_events), "events_missing_at_receiver": missing_events,
            "frames_per_socket": soak.frames, "status_counts": soak.errors, "first_5xx": soak.first_5xx,
            "late_starts": getattr(soak, "late", 0)}


def autovacuum_on(database_url: str) -> bool:
    import psycopg

    with psycopg.connect(database_url) as conn:
        return conn.execute("SHOW autovacuum").fetchone()[0] == "on"


async def vacuum_loop(database_url: str, every: float, soak: Any) -> None:
    """What autovacuum does in production, where this machine's PostgreSQL has it off: a
    ``VACUUM (ANALYZE)`` of the database every ``every`` seconds, so that the hot small tables
    (checkpoints, counts, leases) do not pile up dead rows that no real deployment keeps."""
    import psycopg

    def vacuum() -> None:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute("VACUUM (ANALYZE)")

    while not soak.stop:
        await asyncio.sleep(every)
        if not soak.stop:
            await asyncio.to_thread(vacuum)


async def main(args: argparse.Namespace) -> int:
    data_dir = tempfile.mkdtemp(prefix="svc-soak-")
    env = server_env(args.database_url, args.redis_url, data_dir, SVC_ENCRYPTION_KEY=ENCRYPTION_KEY,
                     SVC_REDIS_NAMESPACE="svcsoak", SVC_RATE_LIMIT_CDC="0", SVC_RATE_LIMIT_REALTIME_TICKETS="0",
                     SVC_OUTBOUND_ALLOW_NETWORKS="127.0.0.1/32")  # its local webhook receiver
    reset_postgres(args.database_url)
    print(f"svc migrate: {run_migrate(env)} s", flush=True)
    server = Server(env, args.port, args.workers, str(Path(data_dir) / "serve.log"))
    await server.start()
    worker_log = open(Path(data_dir) / "worker.log", "ab")  # noqa: SIM115 - the worker's for its life
    worker = subprocess.Popen([SVC, "worker"], env=env, stdout=worker_log, stderr=worker_log, start_new_session=True)
    receiver = Receiver()
    await receiver.start(args.receiver_port)
    try:
        conn = Http("127.0.0.1", args.port)
        token = await admin_token(conn)
        admin = {"Authorization": f"Bearer {token}"}
        await conn.data("POST", f"{API}/sites", {"id": SITE, "name": "Soak"}, admin)
        headers = {**admin, "X-Svc-Site": SITE}
        await conn.data("POST", f"{API}/collections", {"name": "posts", "fields": [
            {"field": "title", "type": "string"}, {"field": "views", "type": "integer"}]}, headers)
        made = await conn.data("POST", f"{API}/items/posts",
                               [{"title": f"Seed {n}", "views": n} for n in range(50)], headers)
        await conn.data("POST", f"{API}/cdc/subscriptions", {
            "name": "soak receiver", "kind": "webhook", "url": f"http://127.0.0.1:{args.receiver_port}/hook",
            "secret": "soak-secret-0123456789", "collections": ["posts"]}, headers)
        soak = Soak(args, headers, [row["id"] for row in made])
        # The subscription starts at the tail: so does the soak's own reading of the change feed,
        # and every items event it reads from here on must reach the receiver.
        cursor, more = "", True
        while more:
            status, body = await conn.request("GET", f"{API}/cdc/events?" + urlencode(
                {"limit": 500, **({"cursor": cursor} if cursor else {})}), None, headers)
            meta = json.loads(body)["meta"]
            cursor, more = meta["nextCursor"], meta["hasMore"]
        soak.cursor = cursor
        await conn.close()
        pids = {f"serve-{n}": pid for n, pid in enumerate(await server.wait_workers())}
        pids["worker"] = worker.pid

        if args.rate:
            rate = args.rate
        else:
            peak = 0.0
            for connections in (2, 4, 8, 16):
                got = await soak.closed(connections, args.ramp_seconds)
                print(f"ramp: {connections} connections, {got:.1f} requests/s", flush=True)
                peak = max(peak, got)
            rate = round(args.rate_share * peak, 1)
            for v in soak.latencies.values():
                v.clear()
            soak.errors_ramp = dict(soak.errors)  # type: ignore[attr-defined]
        vacuum_every = args.vacuum_every if args.vacuum_every >= 0 else (0.0 if autovacuum_on(args.database_url) else 60.0)
        print(f"soak: {args.minutes} minutes at {rate} requests/s, {args.sockets} sockets"
              + (f", VACUUM (ANALYZE) every {vacuum_every:g} s" if vacuum_every else ""), flush=True)
        sockets = [asyncio.create_task(soak.socket(i)) for i in range(args.sockets)]
        if vacuum_every:
            sockets.append(asyncio.create_task(vacuum_loop(args.database_url, vacuum_every, soak)))
        since = {"5xx": 0, "writes": soak.writes, "frames": 0, "deliveries": receiver.deliveries}
        rows = []
        print("minute  req/s    5xx  p50 ms  p99 ms  writes frames deliv  db conns  RSS MB / fds per process",
              flush=True)
        for minute in range(1, args.minutes + 1):
            await soak.open_loop(rate, 60.0)  # ends with its client connections closed
            await asyncio.sleep(1.0)  # so the server has closed them too when the fds are counted
            row = await minute_sample(soak, pids, args, since, receiver, minute)
            rows.append(row)
            procs = "  ".join(f"{n} {row['rss_mb'][n]:.0f}/{row['fds'][n]}" for n in pids)
            print(f"{minute:>6} {row['rps']:>6} {row['5xx']:>6} {row['p50_ms']:>7} {row['p99_ms']:>7} "
                  f"{row['writes']:>7} {row['frames']:>6} {row['deliveries']:>5} {row['db_connections']:>9}  {procs}",
                  flush=True)
        soak.stop = True
        await asyncio.gather(*sockets, return_exceptions=True)
        # Drain: read the change feed to its end, then wait for the receiver to hold every event.
        conn = Http("127.0.0.1", args.port)
        for _ in range(100):
            before = soak.cursor
            await soak.one(conn, "changes")
            if soak.cursor == before:
                break
        await conn.close()
        deadline = time.perf_counter() + 60
        while time.perf_counter() < deadline and not soak.written_events <= receiver.event_ids:
            await asyncio.sleep(0.5)
        missing = len(soak.written_events - receiver.event_ids)
        result = {"rate": rate, "minutes": args.minutes, "workers": args.workers, "sockets": args.sockets,
                  "per_minute": rows, "verdict": verdict(rows, soak, receiver, args, missing)}
    finally:
        await receiver.stop()
        if worker.poll() is None:
            worker.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.wait(30)
        server.stop()
    print(json.dumps(result["verdict"], indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))
    return 0 if result["verdict"]["ok"] else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--rate", type=float, default=0.0, help="requests/s (default: 80%% of the ramp's peak)")
    parser.add_argument("--rate-share", type=float, default=0.8, help="the rate as a share of the ramp's peak")
    parser.add_argument("--vacuum-every", type=float, default=-1.0,
                        help="seconds between VACUUM (ANALYZE) runs (default: 60 when autovacuum is off, else none)")
    parser.add_argument("--ramp-seconds", type=float, default=5.0)
    parser.add_argument("--sockets", type=int, default=4)
    parser.add_argument("--reconnect", type=float, default=20.0, help="seconds a socket lives (about)")
    parser.add_argument("--fd-slack", type=int, default=16)
    parser.add_argument("--conn-slack", type=int, default=10)
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/svc_scale_soak")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/10")
    parser.add_argument("--port", type=int, default=19510)
    parser.add_argument("--receiver-port", type=int, default=19511)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="")
    sys.exit(asyncio.run(main(parser.parse_args())))
