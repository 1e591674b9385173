"""Publishing a 500-item release, in process over ASGI (docs/performance.md, "Releases").

For each round: 500 draft items are created (bulk), a release lists them all, and
``POST /releases/:id/publish`` is timed. ``all_or_nothing`` runs its pre-flight (every entry
under a savepoint, rolled back) and then one transaction; ``best_effort`` one transaction per
item. While an ``all_or_nothing`` publish runs, a concurrent reader counts the published items
of the round again and again: it must only ever see 0 or all of them (nothing is visible as
published before the one transaction commits).

Usage::

    .venv/bin/python bench/releases_bench.py                      # SQLite in a temp dir
    .venv/bin/python bench/releases_bench.py --database-url postgresql://postgres@127.0.0.1/svc_bench_rel
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from inprocess import ADMIN_EMAIL, PASSWORD, in_process_app  # noqa: E402


async def call(client: httpx.AsyncClient, method: str, path: str, headers: dict[str, str], **kw: Any) -> Any:
    resp = await client.request(method, f"/api/v1{path}", headers=headers, **kw)
    if resp.status_code >= 300:
        raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
    return resp.json()["data"] if resp.content else None


async def one_round(client: httpx.AsyncClient, headers: dict[str, str], n: int, mode: str, tag: str) -> dict[str, Any]:
    made = await call(client, "POST", "/items/posts", headers,
                      json=[{"title": f"{tag}-{i}", "status": "draft", "tag": tag} for i in range(n)])
    ids = [str(m["id"]) for m in made]
    release = await call(client, "POST", "/releases", headers, json={
        "name": f"bench {tag}", "atomicityMode": mode,
        "addItems": [{"collection": "posts", "itemId": i, "targetStatus": "published"} for i in ids]})
    seen: set[int] = set()
    done = asyncio.Event()

    async def watch() -> None:
        params = {"filter[tag][_eq]": tag, "filter[status][_eq]": "published", "aggregate[count]": "*"}
        while not done.is_set():
            rows = await call(client, "GET", "/items/posts", headers, params=params)
            seen.add(int(rows[0]["count"]))
            await asyncio.sleep(0.05)  # look often, without starving the publish of the loop

    watcher = asyncio.create_task(watch())
    t0 = time.perf_counter()
    result = await call(client, "POST", f"/releases/{release['id']}/publish", headers)
    elapsed = time.perf_counter() - t0
    done.set()
    await watcher
    assert result["status"] == "published", result["status"]
    return {"seconds": elapsed, "seen": sorted(seen)}


async def main(args: argparse.Namespace) -> None:
    async with in_process_app(args.database_url) as (app, client):
        login = await call(client, "POST", "/auth/login", {}, json={"email": ADMIN_EMAIL, "password": PASSWORD})
        headers = {"Authorization": f"Bearer {login['token']}", "X-Svc-Site": "default"}
        await call(client, "POST", "/collections", headers, json={"name": "posts", "fields": [
            {"field": "title", "type": "string"}, {"field": "tag", "type": "string"}]})
        print(f"{app.kernel.db.dialect}: {args.n} items per release, {args.rounds} rounds per mode")
        for mode in ("all_or_nothing", "best_effort"):
            results = [await one_round(client, headers, args.n, mode, f"{mode[:3]}{r}") for r in range(args.rounds)]
            times = sorted(r["seconds"] for r in results)
            seen = sorted({c for r in results for c in r["seen"]})
            print(f"  {mode:15s} publish: median {statistics.median(times):6.2f} s  "
                  f"(min {times[0]:.2f}, max {times[-1]:.2f}); "
                  f"{statistics.median(times) / args.n * 1000:.1f} ms per item; "
                  f"published counts a concurrent reader saw: "
                  f"{seen if len(seen) <= 4 else f'{len(seen)} distinct, {seen[0]} to {seen[-1]}'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
