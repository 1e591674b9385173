"""The sync: each active pipeline is a member of the kernel consumer group ``store_sync``, so it
has its own checkpoint, lease, order and retries, and one failing target never delays another.

A batch of item events, narrowed to the pipeline's collections and flags as they are when the
batch is handled (create, update and delete as its flags say; an event a flag left out is not
pushed later), becomes one write per item, in the order of each item's last event: the item as the
pipeline's role reads it now through the items API (events are thin, docs/events.md), or a delete
when its last event is a delete or the role can no longer see it (and ``syncOnDelete`` is on).
The batch goes to the target in one commit (docstore) or PUT/DELETE by PUT/DELETE (rtdb).

A failure (the target refused or was not reachable) is logged and raised: the dispatcher keeps
the checkpoint and gives the same batch again after its backoff (``kernel.base.backoff``,
``SVC_EVENTS_RETRY_*``), in this process or another, also after a restart. The attempt
``SVC_STORE_SYNC_MAX_ATTEMPTS`` that fails sets the batch aside on the dead-letter list
(``dead_letters``: replay later, a notification now) and acknowledges it. Writes are whole
documents of the current state, so pushing a batch again is harmless and an item's writes
cannot arrive out of order. A success moves ``lastSyncAt`` and ``lastSyncItemCount``.

``backfill.py`` pushes what existed before (through ``push``, ``reader`` and ``record_attempt``).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import OrderedDict
from typing import Any

from sqlalchemy import insert, select, update

from kernel import ApiError, Principal, SecretError, SiteCacheSpec
from kernel.db.meta import now_utc
from kernel.events import ConsumerGroup, Event, GroupMember
from plugins.access import api as access_api
from plugins.items import api as items
from plugins.store_sync import dead_letters
from plugins.store_sync import pipelines as pl
from plugins.store_sync.bodies import TargetPath
from plugins.store_sync.tables import pipelines, sync_log
from plugins.store_sync.targets import PushFailed, Write, push_docstore, push_rtdb

log = logging.getLogger("svc.store_sync")

LOG_KEEP = 500  # log entries kept per pipeline
ITEM_EVENTS = ("items.*",)


class Paused(Exception):
    """The pipeline was paused or deleted after it was listed: keep the position."""


MEMBERS_CACHE = SiteCacheSpec("store_sync_pipelines", max_entries=10_000, ttl=5.0, invalidate_on=(pl.CHANGED,),
                              doc="Active store-sync pipelines per site (the sync's dispatch).")


async def members(kernel: Any, site_id: str) -> list[GroupMember]:
    """The site's active pipelines with their filters (cached; a change drops the entry)."""
    return await kernel.site_caches[MEMBERS_CACHE.name].get_or_load(site_id, None, lambda _: _load(kernel, site_id))


async def _load(kernel: Any, site_id: str) -> list[GroupMember]:
    async with kernel.db.connect() as conn:
        rows = list((await conn.execute(select(pipelines).where(
            pipelines.c.site_id == site_id, pipelines.c.status == "active"))).mappings())
        await conn.rollback()
    # Every member takes every item event, and ``handle`` keeps those of the pipeline's current
    # collections and flags. Filters given to the dispatcher would be the ones of this listing:
    # a run still going with them after a PATCH added a collection would move the checkpoint past
    # that collection's new events, and they would never be pushed.
    return [GroupMember(row["id"], ITEM_EVENTS) for row in rows]


def consumer_group(kernel: Any) -> ConsumerGroup:
    return ConsumerGroup(pl.GROUP, members, handle, batch_size=int(kernel.settings.get("store_sync_batch")))


async def _pipeline(kernel: Any, site_id: str, pipeline_id: str) -> Any:
    async with kernel.db.connect() as conn:
        row = (await conn.execute(select(pipelines).where(
            pipelines.c.site_id == site_id, pipelines.c.id == pipeline_id))).mappings().first()
        await conn.rollback()
    return row


class RoleGone(Exception):
    """The pipeline's role was deleted: it reads nothing until ``role`` is set again."""


async def reader(kernel: Any, row: Any) -> Any:
    """The items-API context the pipeline reads as: its role, nothing more (docs/store-sync.md);
    RoleGone when the role no longer exists in the site."""
    async with kernel.db.connect() as conn:
        role = await access_api.role_in_site(conn, row["site_id"], row["role_id"])
        await conn.rollback()
    if role is None:
        raise RoleGone("the pipeline's role no longer exists; set 'role'")
    principal = Principal(kind="store_sync", site_id=row["site_id"], role_id=row["role_id"])
    return items.context(kernel, row["site_id"], await kernel.access.resolve(principal, row["site_id"]),
                         request_id=f"store-sync:{row['id']}")


@dataclasses.dataclass
class Outcome:
    writes: list[Write] = dataclasses.field(default_factory=list)
    skipped: int = 0


