"""The hourly ``cdc.upkeep`` job: mark ``stale`` the subscriptions retention overtook, and drop
delivery records older than ``SVC_CDC_RETENTION_DAYS`` (the events they name are gone too).

Across sites on purpose, and never site by site (issue 27, "scale"): one query finds the active
or paused subscriptions whose position (a pull subscription's cursor, a webhook's checkpoint)
lies before their site's retention watermark, so a site whose subscriptions are all in range, or
that never lost an event to retention, costs nothing; the deliveries go in bounded batches."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import String, and_, case, func, literal, or_, select

from kernel.db.meta import now_utc
from kernel.events.tables import checkpoints, retention
from kernel.policy.privacy import delete_in_batches
from plugins.cdc import subscriptions as subs
from plugins.cdc.tables import deliveries, subscriptions

DELIVERY_CHUNK = 1000

S = subscriptions.c


async def run(kernel: Any, now: dt.datetime | None = None) -> None:
    before = (now or now_utc()) - dt.timedelta(days=int(kernel.settings.cdc_retention_days))
    async with kernel.db.connect() as conn:
        rows = list((await conn.execute(overtaken())).mappings())
        await conn.rollback()
    by_site: dict[str, list[Any]] = {}
    for row in rows:
        by_site.setdefault(row["site_id"], []).append(row)
    for site_id, site_rows in by_site.items():
        await subs.mark_stale(kernel, site_id, site_rows)  # checks each again, in its site
    await prune_deliveries(kernel, before)


def overtaken() -> Any:
    """The active or paused subscriptions, across sites, whose position is before their site's
    retention watermark (``svc_event_retention``): the only ones ``mark_stale`` would change."""
    pull = S.kind == "pull"
    txid = case((pull, func.coalesce(S.cursor_txid, 0)), else_=func.coalesce(checkpoints.c.cursor_txid, 0))
    event_id = case((pull, func.coalesce(S.cursor_id, 0)), else_=func.coalesce(checkpoints.c.cursor_id, 0))
    consumer = literal(subs.checkpoint_name(""), String) + S.id
    return (select(subscriptions)
            .join(retention, retention.c.site_id == S.site_id)
            .outerjoin(checkpoints, and_(checkpoints.c.site_id == S.site_id, checkpoints.c.consumer == consumer))
            .where(S.status.in_(("active", "paused")),
                   or_(txid < retention.c.pruned_txid,
                       and_(txid == retention.c.pruned_txid, event_id < retention.c.pruned_id)))
            .order_by(S.site_id, S.created_at, S.id))


async def prune_deliveries(kernel: Any, before: dt.datetime) -> int:
    """Delete delivery records attempted before ``before`` in every site, at most
    ``DELIVERY_CHUNK`` per transaction; returns how many went."""
    return await delete_in_batches(kernel, deliveries, deliveries.c.attempted_at < before, chunk=DELIVERY_CHUNK)
