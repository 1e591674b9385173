"""The hourly ``cdc.upkeep`` job: mark ``stale`` the subscriptions retention overtook, and drop
delivery records older than ``SVC_CDC_RETENTION_DAYS`` (the events they name are gone too)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import delete, select

from kernel.db.meta import now_utc
from plugins.cdc import subscriptions as subs
from plugins.cdc.tables import deliveries, subscriptions


async def run(kernel: Any, now: dt.datetime | None = None) -> None:
    before = (now or now_utc()) - dt.timedelta(days=int(kernel.settings.cdc_retention_days))
    async with kernel.db.connect() as conn:
        rows = list((await conn.execute(select(subscriptions).where(
            subscriptions.c.status.in_(("active", "paused"))))).mappings())
        await conn.rollback()
    by_site: dict[str, list[Any]] = {}
    for row in rows:
        by_site.setdefault(row["site_id"], []).append(row)
    for site_id, site_rows in by_site.items():
        await subs.mark_stale(kernel, site_id, site_rows)
    async with kernel.db.begin() as conn:
        await conn.execute(delete(deliveries).where(deliveries.c.attempted_at < before))
