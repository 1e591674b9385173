"""The per-process snapshot cache: one ``SchemaSnapshot`` per site, keyed by its version.

Every schema change bumps the site's version and emits ``schema.changed`` after commit; the
bus delivers it to this process and, with Redis, to every other worker, which drop their
copy. Without Redis another worker hears nothing, so a cached snapshot is trusted for
``SNAPSHOT_TTL`` seconds only; after that one cheap query compares the stored version and
the snapshot is reloaded only when it moved. This is kernel/access.py's pattern.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kernel.tenancy.scope import SiteDB
from plugins.schema.snapshot import SchemaSnapshot, load_snapshot, read_version

SNAPSHOT_TTL = 2.0
MAX_CACHED_SITES = 10_000
STATE_KEY = "schema.snapshots"


@dataclass
class _Entry:
    snapshot: SchemaSnapshot
    checked_at: float


def _cache(kernel: Any) -> dict[str, _Entry]:
    return kernel.state.setdefault(STATE_KEY, {})


async def get_schema(kernel: Any, site_id: str) -> SchemaSnapshot:
    """The site's current schema (cached; at most ``SNAPSHOT_TTL`` seconds stale without Redis)."""
    cache = _cache(kernel)
    entry = cache.get(site_id)
    now = time.monotonic()
    if entry is not None and now - entry.checked_at < SNAPSHOT_TTL:
        return entry.snapshot
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        if entry is not None and await read_version(db) == entry.snapshot.version:
            entry.checked_at = now
            return entry.snapshot
        snapshot = await load_snapshot(db)
    if len(cache) >= MAX_CACHED_SITES:
        cache.clear()
    cache[site_id] = _Entry(snapshot, now)
    return snapshot


def forget(kernel: Any, site_id: str | None = None) -> None:
    """Drop the cached snapshot of one site (or of all) in this process."""
    if site_id is None:
        _cache(kernel).clear()
    else:
        _cache(kernel).pop(site_id, None)


def on_schema_changed(kernel: Any) -> Any:
    """The bus handler for ``schema.changed`` (``{ siteId, version }``) and ``sites.changed``."""
    def handler(event: str, payload: Any, ctx: Any) -> None:
        site_id = None
        if isinstance(payload, dict):
            site_id = payload.get("siteId") or payload.get("id")
        entry = _cache(kernel).get(site_id) if isinstance(site_id, str) else None
        version = payload.get("version") if isinstance(payload, dict) else None
        # A late message about an older version must not evict a newer snapshot.
        if entry is not None and isinstance(version, int) and entry.snapshot.version >= version:
            return
        forget(kernel, site_id if isinstance(site_id, str) else None)

    return handler
