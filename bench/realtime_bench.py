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

Linux only (/proc). Loopback traffic only; it stops by itself. Goals (issue 14): p99 under
100 ms, under 50 KB per idle socket.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from loadclient import Http, WsClient

ROOT = Path(__file__).resolve().parents[1]
SVC = str(ROOT / ".venv" / "bin" / "svc")
PASSWORD = "bench-pass-1"


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        one = todo.pop()
        try:
            kids = [int(k) for k in Path(f"/proc/{one}/task/{one}/children").read_text().split()]
        except OSError:
            kids = []
        out.extend(kids)
        todo.extend(kids)
    return out


def rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of the processes (from /proc), those gone counting 0."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def main(args: argparse.Namespace) -> int:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    port = free_port()
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
    sockets = []
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            for _ in range(600):
                try:
                    if (await http.get("/utils/health")).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.2)
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
            workers = [server.pid, *descendants(server.pid)]
            await asyncio.sleep(1.0)
            before = rss_kib(workers)

            sent: dict[str, float] = {}
            answered: dict[str, float] = {}
            arrivals: list[tuple[str, float]] = []
            latencies: list[float] = []
            received = 0

            wall_arrivals: list[tuple[str, float]] = []
            created: dict[str, float] = {}  # the item's createdAt (server clock, set before commit)

            def on_frame(raw: str) -> None:
                nonlocal received
                now = time.perf_counter()
                wall = time.time()
                frame = json.loads(raw)
                if frame.get("type") == "event":
                    started = sent.get(frame["itemId"])
                    if started is not None:
                        latencies.append((now - started) * 1000)
                        arrivals.append((frame["itemId"], now))
                        wall_arrivals.append((frame["itemId"], wall))
                        received += 1

            per_site = args.connections // args.sites
            t_open = time.perf_counter()
            warm = max(args.sites, args.connections // 10)  # the first 10% pay one-time costs
            for i in range(args.connections):
                if i == warm:
                    await asyncio.sleep(1.0)
                    before = rss_kib(workers)
                site = sites[i % args.sites]
                ticket = (await http.post("/realtime/ticket", headers={**admin, "X-Svc-Site": site})).json()["data"]
                replies: asyncio.Queue[str] = asyncio.Queue()
                ws = await WsClient.connect("127.0.0.1", port, f"/api/v1/realtime?ticket={ticket['ticket']}",
                                            replies.put_nowait)
                ws.send_text(json.dumps({"type": "subscribe", "collection": "posts"}))
                assert json.loads(await asyncio.wait_for(replies.get(), 10))["type"] == "subscribed"
                ws.on_text = on_frame
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
                site = sites[n % args.sites]
                item_id = f"w{n}-{uuid.uuid4().hex[:8]}"
                conn = await pool.get()
                try:
                    started = time.perf_counter()
                    sent[item_id] = started
                    status, body = await conn.request("POST", "/api/v1/items/posts", {"id": item_id, "title": f"t{n}"},
                                                      {**admin, "X-Svc-Site": site})
                finally:
                    pool.put_nowait(conn)
                answered[item_id] = time.perf_counter()
                write_ms.append((answered[item_id] - started) * 1000)
                assert status == 201, body
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
            expected = writes * per_site
            deadline = time.perf_counter() + 10
            while received < expected and time.perf_counter() < deadline:
                await asyncio.sleep(0.05)
            elapsed = time.perf_counter() - t0
            server_cpu = cpu_seconds(workers) - server_cpu0
            client_cpu = time.process_time() - client_cpu0
            while not pool.empty():
                await pool.get_nowait().close()
        # Beyond the write's own answer: how much later than the HTTP response the frame came
        # (0 when it came first; the commit happened before the response was sent).
        after = [max(0.0, (t - answered[i]) * 1000) for i, t in arrivals if i in answered]
        # From the item's createdAt (stamped inside the write's transaction, so at or before its
        # commit) to the frame: an upper bound of commit-to-frame, on the machine's one clock.
        since_commit = [(t - created[i]) * 1000 for i, t in wall_arrivals if i in created]
        result = {
            "workers": args.workers, "sites": args.sites, "connections": len(sockets),
            "database": "postgresql" if args.database_url else "sqlite", "redis": True,
            "open_seconds": round(open_seconds, 1),
            "rss_kib_after_warmup": before, "warmup_sockets": warm, "rss_kib_after_idle": rss_after, "kib_per_idle_socket": round(per_socket_kib, 1),
            "writes": writes, "rate_per_s": args.rate, "write_elapsed_s": round(elapsed, 1),
            # Where the two cores went while writing: the server's processes (per write, with its
            # fan-out) and this client (its 1,000 sockets' frames and the writes); a client near
            # one core bounds what the bench can show on a 2-core machine.
            "server_cpu_ms_per_write": round(server_cpu / writes * 1000, 2),
            "server_cores": round(server_cpu / elapsed, 2), "client_cores": round(client_cpu / elapsed, 2),
            "frames_expected": expected, "frames_received": received,
            "write_http_ms_p50": round(statistics.median(write_ms), 1), "write_http_ms_p99": round(pct(write_ms, 99), 1),
            "frame_ms_p50": round(statistics.median(latencies), 1) if latencies else None,
            "frame_ms_p99": round(pct(latencies, 99), 1) if latencies else None,
            "frame_ms_max": round(max(latencies), 1) if latencies else None,
            "frame_after_response_ms_p50": round(statistics.median(after), 1) if after else None,
            "frame_after_response_ms_p99": round(pct(after, 99), 1) if after else None,
            "created_to_frame_ms_p50": round(statistics.median(since_commit), 1) if since_commit else None,
            "created_to_frame_ms_p99": round(pct(since_commit, 99), 1) if since_commit else None,
            "created_to_frame_ms_max": round(max(since_commit), 1) if since_commit else None,
        }
        print(json.dumps(result, indent=2))
        return 0
    finally:
        for ws in sockets:
            ws.close()
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/11")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sites", type=int, default=20)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--ws", default="svc", help="svc (svc serve) or a uvicorn ws implementation to compare")
    sys.exit(asyncio.run(main(parser.parse_args())))
