"""In-process timings of the item read path (no server, no network): ms per request.

Builds an app on a fresh SQLite database in a temporary directory, seeds the shared
workload's ``articles`` (8 fields, ``--n`` items), then sends ``--requests`` sequential requests
per scenario through httpx's ASGI transport and prints the mean and median milliseconds:
list (limit 25), list with ``meta=none``, list ``fields=id,title``, filter+sort, get by id,
aggregate count grouped by category, JSON containment, and a nested m2o read.

    .venv/bin/python bench/items_query_bench.py --n 10000 --requests 500
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.db.engine import default_sqlite_path
from kernel.db.migrate import migration_paths, upgrade
from kernel.settings import Settings

API = "/api/v1"
PASSWORD = "bench-pass-1"
FIELDS = [("title", "string"), ("body", "text"), ("views", "integer"), ("rating", "float"),
          ("published", "boolean"), ("tags", "json"), ("category", "string"), ("created", "dateTime")]
CATEGORIES = ["news", "tech", "sports", "culture", "science"]
TAGS = ["featured", "breaking", "opinion", "review", "guide", "interview", "analysis", "local"]
WORDS = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor".split()


def make_item(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "title": f"Article {i}: {rng.choice(WORDS)} {rng.choice(WORDS)}",
        "body": " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 80))),
        "views": rng.randint(0, 1000), "rating": round(rng.uniform(0, 5), 2), "published": rng.random() < 0.7,
        "tags": rng.sample(TAGS, rng.randint(1, 3)), "category": rng.choice(CATEGORIES),
        "created": f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T10:00:00",
        "author": f"u{rng.randint(0, 49)}",
    }


async def call(client: httpx.AsyncClient, method: str, path: str, headers: dict[str, str], **kw: Any) -> Any:
    resp = await client.request(method, API + path, headers=headers, **kw)
    if resp.status_code >= 300:
        raise SystemExit(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
    return resp.json() if resp.content else None


async def seed(client: httpx.AsyncClient, headers: dict[str, str], n: int) -> list[str]:
    await call(client, "POST", "/collections", headers, json={"name": "authors"})
    await call(client, "POST", "/fields/authors", headers, json={"field": "name", "type": "string"})
    await call(client, "POST", "/collections", headers, json={"name": "articles"})
    for name, kind in FIELDS:
        await call(client, "POST", "/fields/articles", headers, json={"field": name, "type": kind})
    await call(client, "POST", "/fields/articles", headers, json={"field": "author", "type": "string"})
    await call(client, "POST", "/relations", headers, json={
        "type": "m2o", "collection": "articles", "field": "author", "relatedCollection": "authors"})
    await call(client, "POST", "/items/authors", headers, json=[{"id": f"u{i}", "name": f"A{i}"} for i in range(50)])
    rng = random.Random(7)
    ids: list[str] = []
    for start in range(0, n, 1000):
        batch = [make_item(rng, i) for i in range(start, min(n, start + 1000))]
        created = await call(client, "POST", "/items/articles", headers, json=batch)
        ids.extend(item["id"] for item in created["data"])
    return ids


def scenarios(ids: list[str]) -> dict[str, Any]:
    flt = json.dumps({"views": {"_gt": 500}, "category": {"_eq": "news"}}, separators=(",", ":"))
    contains = json.dumps({"tags": {"_json_contains": ["featured"]}}, separators=(",", ":"))
    rng = random.Random(3)
    return {
        "list limit=25": lambda: ("/items/articles", {"limit": "25"}),
        "list meta=none": lambda: ("/items/articles", {"limit": "25", "meta": "none"}),
        "list fields=id,title": lambda: ("/items/articles", {"limit": "25", "fields": "id,title"}),
        "filter+sort": lambda: ("/items/articles", {"filter": flt, "sort": "-rating", "limit": "25"}),
        "filter+sort meta=none": lambda: ("/items/articles", {"filter": flt, "sort": "-rating", "limit": "25",
                                                              "meta": "none"}),
        "get by id": lambda: (f"/items/articles/{rng.choice(ids)}", None),
        "aggregate groupBy": lambda: ("/items/articles", {"aggregate[count]": "*", "groupBy": "category"}),
        "json containment": lambda: ("/items/articles", {"filter": contains, "limit": "25"}),
        "json containment meta=none": lambda: ("/items/articles", {"filter": contains, "limit": "25", "meta": "none"}),
        "nested m2o fields": lambda: ("/items/articles", {"limit": "25", "fields": "id,title,author.name"}),
    }


async def main(n: int, requests: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = {"SVC_DATA_DIR": tmp, "SVC_ADMIN_EMAIL": "admin@example.com", "SVC_ADMIN_PASSWORD": PASSWORD,
               "JWT_SECRET": "bench-secret-0123456789-0123456789-0123", "SVC_JOBS_INPROCESS": "false",
               "SVC_RATE_LIMIT_ITEMS_READ": "0", "SVC_RATE_LIMIT_ITEMS_WRITE": "0", "SVC_RATE_LIMIT_AUTH": "0"}
        settings = Settings.from_env(environ=env)
        app = create_app(settings)
        upgrade(f"sqlite:///{default_sqlite_path(Path(tmp))}", migration_paths(app.kernel.pm))
        await startup_kernel(app.kernel)
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench")
        try:
            login = await call(client, "POST", "/auth/login", {}, json={"email": "admin@example.com",
                                                                       "password": PASSWORD})
            headers = {"Authorization": f"Bearer {login['data']['token']}"}
            await call(client, "POST", "/sites", headers, json={"id": "bench", "name": "Bench"})
            headers["X-Svc-Site"] = "bench"
            t0 = time.perf_counter()
            ids = await seed(client, headers, n)
            print(f"seeded {len(ids)} items in {time.perf_counter() - t0:.1f} s")
            for name, make in scenarios(ids).items():
                times = []
                for i in range(requests + 20):
                    path, params = make()
                    start = time.perf_counter()
                    resp = await client.get(API + path, params=params, headers=headers)
                    elapsed = time.perf_counter() - start
                    if resp.status_code != 200:
                        print(f"{name}: {resp.status_code} {resp.text[:200]}")
                        break
                    if i >= 20:
                        times.append(elapsed * 1000)
                if times:
                    print(f"{name:28s} mean {statistics.mean(times):6.2f} ms  median {statistics.median(times):6.2f} ms"
                          f"  ({len(resp.json()['data'])} rows)")
        finally:
            await client.aclose()
            await shutdown_kernel(app.kernel)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.requests))
