"""Public delivery and pageviews over HTTP, against a real ``svc serve``.

1. starts ``svc serve --workers W`` (default 2) on a fresh SQLite file (or ``--database-url``),
   rate limits off, and seeds through the API a site ``bench`` whose public role reads a page
   ``home`` with 10 sections, each referencing an item (5 ``heroes``, 5 ``blocks``);
2. ``page``: ``GET /deliver/page/bench/home``, fully hydrated (200 each time);
   ``revalidate``: the same with ``If-None-Match`` holding its ETag (304, no database query);
3. restarts the server with one worker and measures ``beacon``: ``POST /pageviews/bench/hit``
   as a browser sends it (db-rollup, a different path per hit), beacons/s and CPU per hit.

With ``--directus-env FILE`` (the output of the team's ``peer-directus.sh start``, kept outside this
repository), it then
seeds the same page in Directus and measures ``directus-page``: the page assembled as a
Directus client must, one REST call for the page and one per section (11 calls in sequence per
page, as the admin: Directus skips its permission checks then, which favours it). Directus has
no page endpoint; its row counts pages, its CPU is its node process per page.

Per scenario: requests/s, p50 and p99 latency, and server CPU ms per request (user + system
of the server's whole process tree from ``/proc``, divided by the requests served). The load
generator (bench/loadclient.py's keep-alive client, one process) shares the machine's
cores with the server: quote the CPU per request, which does not depend on it.

    .venv/bin/python bench/delivery_bench.py --duration 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
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
    percentile,
    refuse_taken,
    server_env,
    stop_server,
    tree,
    wait_healthy,
)

API = "/api/v1"
SITE = "bench"
PASSWORD = "bench-pass-1"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"


def start(args: argparse.Namespace, data_dir: str, workers: int) -> subprocess.Popen[bytes]:
    svc = str(Path(sys.executable).with_name("svc"))
    return subprocess.Popen([svc, "serve", "--host", args.host, "--port", str(args.port), "--workers", str(workers)],
                            env=server_env(args.database_url or "", "", data_dir, SVC_RATE_LIMIT_DELIVER="0",
                                           SVC_RATE_LIMIT_PAGEVIEWS="0"))


async def call(conn: Http, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
    status, payload = await conn.request(method, API + path, body)
    if status != expect:
        raise SystemExit(f"{method} {path}: {status} {payload[:300]!r}")
    return json.loads(payload)["data"] if payload else None


async def seed(args: argparse.Namespace) -> str:
    """The site, its collections, 10 referenced items, the page and the public role's rules;
    returns the page's ETag."""
    anon = Http(args.host, args.port, {})
    token = (await call(anon, "POST", "/auth/login", {"email": "admin@example.com", "password": PASSWORD}))["token"]
    admin = Http(args.host, args.port, {"Authorization": f"Bearer {token}"})
    await call(admin, "POST", "/sites", {"id": SITE, "name": "Bench"}, 201)
    conn = Http(args.host, args.port, {"Authorization": f"Bearer {token}", "X-Svc-Site": SITE})
    fields = {"pages": {"slug": "string", "title": "string", "summary": "string", "sections": "json"},
              "heroes": {"heading": "string", "image": "string", "cta": "string"},
              "blocks": {"title": "string", "body": "text"}}
    for name, spec in fields.items():
        await call(conn, "POST", "/collections",
                   {"name": name, "fields": [{"field": f, "type": t} for f, t in spec.items()]}, 201)
    sections = []
    for i in range(5):
        await call(conn, "POST", "/items/heroes", {"id": f"h{i}", "heading": f"Hero {i}", "image": f"img{i}.png",
                                                    "cta": "Read more"}, 201)
        await call(conn, "POST", "/items/blocks", {"id": f"b{i}", "title": f"Block {i}", "body": "lorem ipsum " * 40},
                   201)
        sections += [{"collection": "heroes", "item": f"h{i}"}, {"collection": "blocks", "item": f"b{i}"}]
    await call(conn, "POST", "/items/pages", {"slug": "home", "title": "Home", "summary": "The front page",
                                              "sections": sections}, 201)
    roles = await call(conn, "GET", "/roles")
    public = next(r for r in roles if r.get("systemKey") == "public")
    policy = await call(conn, "POST", "/policies", {"name": "public delivery"}, 201)
    for name in fields:
        await call(conn, "POST", f"/policies/{policy['id']}/permissions",
                   {"collection": name, "action": "read", "conditions": {"status": {"_eq": "published"}}}, 201)
    await call(conn, "POST", f"/policies/{policy['id']}/attach", {"roleId": public["id"]}, 201)
    await asyncio.sleep(0.5)  # the other worker's access cache (5 s TTL without Redis) must see the grant
    for _ in range(100):
        status, body = await anon.request("GET", f"{API}/deliver/page/{SITE}/home")
        if status == 200 and len(json.loads(body)["data"]["sections"]) == 10:
            break
        await asyncio.sleep(0.2)
    else:
        raise SystemExit(f"the page never showed its 10 sections: {status} {body[:300]!r}")
    for c in (anon, admin, conn):
        await c.close()
    return await etag_of(args)


