"""In-process timings of GraphQL reads against the same reads over REST (no server, no network).

A fresh SQLite database (or ``--database-url``) gets 50 authors, ``--n`` articles (m2o
``author``) and ``--n`` remarks (m2o ``article``, with the o2m alias ``articles.remarks``), all
through the API. Then ``--requests`` sequential requests per scenario through httpx's ASGI
transport: mean, p50 and p99 milliseconds, and the SQL statements of one request.

- ``gql_flat``: scenario (g) of the shared workload, ``articles(limit: 25, filter: {views: {_gt: 500}})``.
- ``gql_nested_25``: 25 articles with ``author { name }`` and ``remarks(limit: 5) { body }``.
- ``rest_nested_25``: the same read over REST (``fields`` + ``deep``), for comparison.
- ``gql_nested_100``: 100 articles (filtered), each with its author and two remarks.

    .venv/bin/python bench/graphql_nested_bench.py --n 10000 --requests 200
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
from sqlalchemy import event

from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.base.settings import Settings
from kernel.db.engine import default_sqlite_path
from kernel.db.migrate import migration_paths, upgrade

API = "/api/v1"
PASSWORD = "bench-pass-123"
SITE = "bench"
SCENARIOS: dict[str, tuple[str, Any]] = {
    "gql_flat": ("gql", "{ articles(limit: 25, filter: {views: {_gt: 500}}) { id title views } }"),
    "gql_nested_25": ("gql", '{ articles(limit: 25, sort: ["-views"]) { id title author { name } '
                             "remarks(limit: 5) { body } } }"),
    "rest_nested_25": ("rest", {"fields": "id,title,author.name,remarks.body", "deep[remarks][_limit]": "5",
                                "limit": "25", "sort": "-views", "meta": "none"}),
    "gql_nested_100": ("gql", "{ articles(limit: 100, filter: {views: {_gt: 500}}) { id author { name } "
                              "remarks(limit: 2) { body } } }"),
}


async def call(client: httpx.AsyncClient, method: str, path: str, headers: dict[str, str], **kw: Any) -> Any:
    resp = await client.request(method, API + path, headers=headers, **kw)
    if resp.status_code >= 300:
        raise SystemExit(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
    return resp.json() if resp.content else None


async def seed(client: httpx.AsyncClient, headers: dict[str, str], n: int) -> None:
    rng = random.Random(7)
    for name, fields in (("authors", {"name": "string"}),
                         ("articles", {"title": "string", "views": "integer", "author": "string"}),
                         ("remarks", {"body": "text", "article": "string"})):
        await call(client, "POST", "/collections", headers, json={"name": name})
        for field, kind in fields.items():
            await call(client, "POST", f"/fields/{name}", headers, json={"field": field, "type": kind})
    await call(client, "POST", "/relations", headers, json={
        "type": "m2o", "collection": "articles", "field": "author", "relatedCollection": "authors"})
    await call(client, "POST", "/relations", headers, json={
        "type": "m2o", "collection": "remarks", "field": "article", "relatedCollection": "articles",
        "relatedField": "remarks"})
    await call(client, "POST", "/items/authors", headers, json=[{"id": f"u{i}", "name": f"A{i}"} for i in range(50)])
    for start in range(0, n, 1000):
        batch = [{"id": f"a{i}", "title": f"Article {i}", "views": rng.randint(0, 1000), "author": f"u{i % 50}"}
                 for i in range(start, min(n, start + 1000))]
        await call(client, "POST", "/items/articles", headers, json=batch)
    for start in range(0, n, 1000):
        batch = [{"body": f"remark {i}", "article": f"a{rng.randrange(n)}"} for i in range(start, min(n, start + 1000))]
        await call(client, "POST", "/items/remarks", headers, json=batch)


async def one(client: httpx.AsyncClient, headers: dict[str, str], kind: str, spec: Any) -> Any:
    if kind == "gql":
        body = await call(client, "POST", "/graphql", headers, json={"query": spec})
        if body.get("errors"):
            raise SystemExit(f"GraphQL errors: {body['errors']}")
        return body
    return await call(client, "GET", "/items/articles", headers, params=spec)


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = {"SVC_DATA_DIR": tmp, "SVC_ADMIN_EMAIL": "admin@example.com", "SVC_ADMIN_PASSWORD": PASSWORD,
               "JWT_SECRET": "bench-secret-0123456789-0123456789-0123", "SVC_JOBS_INPROCESS": "false",
               "SVC_RATE_LIMIT_ITEMS_READ": "0", "SVC_RATE_LIMIT_ITEMS_WRITE": "0", "SVC_RATE_LIMIT_AUTH": "0"}
        url = args.database_url or f"sqlite:///{default_sqlite_path(Path(tmp))}"
        if args.database_url:
            env["SVC_DATABASE_URL"] = url
        app = create_app(Settings.from_env(environ=env))
        upgrade(url, migration_paths(app.kernel.pm))
        kernel = app.kernel
        await startup_kernel(kernel)
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench", timeout=600)
        statements: list[str] = []
        event.listen(kernel.db.engine.sync_engine, "before_cursor_execute",
                     lambda conn, cur, stmt, *rest: statements.append(stmt))
        out: dict[str, Any] = {"dialect": kernel.db.dialect, "n": args.n, "requests": args.requests}
        try:
            login = await call(client, "POST", "/auth/login", {}, json={"email": "admin@example.com",
                                                                       "password": PASSWORD})
            headers = {"Authorization": f"Bearer {login['data']['token']}"}
            await call(client, "POST", "/sites", headers, json={"id": SITE, "name": "Bench"})
            headers["X-Svc-Site"] = SITE
            t0 = time.perf_counter()
            await seed(client, headers, args.n)
            print(f"seeded {args.n:,} articles and remarks in {time.perf_counter() - t0:.1f} s", flush=True)
            for name, (kind, spec) in SCENARIOS.items():
                for _ in range(5):
                    await one(client, headers, kind, spec)
                statements.clear()
                await one(client, headers, kind, spec)
                per_request = len([s for s in statements if "svc_items" in s])
                times = []
                for _ in range(args.requests):
                    t1 = time.perf_counter()
                    await one(client, headers, kind, spec)
                    times.append((time.perf_counter() - t1) * 1000)
                times.sort()
                row = {"mean": round(statistics.mean(times), 2), "p50": round(statistics.median(times), 2),
                       "p99": round(times[min(len(times) - 1, int(len(times) * 0.99))], 2),
                       "item_statements": per_request}
                out[name] = row
                print(f"{name:<16} mean {row['mean']:7.2f} ms  p50 {row['p50']:7.2f}  p99 {row['p99']:7.2f}  "
                      f"svc_items statements/request {per_request}", flush=True)
        finally:
            await client.aclose()
            await shutdown_kernel(kernel)
        print(json.dumps(out))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--database-url")
    asyncio.run(main(parser.parse_args()))
