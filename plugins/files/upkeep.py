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
GRACE = dt.timedelta(minutes=5)  # a PUT that started just before expiry may still be finishing


async def run(kernel: Any, now: dt.datetime | None = None) -> int:
    """Sweep expired pending uploads; returns how many went."""
    before = (now or now_utc()) - GRACE
    # Across sites on purpose: the job is the instance's; each site's rows are then deleted
    # through that site's SiteDB.
    async with kernel.db.connect() as conn:
        rows = list((await conn.execute(select(uploads.c.site_id, uploads.c.id, uploads.c.storage_key)
                                        .where(uploads.c.expires_at < before))).mappings())
        await conn.rollback()
    for row in rows:
        try:
            await kernel.storage.delete(row["storage_key"])
        except Exception:  # noqa: BLE001 - the next run tries again
            log.exception("could not delete the pending upload %s", row["id"])
            continue
        async with kernel.db.begin() as conn:
            db = SiteDB(row["site_id"], conn)
            await db.execute(db.delete(uploads).where(uploads.c.id == row["id"]))
    return len(rows)
