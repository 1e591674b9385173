"""Memory of the per-site caches across many sites, bounded against unbounded (in process).

Makes ``--sites`` sites on a fresh SQLite database, each with the same schema (``--collections``
collections of ``--fields`` fields, copied row by row from one template site made through the
API), then visits every site once the way a request does: the site lookup (``sites`` cache), an
access snapshot of an API key (``access``), and an items list as the instance admin (``schema``
snapshot and ``read_plans``). The list query itself is not run (only its plan is built). By
default the entries are deep copies of the template site's real values (a schema snapshot, an
access snapshot with rules on every collection), so 10,000 sites fit in the two-minute budget;
``--real-loaders`` loads every entry from the database instead (about 6 ms of CPU per site). Python heap in use (tracemalloc) and RSS are sampled every ``--every`` sites.
Two passes: every site with every cache bounded to ``--bound`` entries, then the first
``--unbounded-sites`` with no effective bound (what an unbounded dict would hold). Usage:

    .venv/bin/python bench/site_cache_bench.py --sites 10000 --bound 1000
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import copyreg
import gc
import sys
import tempfile
import time
import tracemalloc
import types
import uuid
from pathlib import Path
from typing import Any

from loadclient import rss_bytes  # a sibling module of bench/
from sqlalchemy import insert, select

from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.auth.principal import Principal
from kernel.base.settings import Settings
from kernel.db.meta import now_utc
from kernel.db.migrate import migration_paths, upgrade
from kernel.policy.access import AccessSnapshot, Rule
from kernel.tenancy.scope import SiteDB
from kernel.tenancy.service import create_site, get_site_cached
from kernel.tenancy.tables import sites
from plugins.items.core.guard import ReadAccess
from plugins.items.query.parse.params import ListQuery
from plugins.items.read.readplan import plan_for
from plugins.items.service import _read_scope, acting_context
from plugins.schema.tables import collections, fields, schema_versions

CACHES = ("sites", "schema", "access", "read_plans")
ADMIN = Principal(kind="user", user_id="bench-admin", is_instance_admin=True, admin_access=True)


async def make_template(kernel: Any, n_collections: int, n_fields: int) -> None:
    from plugins.schema.api import create_collection, create_field

    await create_site(kernel, "tmpl", "Template")
    for c in range(n_collections):
        async with kernel.unit_of_work("tmpl", ADMIN) as uow:
            await create_collection(uow, {"name": f"coll_{c}"})
        for f in range(n_fields):
            async with kernel.unit_of_work("tmpl", ADMIN) as uow:
                await create_field(uow, f"coll_{c}", {"field": f"field_{f}",
                                                      "type": "string" if f % 2 else "integer"})


async def copy_sites(kernel: Any, n_sites: int) -> list[str]:
    """``n_sites`` sites holding the template's schema rows (new collection ids per site)."""
    async with kernel.db.connect() as conn:
        coll_rows = [dict(r) for r in (await conn.execute(
            select(collections).where(collections.c.site_id == "tmpl"))).mappings()]
        field_rows = [dict(r) for r in (await conn.execute(
            select(fields).where(fields.c.site_id == "tmpl"))).mappings()]
        version = (await conn.execute(select(schema_versions.c.version).where(
            schema_versions.c.site_id == "tmpl"))).scalar_one()
    ids = [f"bench-{n:05d}" for n in range(n_sites)]
    now = now_utc()
    for start in range(0, n_sites, 500):
        chunk = ids[start:start + 500]
        site_rows, colls, flds, versions = [], [], [], []
        for site_id in chunk:
            site_rows.append({"id": site_id, "name": site_id, "created_at": now})
            versions.append({"site_id": site_id, "version": version, "updated_at": now})
            new_ids = {}
            for row in coll_rows:
                new_ids[row["id"]] = str(uuid.uuid4())
                colls.append({**row, "id": new_ids[row["id"]], "site_id": site_id})
            for row in field_rows:
                flds.append({**row, "collection_id": new_ids[row["collection_id"]], "site_id": site_id})
        async with kernel.db.engine.begin() as conn:
            await conn.execute(insert(sites), site_rows)
            await conn.execute(insert(schema_versions), versions)
            await conn.execute(insert(collections), colls)
            await conn.execute(insert(fields), flds)
    return ids


async def visit(kernel: Any, site_id: str, collection: str) -> None:
    """What a list request asks of the caches (real loaders), without running the list query."""
    assert await get_site_cached(kernel, site_id) is not None
    key = Principal(kind="api_key", api_key_id=f"key-{site_id}", site_id=site_id)
    await kernel.access.snapshot(key, site_id)
    ctx = acting_context(kernel, site_id, ADMIN)
    access, _, schema, coll = await _read_scope(ctx, collection)  # the admin's access, the schema
    plan_for(kernel, "list", SiteDB(site_id, None), schema, coll, ListQuery(), access, kernel.db.dialect)


