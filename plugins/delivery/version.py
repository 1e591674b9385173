"""The site's content version and the ETag built from it.

The version is what the ETag fingerprints: the position of the site's last content event in the
durable event log (every item write, scheduled publish or unpublish, schema change and file
change moves it; other events, such as pageview hits, do not) and
a digest of the public role's rules (a permission change moves what the public sees without an
event). It is kept in the site cache ``delivery_version``, so a revalidation reads no database;
every worker drops it on the bus's item, schema, file and access actions (Redis fans them out),
and its TTL (``SVC_DELIVER_VERSION_TTL``) bounds staleness where no message arrives.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from sqlalchemy import or_, select

from kernel import ANONYMOUS, SiteCacheSpec
from kernel.events.log import horizon
from kernel.events.tables import events

CACHE = "delivery_version"
# The event types that are content: other events in the log (a pageview hit written by the
# ``cdc`` pageview strategy) must not move the fingerprint, or every visit would bust caches.
CONTENT_EVENTS = ("items.", "collections.", "fields.", "relations.", "files.")
# Action events after which a site's version is read again (their context names the site).
MOVED_BY = ("items.*", "collections.*", "fields.*", "relations.*", "files.*", "access.changed")


def cache_spec(kernel: Any) -> SiteCacheSpec:
    return SiteCacheSpec(CACHE, 10_000, float(kernel.settings.get("deliver_version_ttl")),
                         doc="Each site's content version for delivery ETags (one entry per site).")


async def content_version(kernel: Any, site_id: str) -> str:
    """The site's content version (cached; a database read only after a change or the TTL)."""

    async def load(stale: str | None) -> str:
        head = await content_head(kernel, site_id)
        snapshot = await kernel.access.snapshot(ANONYMOUS, site_id)
        rules = sorted(repr(dataclasses.astuple(rule)) for rule in snapshot.rules)
        digest = hashlib.sha256("\n".join(rules).encode()).hexdigest()[:16]
        return f"{head}:{digest}"

    return await kernel.site_caches[CACHE].get_or_load(site_id, None, load)


async def content_head(kernel: Any, site_id: str) -> str:
    """The position of the site's last content event below the visibility horizon (one
    indexed query, newest first), ``0-0`` when there is none."""
    db = kernel.db
    async with db.connect() as conn:
        bound = await horizon(conn, db.dialect)
        stmt = select(events.c.txid, events.c.id).where(
            events.c.site_id == site_id, or_(*(events.c.type.startswith(p) for p in CONTENT_EVENTS)))
        if bound is not None:
            stmt = stmt.where(events.c.txid < bound)
        row = (await conn.execute(stmt.order_by(events.c.txid.desc(), events.c.id.desc()).limit(1))).first()
        await conn.rollback()
    return "0-0" if row is None else f"{row[0]}-{row[1]}"


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
