"""Many sites in one deployment (issue 27): creation rate, migrate and startup time, worker
memory and list/get latency at ``--sites`` sites against 10.

On PostgreSQL with Redis (loopback only) and ``svc serve --workers 2``:

1. a fresh database (``--database-url``, dropped and made again unless ``--reuse``) and Redis
   database (``--redis-url``, emptied), ``svc migrate`` on it (timed), a first ``svc serve``;
2. sites, each with a schema of 5 collections of 4 fields (``POST /config/import``), a role
   ``Editor`` with a policy reading the 5 collections, an API key of that role and ``--items``
   items per collection (one bulk ``POST /items/<c>`` each): 16 requests per site. The first
   ``--http-sites`` go through ``svc serve`` over HTTP (``--concurrency`` at once); the rest are
   bulk copies of the first one (``copy_sites``: every row of every table that has a
   ``site_id``, read through the kernel's table metadata, with fresh ids, a new API key and the
   search index's scope tokens per site; 100 sites per transaction, then ``ANALYZE``), because
   over HTTP on a loaded 2-core machine a site took seconds. Both rates are printed. What was
   made is kept in ``--state`` so ``--reuse`` skips this step. ``SVC_ITEMS_INDEX_MIN_ITEMS``
   is ``--index-min-items`` (1000): with ``0`` every site adds 15 indexes to ``svc_items``;
3. ``svc migrate`` at N sites (timed), then ``svc serve`` at N sites: the seconds to its first
   ``/utils/health`` 200, and what the database did in the first ``--idle`` seconds after it
   (``pg_stat_database``: transactions and rows returned, which grow with the sites when a
   startup hook walks them);
4. list (``limit=25&meta=none``) and get by id, alternately, with each site's API key:
   for ``--seconds`` over 10 sites, then one pass over every site (each site's first request:
   cold caches), then a second pass over every site; p50/p99 of each and the RSS of each worker
   after each. The goal: p99 at N sites within twice that at 10 sites, and worker RSS bounded by
   the cache sizes, not the number of sites.

    .venv/bin/python bench/scale_sites.py --sites 1000
    .venv/bin/python bench/scale_sites.py --sites 10000

The load generator is one Python process on the same (2-core) machine as the server and
PostgreSQL: compare runs of this script, not absolute figures with other machines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from loadclient import API, SVC, Http, Server, admin_token, percentile, rss_mb, server_env

COLLECTIONS = ("articles", "pages", "authors", "products", "events")
FIELDS = (("title", "string"), ("body", "text"), ("views", "integer"), ("published", "boolean"))
MANIFEST = {"version": "svc.config@v1", "collections": [{"name": c} for c in COLLECTIONS],
            "fields": [{"collection": c, "field": f, "type": t} for c in COLLECTIONS for f, t in FIELDS]}


def item(site_id: str, coll: str, n: int) -> dict[str, Any]:
    return {"title": f"{coll} {n} of {site_id}", "body": f"Body text number {n} about {coll}.",
            "views": n * 7, "published": n % 2 == 0}


# ---------------------------------------------------------------------------- databases


def reset_postgres(url: str) -> None:
    """Drop and make the database again (only ``svc_scale*`` and ``svc_bench_*`` names)."""
    import psycopg
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    name = parsed.database or ""
    if not (name.startswith("svc_scale") or name.startswith("svc_bench_")):
        raise SystemExit(f"refusing to drop {name!r}: use a database named svc_scale* or svc_bench_*")
    admin = parsed.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def reset_redis(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


def pg_counters(url: str) -> dict[str, int]:
    """This database's transactions and rows returned so far (``pg_stat_database``)."""
    import psycopg
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    plain = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute("SELECT xact_commit + xact_rollback, tup_returned, tup_fetched "
                           "FROM pg_stat_database WHERE datname = current_database()").fetchone()
    return {"transactions": int(row[0]), "rows_returned": int(row[1]), "rows_fetched": int(row[2])}


def run_migrate(env: dict[str, str]) -> float:
    started = time.perf_counter()
    out = subprocess.run([SVC, "migrate"], env=env, capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"svc migrate failed: {out.stderr[-2000:]}")
    return round(time.perf_counter() - started, 2)