class Cloner:
    """Entries of the template's real values, deep-copied per site: the same object graphs the
    loaders build (so the same memory), without 10,000 x 6 database queries."""

    def __init__(self, kernel: Any, schema: Any, collection: str) -> None:
        copyreg.pickle(types.MappingProxyType, lambda m: (types.MappingProxyType, (dict(m),)))
        self.kernel = kernel
        self.schema = schema
        self.collection = collection
        rules = [Rule(c, a, ("*",) if a != "read" else ("title", "body", "status"),
                      {"status": {"_eq": "published"}} if a == "read" else None, "policy-1")
                 for c in schema.collections for a in ("create", "read", "update")]
        self.access = AccessSnapshot(site_id="tmpl", role_id="role-1", role_ids=("role-1",),
                                     policy_ids=("policy-1",), rules=rules)

    async def visit(self, site_id: str) -> None:
        caches = self.kernel.site_caches

        async def site(stale: Any) -> Any:
            return {"id": site_id, "name": site_id, "createdAt": "2026-11-26T00:00:00Z"}

        async def snapshot(stale: Any) -> Any:
            return copy.deepcopy(self.access)

        async def schema(stale: Any) -> Any:
            return copy.deepcopy(self.schema)

        await caches["sites"].get_or_load(site_id, None, site)
        await caches["access"].get_or_load(site_id, f"api_key:key-{site_id}::", snapshot)
        snap = await caches["schema"].get_or_load(site_id, None, schema)
        coll = snap.collections[self.collection]
        access = ReadAccess(None, ADMIN)
        plan_for(self.kernel, "list", SiteDB(site_id, None), snap, coll, ListQuery(), access, self.kernel.db.dialect)


def memory() -> tuple[float, float, int]:
    """(Python heap allocated since tracing started, resident set size) in MB, and the number of
    memory blocks Python has allocated (cheap, no tracing)."""
    gc.collect()
    heap = tracemalloc.get_traced_memory()[0] / 1e6 if tracemalloc.is_tracing() else float("nan")
    return heap, rss_bytes() / 1e6, sys.getallocatedblocks()


async def one_pass(kernel: Any, ids: list[str], bound: int, every: int, label: str,
                   cloner: Cloner | None, trace_last: int) -> float:
    """Visit ``ids`` with every cache bounded to ``bound``; tracemalloc runs over the last
    ``trace_last`` sites only (it slows allocation sixfold). When ``trace_last`` is at least the
    bound, every entry alive at the end was made under tracing, so the traced heap at the end is
    what the caches hold. Returns that figure in MB."""
    for name in CACHES:
        kernel.site_caches[name].invalidate(None)
        kernel.site_caches[name].resize(bound)
    trace_from = max(0, len(ids) - trace_last)
    samples = []
    started = time.perf_counter()
    for n, site_id in enumerate(ids):
        if n == trace_from:
            gc.collect()
            tracemalloc.start()
        if n % every == 0:
            samples.append((n, *memory()))
        await (cloner.visit(site_id) if cloner else visit(kernel, site_id, "coll_0"))
    samples.append((len(ids), *memory()))
    tracemalloc.stop()
    elapsed = time.perf_counter() - started
    sizes = ", ".join(f"{c} {len(kernel.site_caches[c])}" for c in CACHES)
    print(f"\n{label}: bound {bound} entries per cache, {len(ids)} sites in {elapsed:.1f} s "
          f"(tracemalloc over the last {min(trace_last, len(ids))}); entries now: {sizes}")
    print("  sites visited   RSS (MB)   blocks allocated   traced heap (MB)")
    for n, heap, rss, blocks in samples:
        print(f"  {n:>13}   {rss:8.1f}   {blocks:16,}   {heap:16.1f}")
    return samples[-1][1]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=10_000)
    parser.add_argument("--bound", type=int, default=1_000)
    parser.add_argument("--collections", type=int, default=3)
    parser.add_argument("--fields", type=int, default=8)
    parser.add_argument("--every", type=int, default=1_000)
    parser.add_argument("--unbounded-sites", type=int, default=2_000,
                        help="sites of the unbounded pass (its growth is linear; fewer keep the run short)")
    parser.add_argument("--database-url", default="",
                        help="an empty PostgreSQL database (default: SQLite in a temporary directory)")
    parser.add_argument("--real-loaders", action="store_true",
                        help="load every entry from the database (about 6 ms of CPU per site)")
    parser.add_argument("--trace-last", type=int, default=2_000,
                        help="sites of the bounded pass visited under tracemalloc (at least --bound)")
    args = parser.parse_args()

    data = Path(tempfile.mkdtemp())
    settings = Settings.from_env(environ={"SVC_DATA_DIR": str(data), "SVC_ADMIN_PASSWORD": "bench-pass-1",
                                          "SVC_JOBS_INPROCESS": "false", "SVC_DATABASE_URL": args.database_url})
    app = create_app(settings)
    kernel = app.kernel
    upgrade(args.database_url or f"sqlite:///{data / 'svc.sqlite3'}", migration_paths(kernel.pm))
    await startup_kernel(kernel)
    try:
        await make_template(kernel, args.collections, args.fields)
        started = time.perf_counter()
        ids = await copy_sites(kernel, args.sites)
        print(f"{args.sites} sites of {args.collections} collections x {args.fields} fields "
              f"made in {time.perf_counter() - started:.1f} s")
        await visit(kernel, ids[0], "coll_0")  # imports and compiled caches warm before measuring
        cloner = None
        if not args.real_loaders:
            from plugins.schema.api import get_schema

            cloner = Cloner(kernel, await get_schema(kernel, "tmpl"), "coll_0")
        bounded = await one_pass(kernel, ids, args.bound, args.every, "bounded", cloner, args.trace_last)
        few = ids[:args.unbounded_sites]
        unbounded = await one_pass(kernel, few, 10**9, args.every, "unbounded", cloner, len(few))
        print(f"\nheap held by the caches: bounded {bounded:.1f} MB after {len(ids)} sites; unbounded "
              f"{unbounded:.1f} MB after {len(few)} sites (~{unbounded / len(few) * 1e3:.1f} KB per site "
              f"across the four caches)")
    finally:
        await shutdown_kernel(kernel)


if __name__ == "__main__":
    asyncio.run(main())
