"""The hourly ``files.upkeep`` job: presigned uploads that expired without ``POST /files``
lose their pending object and row."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from sqlalchemy import select

from kernel.db.meta import now_utc
from kernel.tenancy.scope import SiteDB
from plugins.files.tables import uploads

log = logging.getLogger("svc.files")
CHUNK = 500
GRACE = dt.timedelta(minutes=5)  # a PUT that started just before expiry may still be finishing


async def run(kernel: Any, now: dt.datetime | None = None) -> int:
    """Sweep expired pending uploads; returns how many it found (those whose object could not
    be deleted stay for the next run)."""
    before = (now or now_utc()) - GRACE
    found = 0
    after = ""
    # Across sites on purpose: the job is the instance's, and a site without an expired upload
    # costs nothing. Batches of CHUNK rows in id order; each batch's deleted rows go in one
    # statement per site, through that site's SiteDB.
    while True:
        async with kernel.db.connect() as conn:
            rows = list((await conn.execute(
                select(uploads.c.site_id, uploads.c.id, uploads.c.storage_key)
                .where(uploads.c.expires_at < before, uploads.c.id > after)
                .order_by(uploads.c.id).limit(CHUNK))).mappings())
            await conn.rollback()
        gone: dict[str, list[str]] = {}
        for row in rows:
            try:
                await kernel.storage.delete(row["storage_key"])
            except Exception:  # noqa: BLE001 - the next run tries again
                log.exception("could not delete the pending upload %s", row["id"])
                continue
            gone.setdefault(row["site_id"], []).append(row["id"])
        for site_id, ids in gone.items():
            async with kernel.db.begin() as conn:
                db = SiteDB(site_id, conn)
                await db.execute(db.delete(uploads).where(uploads.c.id.in_(ids)))
        found += len(rows)
        if len(rows) < CHUNK:
            return found
        after = rows[-1]["id"]