# ---------------------------------------------------------------------------- making sites


async def make_site(call: Any, site_id: str, items_per: int) -> dict[str, Any]:
    """One site through the API (``call(method, path, body, site) -> data``); returns its API
    key and item ids."""
    await call("POST", "/sites", {"id": site_id, "name": f"Scale {site_id}"}, None)
    await call("POST", "/config/import?mode=merge", MANIFEST, site_id)
    role = await call("POST", "/roles", {"name": "Editor"}, site_id)
    policy = await call("POST", "/policies", {"name": "Editors read"}, site_id)
    for coll in COLLECTIONS:
        await call("POST", f"/policies/{policy['id']}/permissions", {"collection": coll, "action": "read"}, site_id)
    await call("POST", f"/policies/{policy['id']}/attach", {"roleId": role["id"]}, site_id)
    key = await call("POST", "/api-keys", {"name": "scale bench", "roleId": role["id"]}, site_id)
    ids = {}
    for coll in COLLECTIONS:
        made = await call("POST", f"/items/{coll}", [item(site_id, coll, n) for n in range(items_per)], site_id)
        ids[coll] = [row["id"] for row in made]
    return {"key": key["key"], "ids": ids}


async def make_sites(call_factory: Any, site_ids: list[str], items_per: int, concurrency: int,
                     state: dict[str, Any], label: str) -> float:
    """Make ``site_ids`` with ``concurrency`` at once; returns sites per second."""
    todo = list(site_ids)
    started = time.perf_counter()
    done = [0]

    async def runner() -> None:
        call = await call_factory()
        while todo:
            site_id = todo.pop(0)
            state[site_id] = await make_site(call, site_id, items_per)
            done[0] += 1
            if done[0] % 500 == 0:
                rate = done[0] / (time.perf_counter() - started)
                print(f"  {label}: {done[0]:,}/{len(site_ids):,} sites, {rate:.1f} sites/s", flush=True)

    await asyncio.gather(*(runner() for _ in range(min(concurrency, len(site_ids)) or 1)))
    elapsed = time.perf_counter() - started
    return round(len(site_ids) / elapsed, 2) if site_ids else 0.0


def http_caller(port: int, token: str) -> Any:
    async def factory() -> Any:
        conn = Http("127.0.0.1", port)

        async def call(method: str, path: str, body: Any, site: str | None) -> Any:
            headers = {"Authorization": f"Bearer {token}"}
            if site:
                headers["X-Svc-Site"] = site
            return await conn.data(method, API + path, body, headers)

        return call

    return factory


# Rows that are not a site's content, or that the copy must not duplicate: queued jobs and ticks,
# one-time secrets, the audit trail, the event consumers' checkpoints (a copy would look behind),
# and the item counts (the items' triggers write them).
SKIP_TABLES = {"svc_jobs", "svc_job_ticks", "svc_realtime_tickets", "svc_refresh_tokens", "svc_one_time_tokens",
               "svc_audit", "svc_event_checkpoints", "svc_item_counts", "svc_git_oauth_states"}


