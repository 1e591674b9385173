"""Releases: create, list, read, change and delete; the logic behind ``/releases`` (no Falcon).

Who may: any authenticated member of the site (admin or a role there). What a member can put
in a release is bounded by what it can read (entries are checked to exist through the items
API as the caller); what a publish changes is bounded by the publisher's own permissions.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import func

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from plugins.access import api as access_api
from plugins.accounts import api as accounts_api
from plugins.items import api as items
from plugins.releases import scheduler
from plugins.releases.bodies import MAX_ITEMS, STATUSES, Entry, ReleaseChanges, invalid, parse_body
from plugins.releases.records import (
    count_entries,
    full_record,
    immutable,
    load_row,
    release_record,
)
from plugins.releases.tables import release_items, releases

ID_CHUNK = 200  # ids per existence query (the items API's largest page)


async def require_member(ctx: Any) -> str:
    """The request's site, for a studio member of it (401 anonymous, 403 frontend realm or no role)."""
    return await access_api.require_studio(ctx, "Releases")


def scheduler_record(principal: Any) -> dict[str, Any]:
    """Who the scheduler publishes as: the principal that set ``publishAt``, without its session
    (a release scheduled for next month outlives the session that scheduled it); a suspended
    user, a bumped token version or a deleted API key is refused when the release is due."""
    record = accounts_api.principal_record(principal)
    record["sessionId"] = None
    return record


async def check_entries(ctx: Any, entries: list[Entry], uow: Any) -> None:
    """Every entry names an item of this site the caller can see (404 ``ITEM_NOT_FOUND``), and
    every pinned revision is committed (409 ``REVISION_STAGED``)."""
    wanted: dict[str, list[str]] = defaultdict(list)
    for entry in entries:
        wanted[entry.collection].append(entry.item_id)
    for collection, ids in wanted.items():
        found: set[str] = set()
        for start in range(0, len(ids), ID_CHUNK):
            chunk = ids[start:start + ID_CHUNK]
            try:
                page = await items.list_items(ctx, collection, items.query(
                    fields=["id"], filter={"id": {"_in": chunk}}, limit=len(chunk), meta="none"), uow=uow)
            except ApiError as error:
                if error.status == 404:
                    raise ApiError(404, "ITEM_NOT_FOUND", f"No collection '{collection}' in this site") from None
                raise
            found |= {str(item["id"]) for item in page.items}
        missing = [i for i in ids if i not in found]
        if missing:
            raise ApiError(404, "ITEM_NOT_FOUND", f"No item '{missing[0]}' in '{collection}' in this site")
    for entry in entries:
        if entry.revision_id is not None:
            await items.pinnable_revision(ctx, entry.collection, entry.item_id, entry.revision_id, uow=uow)
        if entry.version_key is not None:
            await items.get_version(ctx, entry.collection, entry.item_id, entry.version_key, uow=uow)


async def _write_entries(uow: Any, release_id: str, changes: ReleaseChanges) -> None:
    db = uow.db
    for collection, item_id in changes.remove:
        await db.execute(db.delete(release_items).where(
            release_items.c.release_id == release_id, release_items.c.collection == collection,
            release_items.c.item_id == item_id))
    if not changes.add:
        return
    existing = {(r["collection"], r["item_id"]): r["id"] for r in await db.all(db.select(
        release_items, release_items.c.id, release_items.c.collection, release_items.c.item_id).where(
        release_items.c.release_id == release_id))}
    position = int(await db.scalar(db.select(release_items, func.max(release_items.c.position)).where(
        release_items.c.release_id == release_id)) or 0)
    new_rows = []
    for entry in changes.add:
        values = {"target_status": entry.target_status, "revision_id": entry.revision_id,
                  "version_key": entry.version_key, "outcome": None, "reason": None, "message": None}
        known = existing.get((entry.collection, entry.item_id))
        if known is not None:  # adding an item again replaces its entry
            await db.execute(db.update(release_items).where(release_items.c.id == known).values(**values))
            continue
        position += 1
        new_rows.append({"id": uuid7(), "site_id": uow.site_id, "release_id": release_id, "position": position,
                         "collection": entry.collection, "item_id": entry.item_id, **values})
    if new_rows:
        await db.insert(release_items, new_rows)
    if await _count(db, release_id) > MAX_ITEMS:
        raise invalid(f"A release holds at most {MAX_ITEMS} items", ["addItems"])


async def _count(db: Any, release_id: str) -> int:
    return int(await db.scalar(db.select(release_items, func.count()).where(
        release_items.c.release_id == release_id)) or 0)