async def etag_of(args: argparse.Namespace) -> str:
    """The ETag every worker answers (each worker caches its own version; they agree)."""
    reader, writer = await asyncio.open_connection(args.host, args.port)
    writer.write(f"GET {API}/deliver/page/{SITE}/home HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    raw = await reader.read()
    writer.close()
    head = raw.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    return next(line.split(":", 1)[1].strip() for line in head.split("\r\n") if line.lower().startswith("etag:"))


async def load(args: argparse.Namespace, pid: int, name: str, headers: dict[str, str], method: str, target: Any,
               body: Any, expect: int, connection: type[Http] = Http) -> dict[str, Any]:
    """``--concurrency`` keep-alive connections for ``--duration`` s after a warm-up."""
    conns = [connection(args.host, args.port, headers) for _ in range(args.concurrency)]
    latencies: list[float] = []
    box = {"record": False, "stop": False, "n": 0, "bad": 0}

    async def worker(conn: Http) -> None:
        while not box["stop"]:
            box["n"] += 1
            t0 = time.perf_counter()
            status, _ = await conn.request(method, target(box["n"]) if callable(target) else target,
                                           body(box["n"]) if callable(body) else body)
            if box["record"]:
                latencies.append(time.perf_counter() - t0)
                if status != expect:
                    box["bad"] += 1

    pids = tree(pid)
    tasks = [asyncio.create_task(worker(c)) for c in conns]
    await asyncio.sleep(args.warmup)
    latencies.clear()
    cpu0, t0, box["record"] = cpu_seconds(pids), time.perf_counter(), True
    await asyncio.sleep(args.duration)
    box["record"] = False
    wall, cpu, served = time.perf_counter() - t0, cpu_seconds(pids) - cpu0, len(latencies)
    box["stop"] = True
    await asyncio.gather(*tasks)
    for c in conns:
        await c.close()
    result = {"scenario": name, "server_processes": len(pids), "rps": round(served / wall, 1),
              "p50_ms": percentile(latencies, 0.5), "p99_ms": percentile(latencies, 0.99),
              "cpu_ms_per_req": round(1000 * cpu / served, 3), "requests": served, "unexpected": box["bad"]}
    print(f"{name:11s} {result['rps']:8.1f} req/s  p50 {result['p50_ms']:6.2f} ms  p99 {result['p99_ms']:6.2f} ms  "
          f"server CPU {result['cpu_ms_per_req']:.3f} ms/req in {len(pids)} processes  (not {expect}: {box['bad']})", flush=True)
    return result


async def directus(args: argparse.Namespace) -> dict[str, Any]:
    """Seed the same page in Directus and assemble it with one REST call per section."""
    env = dict(line.strip().split("=", 1) for line in Path(args.directus_env).read_text().splitlines() if "=" in line)
    url = env["PEER_URL"].rstrip("/")
    host, port = url.split("//", 1)[1].split(":")
    anon = Http(host, int(port), {})
    status, body = await anon.request("POST", "/auth/login", {"email": env.get("PEER_EMAIL", "admin@example.com"),
                                                             "password": env.get("PEER_PASSWORD",
                                                                                 "bench-admin-pass")})
    if status != 200:
        raise SystemExit(f"directus login: {status} {body[:200]!r}")
    headers = {"Authorization": f"Bearer {json.loads(body)['data']['access_token']}"}
    conn = Http(host, int(port), headers)
    fields = {"pages": {"slug": "string", "title": "string", "summary": "string", "sections": "json"},
              "heroes": {"heading": "string", "image": "string", "cta": "string"},
              "blocks": {"title": "string", "body": "text"}}
    for name, spec in fields.items():
        status, body = await conn.request("POST", "/collections", {
            "collection": name, "meta": {}, "schema": {},
            "fields": [{"field": "id", "type": "integer", "meta": {"hidden": True},
                        "schema": {"is_primary_key": True, "has_auto_increment": True}}]
            + [{"field": f, "type": t, "meta": {}, "schema": {}} for f, t in spec.items()]})
        if status != 200:
            raise SystemExit(f"directus collection {name}: {status} {body[:300]!r}")
    sections = []
    for i in range(5):
        for name, item in (("heroes", {"heading": f"Hero {i}", "image": f"img{i}.png", "cta": "Read more"}),
                           ("blocks", {"title": f"Block {i}", "body": "lorem ipsum " * 40})):
            status, body = await conn.request("POST", f"/items/{name}", item)
            sections.append({"collection": name, "item": json.loads(body)["data"]["id"]})
    await conn.request("POST", "/items/pages", {"slug": "home", "title": "Home", "summary": "The front page",
                                                "sections": sections})
    await conn.close()
    page_query = "/items/pages?" + urlencode({"filter[slug][_eq]": "home", "limit": 1})

    class PageClient(Http):
        """One 'request' is the whole page: the page, then each section's item."""

        async def request(self, method: str, target: str, body: Any = None) -> tuple[int, bytes]:
            status, raw = await super().request("GET", page_query)
            if status != 200:
                return status, raw
            page = json.loads(raw)["data"][0]
            for section in page["sections"]:
                status, _ = await super().request("GET", f"/items/{section['collection']}/{section['item']}")
                if status != 200:
                    return status, b""
            return 200, raw

    saved = (args.host, args.port)
    args.host, args.port = host, int(port)
    try:
        return await load(args, int(env["PEER_PID"]), "directus-page", headers, "GET", page_query, None, 200,
                          connection=PageClient)
    finally:
        args.host, args.port = saved


async def main(args: argparse.Namespace) -> None:
    refuse_taken(args.host, args.port)
    results = []
    with tempfile.TemporaryDirectory() as data_dir:
        proc = start(args, data_dir, args.workers)
        try:
            await wait_healthy(args.host, args.port, proc)
            tag = await seed(args)
            page = f"{API}/deliver/page/{SITE}/home"
            print(f"svc serve --workers {args.workers}, {args.concurrency} connections, {args.duration:g} s each")
            results.append(await load(args, proc.pid, "page", {}, "GET", page, None, 200))
            results.append(await load(args, proc.pid, "revalidate", {"If-None-Match": tag}, "GET", page, None, 304))
        finally:
            stop_server(proc)
        proc = start(args, data_dir, 1)
        try:
            await wait_healthy(args.host, args.port, proc)
            print("svc serve --workers 1")
            results.append(await load(args, proc.pid, "beacon", {"User-Agent": BROWSER}, "POST",
                                      f"{API}/pageviews/{SITE}/hit", lambda n: {"path": f"/p{n % 500}"}, 204))
        finally:
            stop_server(proc)
    if args.directus_env:
        results.append(await directus(args))
    print(json.dumps(results, separators=(",", ":")))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default="", help="empty: SQLite in a temporary data folder")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8078)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--directus-env", default="", help="PEER_* lines of peer-directus.sh start: compare")
    asyncio.run(main(parser.parse_args()))