def _remap(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [_remap(v, ids) for v in value]
    if isinstance(value, dict):
        return {_remap(k, ids): _remap(v, ids) for k, v in value.items()}
    return value


async def copy_sites(env: dict[str, str], template: str, site_ids: list[str], state: dict[str, Any],
                     chunk: int = 100) -> float:
    """Bulk copies of ``template`` (made through the API): every row of every table with a
    ``site_id`` (the kernel's metadata, so every plugin's tables), each string id given a fresh
    one in every column and JSON value that holds it, a new API key per site, the search
    index's scope tokens recomputed; inserted ``chunk`` sites per transaction. Returns sites/s."""
    import uuid

    from sqlalchemy import BigInteger, Integer, insert, select, text

    from kernel.app import create_app
    from kernel.base.settings import Settings
    from kernel.db.meta import metadata, now_utc
    from kernel.tenancy.tables import sites
    from plugins.accounts.apikeys.apikeys import KEY_PREFIX, PREFIX_CHARS, key_hash, new_key
    from plugins.items.search.index import scope_token

    app = create_app(Settings.from_env(environ={**env, "SVC_JOBS_INPROCESS": "false"}))  # every table declared
    db = app.kernel.db
    first = ("svc_collections", "svc_fields", "svc_relations", "svc_roles", "svc_policies", "svc_items")
    tables = sorted((t for t in metadata.sorted_tables if "site_id" in t.c and t.name not in SKIP_TABLES),
                    key=lambda t: first.index(t.name) if t.name in first else len(first))  # foreign keys
    async with db.connect() as conn:
        rows = {t.name: [dict(r) for r in (await conn.execute(select(t).where(t.c.site_id == template))).mappings()]
                for t in tables}
    serial = {t.name: [c.name for c in t.primary_key.columns
                       if isinstance(c.type, (Integer, BigInteger)) and c.autoincrement in (True, "auto")]
              for t in tables}
    template_ids = {str(r["id"]) for t in tables for r in rows[t.name] if isinstance(r.get("id"), str)}
    started = time.perf_counter()
    for at in range(0, len(site_ids), chunk):
        batch = site_ids[at:at + chunk]
        out: dict[str, list[dict[str, Any]]] = {t.name: [] for t in tables}
        now = now_utc()
        for site_id in batch:
            ids = {old: str(uuid.uuid4()) for old in template_ids}
            ids[template] = site_id
            for t in tables:
                for row in rows[t.name]:
                    copy = {k: _remap(v, ids) for k, v in row.items() if k not in serial[t.name]}
                    if t.name == "svc_events":
                        copy.pop("txid", None)  # the server default: this transaction's id
                    elif t.name == "svc_search":
                        copy["scope"] = scope_token(site_id, copy["collection_id"], copy["field"])
                    elif t.name == "svc_api_keys":
                        key = new_key()
                        copy.update(key_hash=key_hash(key), key_prefix=key[len(KEY_PREFIX):len(KEY_PREFIX) + PREFIX_CHARS])
                        state[site_id] = {"key": key}
                    out[t.name].append(copy)
            state[site_id]["ids"] = {c: [ids[i] for i in got] for c, got in state[template]["ids"].items()}
        async with db.begin() as conn:
            await conn.execute(insert(sites), [{"id": s, "name": f"Scale {s}", "created_at": now} for s in batch])
            for t in tables:
                if out[t.name]:
                    await conn.execute(insert(t), out[t.name])
        done = at + len(batch)
        if done % 1000 == 0 or done == len(site_ids):
            rate = done / (time.perf_counter() - started)
            print(f"  copied {done:,}/{len(site_ids):,} sites, {rate:.1f} sites/s", flush=True)
    elapsed = time.perf_counter() - started
    if db.dialect == "postgresql":
        async with db.begin() as conn:
            await conn.execute(text("ANALYZE"))  # autovacuum may be off (startup warns then)
    await db.dispose()
    return round(len(site_ids) / elapsed, 1) if site_ids else 0.0


# ---------------------------------------------------------------------------- traffic


class Traffic:
    """List and get requests, alternately, each with its site's API key."""

    def __init__(self, port: int, state: dict[str, Any], concurrency: int) -> None:
        self.port, self.state, self.concurrency = port, state, concurrency
        self.rng = random.Random(27)

    def request(self, site_id: str, n: int) -> tuple[str, str, dict[str, str]]:
        site = self.state[site_id]
        headers = {"Authorization": f"Bearer {site['key']}", "X-Svc-Site": site_id}
        coll = COLLECTIONS[n % len(COLLECTIONS)]
        if n % 2 == 0:
            return "list", f"{API}/items/{coll}?" + urlencode({"limit": 25, "meta": "none"}), headers
        return "get", f"{API}/items/{coll}/{self.rng.choice(site['ids'][coll])}", headers

    async def run(self, sites: list[str], *, seconds: float | None = None, per_site: int = 1) -> dict[str, Any]:
        """Requests over ``sites``: for ``seconds`` (random sites), or ``per_site`` requests for
        each site in a shuffled order (every site touched). Returns p50/p99 per kind."""
        latencies: dict[str, list[float]] = {"list": [], "get": []}
        errors: dict[int, int] = {}
        if seconds is None:
            order = [s for s in sites for _ in range(per_site)]
            self.rng.shuffle(order)
        else:
            order = []
        deadline = time.perf_counter() + (seconds or 0)
        counter = [0]

        async def worker() -> None:
            conn = Http("127.0.0.1", self.port)
            while True:
                n = counter[0]
                counter[0] += 1
                if seconds is None:
                    if n >= len(order):
                        break
                    site_id = order[n]
                elif time.perf_counter() >= deadline:
                    break
                else:
                    site_id = self.rng.choice(sites)
                kind, target, headers = self.request(site_id, n)
                t0 = time.perf_counter()
                status, body = await conn.request("GET", target, None, headers)
                latencies[kind].append(time.perf_counter() - t0)
                if status != 200:
                    errors[status] = errors.get(status, 0) + 1
                    if errors[status] == 1:
                        print(f"  {status} on {target}: {body[:200]!r}", flush=True)
            await conn.close()

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(self.concurrency)))
        wall = time.perf_counter() - started
        total = sum(len(v) for v in latencies.values())
        return {"requests": total, "rps": round(total / wall, 1), "errors": errors,
                **{f"{k}_p50_ms": percentile(v, 0.50) for k, v in latencies.items()},
                **{f"{k}_p99_ms": percentile(v, 0.99) for k, v in latencies.items()}}


