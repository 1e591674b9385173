"""The site's content version and the ETag built from it.

The version is what the ETag fingerprints: the head cursor of the site's durable event log
(every item write, scheduled publish or unpublish, schema change and file change moves it) and
a digest of the public role's rules (a permission change moves what the public sees without an
event). It is kept in the site cache ``delivery_version``, so a revalidation reads no database;
every worker drops it on the bus's item, schema, file and access actions (Redis fans them out),
and its TTL (``SVC_DELIVER_VERSION_TTL``) bounds staleness where no message arrives.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from kernel import ANONYMOUS, SiteCacheSpec

CACHE = "delivery_version"
# Action events after which a site's version is read again (their context names the site).
MOVED_BY = ("items.*", "collections.*", "fields.*", "relations.*", "files.*", "access.changed")


def cache_spec(kernel: Any) -> SiteCacheSpec:
    return SiteCacheSpec(CACHE, 10_000, float(kernel.settings.get("deliver_version_ttl")),
                         doc="Each site's content version for delivery ETags (one entry per site).")


async def content_version(kernel: Any, site_id: str) -> str:
    """The site's content version (cached; a database read only after a change or the TTL)."""

    async def load(stale: str | None) -> str:
        head = await kernel.events.head(site_id)
        snapshot = await kernel.access.snapshot(ANONYMOUS, site_id)
        rules = sorted(repr(dataclasses.astuple(rule)) for rule in snapshot.rules)
        digest = hashlib.sha256("\n".join(rules).encode()).hexdigest()[:16]
        return f"{head}:{digest}"

    return await kernel.site_caches[CACHE].get_or_load(site_id, None, load)


def etag(site_id: str, version: str, extra: str = "") -> str:
    """A weak ETag: the fingerprint of the site id, its content version and, for an answer
    that depends on something else (a menu's value), that too. Two sites never share one."""
    digest = hashlib.sha256(f"{site_id}\x00{version}\x00{extra}".encode()).hexdigest()[:32]
    return f'W/"{digest}"'


def on_change(kernel: Any):
    """The bus action handler dropping the version of the site a write happened in."""
    def handler(event: str, payload: Any, ctx: Any) -> None:
        site_id = getattr(ctx, "site_id", None)
        if site_id is None and isinstance(payload, dict):
            site_id = payload.get("siteId")
        kernel.site_caches[CACHE].invalidate(site_id if isinstance(site_id, str) else None)

    return handler
