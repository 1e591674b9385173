"""The schema snapshot cache: one ``SchemaSnapshot`` per site in the kernel's ``schema`` site cache.

Every schema change bumps the site's version and emits ``schema.changed`` after commit; the
bus delivers it to this process and, with Redis, to every other worker, which drop their
copy. Without Redis another worker hears nothing, so a cached snapshot is trusted for the
cache's TTL only; after that one cheap query compares the stored version and the snapshot is
reloaded only when it moved. The cache is bounded (LRU, ``SVC_SITE_CACHE_SIZES``) and dropped
per site on ``sites.changed`` by the kernel (kernel/cache/sitecache.py).
"""

from __future__ import annotations

from typing import Any

from kernel.cache.sitecache import SiteCacheSpec
from kernel.tenancy.scope import SiteDB
from plugins.schema.snapshot import SchemaSnapshot, load_snapshot, read_version

SCHEMA_CACHE = SiteCacheSpec("schema", max_entries=2_000, ttl=2.0,
                             doc="Schema snapshots, one per site (collections, fields, relations).")


def snapshots(kernel: Any) -> Any:
    """The ``schema`` ``SiteCache`` of this app."""
    return kernel.site_caches[SCHEMA_CACHE.name]


async def get_schema(kernel: Any, site_id: str) -> SchemaSnapshot:
    """The site's current schema (cached; at most the TTL stale without Redis)."""

    async def load(stale: SchemaSnapshot | None) -> SchemaSnapshot:
        async with kernel.db.connect() as conn:
            db = SiteDB(site_id, conn)
            if stale is not None and await read_version(db) == stale.version:
                return stale  # the same version: keep the object (read plans key on it)
            return await load_snapshot(db)

    return await snapshots(kernel).get_or_load(site_id, None, load)


def forget(kernel: Any, site_id: str | None = None) -> None:
    """Drop the cached snapshot of one site (or of all) in this process."""
    snapshots(kernel).invalidate(site_id)


def on_schema_changed(kernel: Any) -> Any:
    """The bus handler for ``schema.changed`` (``{ siteId, version }``)."""
    def handler(event: str, payload: Any, ctx: Any) -> None:
        site_id = payload.get("siteId") if isinstance(payload, dict) else None
        if not isinstance(site_id, str):
            forget(kernel, None)
            return
        cached = snapshots(kernel).peek(site_id)
        version = payload.get("version")
        # A late message about an older version must not evict a newer snapshot.
        if cached is not None and isinstance(version, int) and cached.version >= version:
            return
        forget(kernel, site_id)

    return handler
