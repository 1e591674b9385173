"""The dead-letter list: a batch the target refused ``SVC_STORE_SYNC_MAX_ATTEMPTS`` times is set
aside, so the pipeline's later changes flow again, and the site's studio is told.

``set_aside`` (called by ``sync.handle`` on the last attempt) keeps the batch's items as
identifiers (``[collection, itemId, last event type]``, never values), its event range, the
attempts and the last error, and leaves a ``store_sync.dead_letter`` notification (the realtime
plugin: ``GET /notifications``, the realtime ``notification`` frame, web push), in one
transaction; the sync then acknowledges the batch. ``replay`` pushes those items as the
pipeline's role reads them now (whole documents, as the sync does, so a replay after later
writes is harmless): on success the entry is ``replayed``; on failure it stays ``pending`` with
the new error (``replay.py``). ``discard`` deletes an entry.

Dead letters do not pile up: the retention target ``storeSyncDeadLetters`` (``retention_target``)
prunes an entry ``SVC_STORE_SYNC_DEAD_LETTER_DAYS`` (30) days after its last attempt (a site's
``retention`` setting overrides the horizon; the privacy plugin's daily job and ``POST
/retention/run`` run it, and count it in their ``retention_run`` audit record). Without the
privacy plugin, this plugin's hourly job ``store_sync.dead_letters`` (``prune_job``) applies the
default horizon in every site.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.policy.privacy import RetentionTarget, prune_rows, rows_before
from plugins.accounts import api as accounts_api
from plugins.realtime import api as realtime_api
from plugins.store_sync import pipelines as pl
from plugins.store_sync.tables import dead_letters

NOTIFICATION_KIND = "store_sync.dead_letter"
RETENTION_NAME = "storeSyncDeadLetters"
PRUNE_JOB = "store_sync.dead_letters"
MAX_ITEMS_KEPT = 10_000


@dataclass(frozen=True)
class StoredEvent:
    """An item of a dead letter, shaped like the event ``sync`` turns into a write."""

    collection: str
    item_id: str
    type: str


def record(row: Any) -> dict[str, Any]:
    return {
        "id": row["id"],
        "pipelineId": row["pipeline_id"],
        "status": row["status"],
        "items": [{"collection": c, "itemId": i, "event": t} for c, i, t in row["items"]],
        "eventCount": row["event_count"],
        "firstEventId": row["first_event"],
        "lastEventId": row["last_event"],
        "attempts": row["attempts"],
        "error": row["error"],
        "createdAt": iso(row["created_at"]),
        "updatedAt": iso(row["updated_at"]),
        "replayedAt": iso(row["replayed_at"]),
    }


def retention_target(kernel: Any) -> RetentionTarget:
    """Dead letters whose last attempt (``updated_at``: set aside or replayed) is past the horizon."""

    async def prune(kernel: Any, site_id: str, before: Any) -> int:
        return await prune_rows(kernel, site_id, dead_letters, dead_letters.c.updated_at < before)

    return RetentionTarget(RETENTION_NAME, int(kernel.settings.get("store_sync_dead_letter_days")), prune,
                           "Store-sync dead letters, by their last attempt.",
                           pending=rows_before(dead_letters, dead_letters.c.updated_at))


async def prune_job(kernel: Any) -> int:
    """The hourly job ``store_sync.dead_letters``: without the privacy plugin, the dead letters of
    every site whose last attempt is ``SVC_STORE_SYNC_DEAD_LETTER_DAYS`` old; how many went. With
    it, nothing: its retention run prunes the target by each site's own horizon, which may be
    longer than the default."""
    if any(info.name == "privacy" and info.enabled for info in kernel.plugins):
        return 0
    target = retention_target(kernel)
    before = now_utc() - dt.timedelta(days=target.default_days)
    # One query across sites finds those holding any; idle sites cost nothing more.
    return sum([await target.prune(kernel, site_id, before)
                for site_id in sorted(await target.pending(kernel, before, None))])


def not_found() -> ApiError:
    return ApiError(404, "RECORD_NOT_FOUND", "No such dead letter of this pipeline")


async def set_aside(kernel: Any, row: Any, events: list[Any], attempts: int, error: str) -> str:
    """Keep the batch ``events`` of pipeline ``row`` on the dead-letter list and notify the site's
    admins; returns the entry's id."""
    last: dict[tuple[str, str], str] = {}
    for event in events:
        if event.collection is not None and event.item_id is not None:
            last.pop((event.collection, event.item_id), None)
            last[(event.collection, event.item_id)] = event.type
    entry_id, now, site_id = uuid7(), now_utc(), row["site_id"]
    async with kernel.unit_of_work(site_id) as uow:
        await uow.db.insert(
            dead_letters,
            {
                "id": entry_id,
                "pipeline_id": row["id"],
                "items": [[c, i, t] for (c, i), t in list(last.items())[:MAX_ITEMS_KEPT]],
                "event_count": len(events),
                "first_event": str(events[0].id) if events else None,
                "last_event": str(events[-1].id) if events else None,
                "attempts": attempts,
                "error": error[:500],
                "status": "pending",
                "created_at": now,
                "updated_at": now,
                "replayed_at": None,
            },
        )
        # The site's admins are told (they can replay it), nobody else.
        await realtime_api.notify_each(
            kernel,
            site_id,
            await accounts_api.site_admins(uow.conn, site_id),
            kind=NOTIFICATION_KIND,
            severity="error",
            title=f"Store sync '{row['name'][:100]}' set a batch aside",
            body=f"{len(last)} item(s) after {attempts} failed attempts: {error[:1000]}. Replay it once the "
            f"target takes it.",
            deep_link=f"/store-sync/pipelines/{row['id']}/dead-letters",
            entity_id=entry_id,
            uow=uow,
        )
    return entry_id


async def list_page(
    ctx: Any, pipeline_id: str, status: str | None, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    if status is not None and status not in ("pending", "replayed"):
        raise ApiError.validation("'status' is pending or replayed", path=["query", "status"])
    async with ctx.reader() as db:
        await pl.row_of(db, pipeline_id)
        where = [dead_letters.c.pipeline_id == pipeline_id]
        if status is not None:
            where.append(dead_letters.c.status == status)
        total = await db.scalar(db.select(dead_letters, func.count()).where(*where))
        rows = await db.all(
            db.select(dead_letters)
            .where(*where)
            .order_by(dead_letters.c.created_at.desc(), dead_letters.c.id.desc())
            .limit(limit)
            .offset(offset)
        )
    return [record(r) for r in rows], int(total or 0)


async def entry_row(db: Any, pipeline_id: str, entry_id: str) -> Any:
    await pl.row_of(db, pipeline_id)
    row = await db.one(
        db.select(dead_letters).where(
            dead_letters.c.pipeline_id == pipeline_id, dead_letters.c.id == entry_id
        )
    )
    if row is None:
        raise not_found()
    return row


async def get_record(ctx: Any, pipeline_id: str, entry_id: str) -> dict[str, Any]:
    async with ctx.reader() as db:
        return record(await entry_row(db, pipeline_id, entry_id))


async def discard(ctx: Any, pipeline_id: str, entry_id: str) -> None:
    async with ctx.unit_of_work() as uow:
        await entry_row(uow.db, pipeline_id, entry_id)
        await uow.db.execute(uow.db.delete(dead_letters).where(dead_letters.c.id == entry_id))
