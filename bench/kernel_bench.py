"""Kernel hot-path benchmark: authenticated request and login, against a running svc serve.

Reports requests/s, p50 and p99 per scenario, and the server's CPU ms per request when its
pid is given (read from /proc). Usage: see bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import httpx
from loadclient import cpu_seconds


async def run(name: str, make_request, concurrency: int, seconds: float, pid: int | None) -> None:
    latencies: list[float] = []
    errors = 0
    stop = time.monotonic() + seconds
    cpu_before = cpu_seconds([pid]) if pid else None

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal errors
        while time.monotonic() < stop:
            start = time.perf_counter()
            resp = await make_request(client)
            latencies.append(time.perf_counter() - start)
            if resp.status_code >= 400:
                errors += 1

    started = time.monotonic()
    async with httpx.AsyncClient(timeout=30) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
    elapsed = time.monotonic() - started
    cpu_after = cpu_seconds([pid]) if pid else None
    latencies.sort()
    n = len(latencies)
    line = (f"{name:<22} {n / elapsed:8.1f} req/s  p50 {statistics.median(latencies) * 1000:7.2f} ms  "
            f"p99 {latencies[int(n * 0.99) - 1] * 1000:7.2f} ms  errors {errors}")
    if cpu_before is not None and cpu_after is not None:
        line += f"  server CPU {(cpu_after - cpu_before) * 1000 / n:5.2f} ms/req"
    print(line)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--email", default="admin@example.com")
    parser.add_argument("--password", required=True)
    parser.add_argument("--site", default="default")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--pid", type=int, default=None, help="server pid, for CPU ms per request")
    args = parser.parse_args()
    api = args.url.rstrip("/") + "/api/v1"
    body = {"email": args.email, "password": args.password}
    headers = {"X-Svc-Site": args.site}
    async with httpx.AsyncClient() as client:
        token = (await client.post(f"{api}/auth/login", json=body, headers=headers)).json()["data"]["token"]
    auth = {**headers, "Authorization": f"Bearer {token}"}
    await run("GET /auth/me", lambda c: c.get(f"{api}/auth/me", headers=auth), args.concurrency, args.seconds,
              args.pid)
    await run("POST /auth/login", lambda c: c.post(f"{api}/auth/login", json=body, headers=headers),
              args.concurrency, args.seconds, args.pid)


if __name__ == "__main__":
    asyncio.run(main())
