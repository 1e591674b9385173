"""The items plugin's retention target ``revisions`` (``register_retention_targets``): committed
revisions older than the horizon are deleted; staged (prepared, not yet committed) revisions
are kept, since a release still waits on them."""

from __future__ import annotations

import datetime as dt
from typing import Any

from kernel.privacy import RetentionTarget
from kernel.tenancy.scope import SiteDB
from plugins.items.history.tables import revisions

CHUNK = 1000


async def prune_revisions(kernel: Any, site_id: str, before: dt.datetime) -> int:
    total = 0
    while True:
        async with kernel.db.begin() as conn:
            db = SiteDB(site_id, conn)
            ids = [r["id"] for r in await db.all(db.select(revisions, revisions.c.id).where(
                revisions.c.staged.is_(False), revisions.c.created_at < before).limit(CHUNK))]
            if ids:
                await db.execute(db.delete(revisions).where(revisions.c.id.in_(ids)))
        total += len(ids)
        if len(ids) < CHUNK:
            return total


TARGET = RetentionTarget("revisions", 365, prune_revisions, "Item revisions (committed), by creation time.")