async def create(ctx: Any, body: Any) -> dict[str, Any]:
    """``POST /releases``: a ``draft``, or ``scheduled`` with a ``publishAt`` (never in the past)."""
    site_id = await require_member(ctx)
    now = now_utc()
    changes = parse_body(body, creating=True, now=now)
    publish_at = None if changes.publish_at is ... else changes.publish_at
    window = None if changes.window is ... else changes.window
    release_id = uuid7()
    async with ctx.unit_of_work() as uow:
        await check_entries(ctx, changes.add, uow)
        await uow.db.insert(releases, {
            "id": release_id, "site_id": site_id, "name": changes.name, "atomicity_mode": changes.mode,
            "status": "scheduled" if publish_at else "draft", "publish_at": publish_at, "maintenance_window": window,
            "created_by": ctx.principal.user_id, "scheduled_by": scheduler_record(ctx.principal) if publish_at else None,
            "created_at": now, "updated_at": now, "published_at": None, "next_run_at": None, "last_error": None})
        await _write_entries(uow, release_id, changes)
        if publish_at:
            await scheduler.schedule(uow, release_id, publish_at, window)
        return await full_record(uow.db, release_id)


async def list_page(ctx: Any, status: str | None, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    """``GET /releases``: newest first, optionally of one ``status``; with the total."""
    await require_member(ctx)
    if status is not None and status not in STATUSES:
        raise invalid(f"'status' is one of {', '.join(STATUSES)}", ["query", "status"])
    async with ctx.reader() as db:
        stmt = db.select(releases)
        count = db.select(releases, func.count())
        if status is not None:
            stmt, count = stmt.where(releases.c.status == status), count.where(releases.c.status == status)
        rows = await db.all(stmt.order_by(releases.c.created_at.desc(), releases.c.id.desc())
                            .limit(limit).offset(offset))
        total = int(await db.scalar(count) or 0)
        counts: dict[str, int] = {}
        if rows:
            counts = {r["release_id"]: int(r["n"]) for r in await db.all(db.select(
                release_items, release_items.c.release_id, func.count().label("n")).where(
                release_items.c.release_id.in_([r["id"] for r in rows])).group_by(release_items.c.release_id))}
    return [release_record(r, counts.get(r["id"], 0)) for r in rows], total


async def get(ctx: Any, release_id: str) -> dict[str, Any]:
    """``GET /releases/:id``: the release with its items (and their last outcomes)."""
    await require_member(ctx)
    async with ctx.reader() as db:
        return await full_record(db, release_id)


async def update(ctx: Any, release_id: str, body: Any) -> dict[str, Any]:
    """``PATCH /releases/:id``: meta, ``addItems``, ``removeItems``, ``publishAt`` (setting it
    schedules or moves the run, null cancels it). 409 ``RELEASE_IMMUTABLE`` once published."""
    await require_member(ctx)
    now = now_utc()
    changes = parse_body(body, creating=False, now=now)
    async with ctx.unit_of_work() as uow:
        db = uow.db
        # Lock the row first: a publish running now either finished (we see "published") or waits.
        locked = await db.execute(db.update(releases).where(releases.c.id == release_id).values(updated_at=now))
        row = await load_row(db, release_id)
        if locked.rowcount == 0 or row["status"] == "published":
            raise immutable() if row["status"] == "published" else ApiError(404, "RECORD_NOT_FOUND", "No such release")
        values: dict[str, Any] = {}
        if changes.name is not ...:
            values["name"] = changes.name
        if changes.mode is not ...:
            values["atomicity_mode"] = changes.mode
        if changes.window is not ...:
            values["maintenance_window"] = changes.window
        publish_at = row["publish_at"] if changes.publish_at is ... else changes.publish_at
        window = row["maintenance_window"] if changes.window is ... else changes.window
        if changes.publish_at is not ...:
            values["publish_at"] = changes.publish_at
            values["scheduled_by"] = scheduler_record(ctx.principal) if changes.publish_at else None
            values["status"] = "scheduled" if changes.publish_at else "draft"
            values["last_error"] = None
        if values:
            await db.execute(db.update(releases).where(releases.c.id == release_id).values(**values))
        await check_entries(ctx, changes.add, uow)
        await _write_entries(uow, release_id, changes)
        if changes.publish_at is not ... or (changes.window is not ... and publish_at is not None):
            if publish_at is None:
                await scheduler.unschedule(uow, release_id)
            else:
                await scheduler.schedule(uow, release_id, publish_at, window)
        return await full_record(db, release_id)


async def delete(ctx: Any, release_id: str) -> None:
    """``DELETE /releases/:id``: the release, its entries and its scheduled run."""
    await require_member(ctx)
    async with ctx.unit_of_work() as uow:
        db = uow.db
        await load_row(db, release_id)
        await db.execute(db.delete(release_items).where(release_items.c.release_id == release_id))
        await db.execute(db.delete(releases).where(releases.c.id == release_id))
        await scheduler.unschedule(uow, release_id)


__all__ = ["count_entries", "create", "delete", "get", "list_page", "update"]
