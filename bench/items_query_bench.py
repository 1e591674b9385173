"""In-process timings of the item read path (no server, no network): ms per request.

Builds an app on a database (a fresh SQLite file in a temporary directory by default, or
``--database-url``: ``sqlite:////path/file.sqlite3`` or ``postgresql://...``), seeds the shared
workload's ``articles`` (8 fields, ``--n`` items), then sends ``--requests`` sequential requests
per scenario through httpx's ASGI transport and prints the mean, p50 and p99 milliseconds:
list (limit 25), list with ``meta=none``, list ``fields=id,title``, filter+sort, get by id,
aggregate count grouped by category, JSON containment, and a nested m2o read. The last line
is one JSON object with every figure.

Seeding: the collections, fields and relation are always created through the API (so the
field indexes are made the normal way). Items go through ``POST /items`` for ``--n`` up to
``--api-seed-max`` (default 20,000), or with ``--seed direct``; beyond that (``--seed auto``) they
are written straight into ``svc_items`` with SQLAlchemy Core bulk inserts in 5,000-row batches,
in the shape the items service writes (checked against one item created through the API),
**without search-index entries** (no read scenario here uses search; ``--search-index`` adds
them afterwards, as the server's startup backfill would), then ``ANALYZE``.
``--reuse`` skips seeding when the database already holds ``--n`` articles, so a large database
can be measured more than once; ``--drop`` drops a ``svc_bench_*`` PostgreSQL database at the end.
A PostgreSQL database named ``svc_bench_*`` is created when missing. ``--explain`` prints the
plan (PostgreSQL: ``EXPLAIN (ANALYZE, BUFFERS)``; SQLite: ``EXPLAIN QUERY PLAN``) of every
``svc_items`` statement one request of each scenario runs. ``--budget`` caps the seconds spent
per scenario (at least 20 measured requests), for scenarios that take seconds at 1M items.
``--requests 0`` only prepares the database (``bench/items_http_bench.py`` uses it so).
The startup search backfill is cancelled (it would index every directly seeded item while the
requests are timed).

    .venv/bin/python bench/items_query_bench.py --n 10000 --requests 500
    .venv/bin/python bench/items_query_bench.py --n 1000000 --requests 200 \\
        --database-url postgresql://postgres@127.0.0.1:5432/svc_bench_1m --reuse
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from loadclient import quantile  # a sibling module of bench/
from sqlalchemy import event, func, insert, select, text
from sqlalchemy.engine import make_url

from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.base.ids import uuid7
from kernel.base.settings import Settings
from kernel.db.engine import default_sqlite_path
from kernel.db.migrate import migration_paths, upgrade
from plugins.items.tables import items
from plugins.items.upkeep import indexes, search_backfill
from plugins.schema.api import load_schema

API = "/api/v1"
PASSWORD = "bench-pass-1"
SITE = "bench"
BATCH = 5_000
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


# ---------------------------------------------------------------------------- database


def is_pg(url: str) -> bool:
    return url.split(":", 1)[0].split("+", 1)[0].lower() in ("postgresql", "postgres")


def _admin_conn(url: str) -> Any:
    import psycopg

    parsed = make_url(url)
    name = parsed.database or ""
    if not name.startswith("svc_bench_"):
        raise SystemExit(f"refusing to create or drop {name!r}: bench databases are named svc_bench_*")
    admin = parsed.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    return name, psycopg.connect(admin, autocommit=True)


def ensure_pg_database(url: str) -> None:
    name, conn = _admin_conn(url)
    with conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')
            print(f"created database {name}")


def drop_pg_database(url: str) -> None:
    name, conn = _admin_conn(url)
    with conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        print(f"dropped database {name}")


async def articles_id(kernel: Any) -> str | None:
    async with kernel.db.connect() as conn:
        coll = (await load_schema(conn, SITE)).collection("articles")
    return coll.id if coll is not None else None


async def count_items(kernel: Any, coll_id: str) -> int:
    async with kernel.db.connect() as conn:
        stmt = select(func.count()).select_from(items).where(
            items.c.site_id == SITE, items.c.collection_id == coll_id, items.c.deleted_at.is_(None))
        return int((await conn.execute(stmt)).scalar_one())


async def sample_ids(kernel: Any, coll_id: str, k: int = 2_000) -> list[str]:
    async with kernel.db.connect() as conn:
        rows = await conn.execute(select(items.c.id).where(
            items.c.site_id == SITE, items.c.collection_id == coll_id, items.c.deleted_at.is_(None)))
        ids = [r[0] for r in rows]
    return random.Random(11).sample(ids, min(k, len(ids)))


async def field_indexes(kernel: Any, coll_id: str) -> list[str]:
    from plugins.items.upkeep.indexes import index_name

    prefix = index_name(coll_id, "x")[:-1]
    sql = ("SELECT indexname FROM pg_indexes WHERE tablename = 'svc_items'" if kernel.db.dialect == "postgresql"
           else "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'svc_items'")
    async with kernel.db.connect() as conn:
        names = [r[0] for r in await conn.execute(text(sql))]
    return sorted(n[len(prefix):] for n in names if n.startswith(prefix))


async def analyze(kernel: Any) -> float:
    t0 = time.perf_counter()
    if kernel.db.dialect == "postgresql":
        async with kernel.db.connect() as conn:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            # VACUUM too: what autovacuum does soon after a bulk load (visibility map, so counts
            # can be index-only scans); measuring before it has run measures the vacuum instead.
            await conn.exec_driver_sql("VACUUM (ANALYZE) svc_items")
    else:
        from plugins.items.upkeep.planner_stats import analyze as sqlite_analyze

        await sqlite_analyze(kernel)
    return time.perf_counter() - t0


# ---------------------------------------------------------------------------- seeding


async def seed_schema(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    await call(client, "POST", "/collections", headers, json={"name": "authors"})
    await call(client, "POST", "/fields/authors", headers, json={"field": "name", "type": "string"})
    await call(client, "POST", "/collections", headers, json={"name": "articles"})
    for name, kind in FIELDS:
        await call(client, "POST", "/fields/articles", headers, json={"field": name, "type": kind})
    await call(client, "POST", "/fields/articles", headers, json={"field": "author", "type": "string"})
    await call(client, "POST", "/relations", headers, json={
        "type": "m2o", "collection": "articles", "field": "author", "relatedCollection": "authors"})
    await call(client, "POST", "/items/authors", headers, json=[{"id": f"u{i}", "name": f"A{i}"} for i in range(50)])


async def seed_api(client: httpx.AsyncClient, headers: dict[str, str], n: int) -> None:
    rng = random.Random(7)
    for start in range(0, n, 1000):
        batch = [make_item(rng, i) for i in range(start, min(n, start + 1000))]
        await call(client, "POST", "/items/articles", headers, json=batch)


async def seed_direct(kernel: Any, client: httpx.AsyncClient, headers: dict[str, str], coll_id: str,
                      n: int) -> None:
    """Item 0 through the API (to check the stored shape), the rest by bulk inserts."""
    rng = random.Random(7)
    first = make_item(rng, 0)
    created = (await call(client, "POST", "/items/articles", headers, json=first))["data"]
    async with kernel.db.connect() as conn:
        row = (await conn.execute(select(items).where(items.c.id == created["id"]))).mappings().one()
    stored = {k: (v.isoformat() if isinstance(v, dt.datetime) else v) for k, v in row.items()}
    if row["data"] != first or row["status"] != "published" or row["sort"] is not None:
        raise SystemExit(f"the API stored another shape than the direct path writes: {stored}")
    user = row["user_created"]
    done = 1
    t0 = time.perf_counter()
    while done < n:
        now = dt.datetime.now(dt.UTC)
        rows = []
        for i in range(done, min(n, done + BATCH)):
            rows.append({"site_id": SITE, "collection_id": coll_id, "id": uuid7(), "status": "published",
                         "sort": None, "data": make_item(rng, i), "created_at": now, "updated_at": now,
                         "user_created": user, "user_updated": user, "deleted_at": None})
        async with kernel.db.begin() as conn:
            await conn.execute(insert(items), rows)
        done += len(rows)
        if done // 100_000 != (done - len(rows)) // 100_000 or done == n:
            rate = (done - 1) / (time.perf_counter() - t0)
            print(f"  {done:>9,} items  ({rate:,.0f}/s)", flush=True)


# ---------------------------------------------------------------------------- scenarios


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


async def explain(kernel: Any, client: httpx.AsyncClient, headers: dict[str, str], name: str, path: str,
                  params: Any) -> None:
    captured: list[tuple[str, Any]] = []

    def grab(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if "svc_items" in statement and not statement.lstrip().upper().startswith("EXPLAIN"):
            captured.append((statement, parameters))

    sync_engine = kernel.db.engine.sync_engine
    event.listen(sync_engine, "before_cursor_execute", grab)
    try:
        await client.get(API + path, params=params, headers=headers)
    finally:
        event.remove(sync_engine, "before_cursor_execute", grab)
    pg = kernel.db.dialect == "postgresql"
    print(f"\n### {name}: GET {path} {params or ''}")
    for statement, parameters in captured:
        print(f"-- SQL: {statement}\n-- params: {parameters}")
        prefix = "EXPLAIN (ANALYZE, BUFFERS) " if pg else "EXPLAIN QUERY PLAN "
        async with kernel.db.connect() as conn:
            result = await conn.exec_driver_sql(prefix + statement, parameters)
            for row in result:
                print("   " + (row[0] if pg else f"{row[0]:>3} {row[1]:>3}  {row[-1]}"))


# ---------------------------------------------------------------------------- main


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = {"SVC_DATA_DIR": tmp, "SVC_ADMIN_EMAIL": "admin@example.com", "SVC_ADMIN_PASSWORD": PASSWORD,
               "JWT_SECRET": "bench-secret-0123456789-0123456789-0123", "SVC_JOBS_INPROCESS": "false",
               "SVC_RATE_LIMIT_ITEMS_READ": "0", "SVC_RATE_LIMIT_ITEMS_WRITE": "0", "SVC_RATE_LIMIT_AUTH": "0",
               "SVC_ACCESS_TOKEN_TTL": "86400"}  # a 1M-item seed and run outlast the default 15 min
        url = args.database_url or f"sqlite:///{default_sqlite_path(Path(tmp))}"
        if args.database_url:
            env["SVC_DATABASE_URL"] = url
        if is_pg(url):
            ensure_pg_database(url)
        settings = Settings.from_env(environ=env)
        app = create_app(settings)
        upgrade(url, migration_paths(app.kernel.pm))
        kernel = app.kernel
        await startup_kernel(kernel)
        # The startup search backfill indexes items that have no search rows (all of them after a
        # direct seed): a long background job that would compete with the timed requests.
        await search_backfill.stop(kernel)
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench", timeout=600)
        out: dict[str, Any] = {"dialect": kernel.db.dialect, "n": args.n, "requests": args.requests}
        try:
            login = await call(client, "POST", "/auth/login", {}, json={"email": "admin@example.com",
                                                                       "password": PASSWORD})
            headers = {"Authorization": f"Bearer {login['data']['token']}"}
            coll_id = await articles_id(kernel) if args.reuse else None
            have = await count_items(kernel, coll_id) if coll_id else 0
            if args.reuse and coll_id and have == args.n:
                headers["X-Svc-Site"] = SITE
                print(f"reusing {have:,} articles ({kernel.db.dialect})")
                await indexes.settle(kernel)  # the startup pass over grown collections
                out["seed"] = {"mode": "reused"}
                if args.search_index:  # finish what an interrupted preparation left
                    await analyze(kernel)
                    t1 = time.perf_counter()
                    rows = await search_backfill.backfill(kernel)
                    print(f"search index: {rows:,} rows added in {time.perf_counter() - t1:.1f} s", flush=True)
                    if rows:
                        await analyze(kernel)
            else:
                if coll_id or have:
                    raise SystemExit(f"the database holds {have:,} articles, not {args.n:,}: use an empty one")
                await call(client, "POST", "/sites", headers, json={"id": SITE, "name": "Bench"})
                headers["X-Svc-Site"] = SITE
                t0 = time.perf_counter()
                await seed_schema(client, headers)
                coll_id = await articles_id(kernel)
                assert coll_id is not None
                for _ in range(50 if indexes.min_items(kernel) == 0 else 0):
                    # With SVC_ITEMS_INDEX_MIN_ITEMS=0 the field indexes are made by bus actions
                    # after the commit; by default they wait for 1,000 items (below).
                    if len(await field_indexes(kernel, coll_id)) >= 7:
                        break
                    await asyncio.sleep(0.1)
                mode = args.seed if args.seed != "auto" else ("api" if args.n <= args.api_seed_max else "direct")
                if mode == "api":
                    await seed_api(client, headers, args.n)
                else:
                    print("direct seeding: bulk inserts into svc_items, no search-index entries", flush=True)
                    await seed_direct(kernel, client, headers, coll_id, args.n)
                # The field indexes wait for SVC_ITEMS_INDEX_MIN_ITEMS live items: the API seed's
                # creates make them as the collection grows (in the background), the direct
                # seed's bulk inserts (no item events) at the next start's pass, run here.
                await indexes.settle(kernel)
                await indexes.ensure_grown(kernel)
                seeded = time.perf_counter() - t0
                if mode == "direct" and args.search_index:
                    await analyze(kernel)  # the backfill's reads want the planner to know the items
                    t1 = time.perf_counter()
                    rows = await search_backfill.backfill(kernel)
                    print(f"search index: {rows:,} rows in {time.perf_counter() - t1:.1f} s", flush=True)
                took = await analyze(kernel)
                what = "VACUUM (ANALYZE)" if kernel.db.dialect == "postgresql" else "ANALYZE"
                print(f"seeded {args.n:,} items ({mode}) in {seeded:.1f} s; {what} svc_items {took:.1f} s")
                out["seed"] = {"mode": mode, "seconds": round(seeded, 1),
                               "search_index": mode == "api" or args.search_index}
            print(f"field indexes: {', '.join(await field_indexes(kernel, coll_id))}")
            ids = await sample_ids(kernel, coll_id)
            results: dict[str, Any] = {}
            for name, make in scenarios(ids).items():
                times: list[float] = []
                resp = None
                warmup, began = args.warmup, time.perf_counter()
                i = 0
                while len(times) < args.requests:
                    path, params = make()
                    start = time.perf_counter()
                    resp = await client.get(API + path, params=params, headers=headers)
                    elapsed = time.perf_counter() - start
                    if resp.status_code != 200:
                        print(f"{name}: {resp.status_code} {resp.text[:200]}")
                        times = []
                        break
                    if i == 0 and elapsed > 0.25:  # a slow scenario: a couple of warm-up requests do
                        warmup = min(warmup, 2)
                    if i >= warmup:
                        times.append(elapsed * 1000)
                    i += 1
                    if args.budget and len(times) >= 20 and time.perf_counter() - began > args.budget:
                        break
                if times and resp is not None:
                    data = resp.json()["data"]
                    rows = len(data) if isinstance(data, list) else 1
                    fig = {"mean": round(statistics.mean(times), 3), "p50": round(quantile(times, 0.50), 3),
                           "p99": round(quantile(times, 0.99), 3), "rows": rows, "requests": len(times)}
                    results[name] = fig
                    print(f"{name:28s} mean {fig['mean']:8.2f} ms  p50 {fig['p50']:8.2f} ms  "
                          f"p99 {fig['p99']:8.2f} ms  ({rows} rows, {len(times)} requests)", flush=True)
            out["scenarios"] = results
            if args.explain:
                for name, make in scenarios(ids).items():
                    if args.explain == "all" or name in args.explain.split(","):
                        path, params = make()
                        await explain(kernel, client, headers, name, path, params)
        finally:
            await client.aclose()
            await shutdown_kernel(kernel)
        print(json.dumps(out, separators=(",", ":")))
        if args.drop and is_pg(url):
            drop_pg_database(url)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--database-url", default="",
                        help="sqlite:////path/db.sqlite3 or postgresql://user@host:port/svc_bench_x "
                             "(default: a fresh SQLite file in a temporary directory)")
    parser.add_argument("--seed", choices=("auto", "api", "direct"), default="auto")
    parser.add_argument("--api-seed-max", type=int, default=20_000,
                        help="with --seed auto, seed through the API up to this many items, directly beyond")
    parser.add_argument("--budget", type=float, default=0,
                        help="seconds per scenario: stop after it once 20 requests are measured (0: none)")
    parser.add_argument("--search-index", action="store_true",
                        help="after a direct seed, index the items for search (what the server's startup "
                             "backfill would do; bench/items_http_bench.py asks for it)")
    parser.add_argument("--reuse", action="store_true", help="skip seeding when the database holds --n articles")
    parser.add_argument("--drop", action="store_true", help="drop the svc_bench_* PostgreSQL database at the end")
    parser.add_argument("--explain", default="", help="'all' or a comma list of scenarios: print their plans")
    asyncio.run(main(parser.parse_args()))