async def cache_entries(port: int, token: str, samples: int = 6) -> dict[int, dict[str, float]]:
    """``svc_site_cache_entries`` per cache as answered by each worker (by its pid label-less
    answers: several scrapes on fresh connections, keyed by the first distinct answers)."""
    seen: dict[int, dict[str, float]] = {}
    for n in range(samples):
        conn = Http("127.0.0.1", port)
        status, body = await conn.request("GET", "/metrics", None, {"Authorization": f"Bearer {token}"})
        await conn.close()
        if status != 200:
            break
        entries = {}
        for line in body.decode().splitlines():
            if line.startswith("svc_site_cache_entries{"):
                name = line.split('cache="', 1)[1].split('"', 1)[0]
                entries[name] = float(line.rsplit(" ", 1)[1])
        seen[n] = entries
    return seen


# ---------------------------------------------------------------------------- main


async def main(args: argparse.Namespace) -> None:
    results: dict[str, Any] = {"sites": args.sites, "workers": args.workers}
    state_path = Path(args.state)
    data_dir = tempfile.mkdtemp(prefix="svc-scale-")
    # SVC_METRICS_PUBLIC: the run scrapes /metrics on the loopback without a scrape token.
    env = server_env(args.database_url, args.redis_url, data_dir,
                     SVC_ITEMS_INDEX_MIN_ITEMS=str(args.index_min_items), SVC_METRICS_PUBLIC="true")
    log_path = str(Path(data_dir) / "serve.log")
    state: dict[str, Any] = {}
    if args.reuse and state_path.exists():
        state = json.loads(state_path.read_text())
    site_ids = [f"s{n:05d}" for n in range(args.sites)]
    missing = [s for s in site_ids if s not in state]
    if not args.reuse:
        reset_postgres(args.database_url)
        reset_redis(args.redis_url)
        state = {}
        missing = site_ids
        results["migrate_empty_s"] = run_migrate(env)
        print(f"svc migrate (empty database): {results['migrate_empty_s']} s", flush=True)
    if missing:
        server = Server(env, args.port, args.workers, log_path)
        results["startup_few_sites_s"] = round(await server.start(), 2)
        try:
            conn = Http("127.0.0.1", args.port)
            token = await admin_token(conn)
            await conn.close()
            over_http = missing[:args.http_sites]
            print(f"making {len(over_http):,} sites over HTTP ({args.concurrency} at once)", flush=True)
            results["create_http_sites_per_s"] = await make_sites(
                http_caller(args.port, token), over_http, args.items, args.concurrency, state, "HTTP")
            print(f"  {results['create_http_sites_per_s']} sites/s over HTTP", flush=True)
        finally:
            server.stop()
        rest = missing[args.http_sites:]
        if rest:
            template = site_ids[0]
            print(f"copying {len(rest):,} sites from {template} in bulk", flush=True)
            results["create_bulk_copy_sites_per_s"] = await copy_sites(env, template, rest, state)
            print(f"  {results['create_bulk_copy_sites_per_s']} sites/s by bulk copy", flush=True)
        state_path.write_text(json.dumps(state))

    results["migrate_at_n_s"] = run_migrate(env)
    print(f"svc migrate at {args.sites:,} sites: {results['migrate_at_n_s']} s", flush=True)
    server = Server(env, args.port, args.workers, log_path)
    before = pg_counters(args.database_url)
    results["startup_at_n_s"] = round(await server.start(), 2)
    print(f"svc serve at {args.sites:,} sites: first /health 200 after {results['startup_at_n_s']} s", flush=True)
    try:
        pids = await server.wait_workers()
        await asyncio.sleep(args.idle)
        after = pg_counters(args.database_url)
        results["startup_db_work"] = {k: after[k] - before[k] for k in after}
        results["startup_db_work"]["seconds"] = args.idle
        print(f"database work from start to {args.idle:.0f} s after: {results['startup_db_work']}", flush=True)
        results["rss_idle_mb"] = {p: rss_mb(p) for p in pids}
        traffic = Traffic(args.port, state, args.traffic_concurrency)
        few = site_ids[:10]
        await traffic.run(few, per_site=20)  # warm the ten sites' caches
        results["ten_sites"] = await traffic.run(few, seconds=args.seconds)
        results["rss_after_ten_mb"] = {p: rss_mb(p) for p in pids}
        print(f"10 sites: {results['ten_sites']}; RSS {results['rss_after_ten_mb']}", flush=True)
        results["all_sites_first_pass"] = await traffic.run(site_ids, per_site=1)
        results["rss_after_first_pass_mb"] = {p: rss_mb(p) for p in pids}
        print(f"{args.sites:,} sites, first pass: {results['all_sites_first_pass']}; "
              f"RSS {results['rss_after_first_pass_mb']}", flush=True)
        results["all_sites_second_pass"] = await traffic.run(site_ids, per_site=1)
        results["rss_after_second_pass_mb"] = {p: rss_mb(p) for p in pids}
        print(f"{args.sites:,} sites, second pass: {results['all_sites_second_pass']}; "
              f"RSS {results['rss_after_second_pass_mb']}", flush=True)
        results["ten_sites_again"] = await traffic.run(few, seconds=args.seconds)
        print(f"10 sites again: {results['ten_sites_again']}", flush=True)
        conn = Http("127.0.0.1", args.port)
        token = await admin_token(conn)
        await conn.close()
        results["cache_entries_per_scrape"] = await cache_entries(args.port, token)
        ten, far = results["ten_sites"], results["all_sites_second_pass"]
        results["p99_ratio"] = {k: round(far[f"{k}_p99_ms"] / ten[f"{k}_p99_ms"], 2) if ten[f"{k}_p99_ms"] else None
                                for k in ("list", "get")}
    finally:
        server.stop()
    print(json.dumps(results, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=3, help="items per collection")
    parser.add_argument("--http-sites", type=int, default=100,
                        help="sites made over HTTP; the rest are bulk copies of the first")
    parser.add_argument("--concurrency", type=int, default=8, help="sites made at once")
    parser.add_argument("--traffic-concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the 10-site phases")
    parser.add_argument("--idle", type=float, default=15.0, help="seconds after startup read from pg_stat_database")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/svc_scale")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/10")
    parser.add_argument("--index-min-items", type=int, default=1000,
                        help="SVC_ITEMS_INDEX_MIN_ITEMS (0: field indexes with the field, 15 per site)")
    parser.add_argument("--port", type=int, default=19500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--state", default="/tmp/svc_scale_state.json", help="sites made (keys, item ids)")
    parser.add_argument("--reuse", action="store_true", help="keep the database and the sites in --state")
    parser.add_argument("--out", default="", help="write the JSON result here too")
    sys.exit(asyncio.run(main(parser.parse_args())))
