"""How `svc serve --workers N` spreads keep-alive connections over its workers.

Opens ``--connections`` keep-alive connections (one httpx client each, so each is its own TCP
connection) to a running ``svc serve``, sends requests on all of them for ``--seconds``, and
reports per worker (the children of ``--server-pid``): the established connections it holds
(from ``ss -tnp``) and the CPU seconds it used meanwhile (from /proc). Linux only.

    svc serve --port 19150 --workers 2 &
    .venv/bin/python bench/worker_spread.py --url http://127.0.0.1:19150 --server-pid $!
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import time
from collections import Counter
from urllib.parse import urlsplit

import httpx
from loadclient import cpu_seconds, tree


def connections_per_pid(port: int) -> Counter[int]:
    """Established server-side connections on ``port`` per owning pid."""
    out = subprocess.run(["ss", "-Htnp", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, check=True).stdout
    counts: Counter[int] = Counter()
    for line in out.splitlines():
        pids = set(re.findall(r"pid=(\d+)", line))
        for pid in pids:
            counts[int(pid)] += 1
    return counts


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--path", default="/api/v1/utils/version")
    args = parser.parse_args()
    port = urlsplit(args.url).port or 80
    workers = [pid for pid in tree(args.server_pid) if pid != args.server_pid]
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    clients = [httpx.AsyncClient(base_url=args.url, limits=limits, timeout=30) for _ in range(args.connections)]
    cpu_before = {pid: cpu_seconds([pid]) for pid in workers}
    done = Counter()
    stop = time.monotonic() + args.seconds

    async def drive(i: int, client: httpx.AsyncClient) -> None:
        while time.monotonic() < stop:
            (await client.get(args.path)).raise_for_status()
            done[i] += 1

    try:
        await asyncio.gather(*(drive(i, c) for i, c in enumerate(clients)))
        held = connections_per_pid(port)
    finally:
        for client in clients:
            await client.aclose()
    total = sum(done.values())
    print(f"{args.connections} connections, {total} requests in {args.seconds:.0f} s ({total / args.seconds:.0f}/s)")
    for pid in workers:
        used = cpu_seconds([pid]) - cpu_before[pid]
        print(f"worker pid {pid}: {held.get(pid, 0):3d} connections, {used:6.2f} CPU s")
    others = {pid: n for pid, n in held.items() if pid not in workers}
    if others:
        print(f"held by other pids: {others}")


if __name__ == "__main__":
    asyncio.run(main())