async def writes_for(kernel: Any, row: Any, events: list[Event]) -> Outcome:
    """One write per item of ``events``, ordered by each item's last event (see the module
    docstring). An item the role cannot see (deleted, or outside its row filter) is deleted at
    the target with ``syncOnDelete``, else skipped; a collection it may not read is skipped."""
    last: OrderedDict[tuple[str, str], str] = OrderedDict()
    for event in events:
        if event.collection is None or event.item_id is None:
            continue
        key = (event.collection, event.item_id)
        last.pop(key, None)
        last[key] = event.type
    path = TargetPath(row["target_path"])
    ctx = await reader(kernel, row)
    out = Outcome()
    for (collection, item_id), kind in last.items():
        where = path.expand(collection, item_id)
        data = None
        if kind != "items.delete":
            try:
                data = await items.read(ctx, collection, item_id)
            except ApiError as exc:
                if exc.status == 403:  # the role may not read the collection: nothing to mirror
                    out.skipped += 1
                    continue
                if exc.status != 404:
                    raise
        if data is None and not row["sync_on_delete"]:
            out.skipped += 1
            continue
        out.writes.append(Write(where, data))
    return out


async def push(kernel: Any, row: Any, writes: list[Write]) -> int:
    """Send ``writes`` to the pipeline's target; returns how many were written (PushFailed)."""
    if not writes:
        return 0
    try:
        credentials = pl.open_credentials(kernel, row)
    except (SecretError, ApiError) as exc:  # the key is gone or was rotated away: say so in the log
        raise PushFailed(f"the credentials do not open: {exc}") from None
    if row["target"] == "docstore":
        cache_key = f"{row['site_id']}:{row['id']}:{row['updated_at']}"
        await push_docstore(kernel, cache_key, row["project_id"] or credentials["project_id"], credentials, writes)
        return len(writes)
    return await push_rtdb(kernel, credentials, writes)


async def record_attempt(kernel: Any, row: Any, *, kind: str, attempt: int, pushed: int, failed: int, skipped: int,
                         started: float, error: str | None, events: list[Event] | None = None) -> None:
    """Log one attempt (keeping the newest ``LOG_KEEP``) and, on success, the pipeline's
    ``lastSyncAt``/``lastSyncItemCount``; ``lastError`` is the last failure, cleared by a success."""
    site_id, now = row["site_id"], now_utc()
    async with kernel.db.begin() as conn:
        if (await conn.execute(select(pipelines.c.id).where(pipelines.c.site_id == site_id,
                                                            pipelines.c.id == row["id"]))).first() is None:
            return  # deleted meanwhile, with its log
        await conn.execute(insert(sync_log).values(
            site_id=site_id, pipeline_id=row["id"], kind=kind, status="failed" if error else "ok", attempt=attempt,
            pushed=pushed, failed=failed, skipped=skipped, error=None if error is None else error[:500],
            duration_ms=int((time.monotonic() - started) * 1000), attempted_at=now,
            first_event=str(events[0].id) if events else None, last_event=str(events[-1].id) if events else None))
        values: dict[str, Any] = {"last_error": error[:500]} if error else {
            "last_error": None, "last_sync_at": now, "last_sync_item_count": pushed}
        await conn.execute(update(pipelines).where(pipelines.c.site_id == site_id, pipelines.c.id == row["id"])
                           .values(**values))
        cutoff = (await conn.execute(select(sync_log.c.id).where(sync_log.c.pipeline_id == row["id"])
                                     .order_by(sync_log.c.id.desc()).offset(LOG_KEEP).limit(1))).scalar()
        if cutoff is not None:
            await conn.execute(sync_log.delete().where(sync_log.c.pipeline_id == row["id"], sync_log.c.id <= cutoff))


async def handle(kernel: Any, site_id: str, pipeline_id: str, events: list[Event], attempt: int) -> None:
    """One attempt to sync a batch of events (the consumer group's handler)."""
    row = await _pipeline(kernel, site_id, pipeline_id)
    if row is None:
        # Deleted after this batch was claimed (its checkpoint went with it): push nothing. The
        # dispatcher's next claim finds no checkpoint and forgets the pipeline.
        raise Paused("the pipeline is gone")
    if row["status"] != "active":
        raise Paused(f"the pipeline is {row['status']}")
    collections, types = set(row["collections"] or ()), pl.types_of(row)
    events = [e for e in events if e.collection in collections and e.type in types]
    if not events:
        return  # nothing this pipeline syncs (now): its position moves on
    started = time.monotonic()
    try:
        outcome = await writes_for(kernel, row, events)
    except RoleGone as exc:  # kept in the log and lastError; the batch waits for a new role
        await record_attempt(kernel, row, kind="sync", attempt=attempt, pushed=0, failed=0, skipped=0,
                             started=started, error=str(exc), events=events)
        raise
    try:
        pushed = await push(kernel, row, outcome.writes)
    except PushFailed as exc:
        await record_attempt(kernel, row, kind="sync", attempt=attempt, pushed=exc.done,
                             failed=len(outcome.writes) - exc.done, skipped=outcome.skipped, started=started,
                             error=str(exc), events=events)
        limit = int(kernel.settings.get("store_sync_max_attempts") or 0)
        if limit and attempt >= limit:
            # A poison batch: set it aside (and tell the studio) so later changes flow again.
            await dead_letters.set_aside(kernel, row, events, attempt, str(exc))
            return
        raise
    await record_attempt(kernel, row, kind="sync", attempt=attempt, pushed=pushed, failed=0, skipped=outcome.skipped,
                         started=started, error=None, events=events)
