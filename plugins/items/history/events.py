"""The item write filters of history: pins, translations, revisions, inside the write's transaction.

Registered on ``*.items.create`` and ``*.items.update`` (the collection-scoped events, which
run after the generic ``items.<op>``) at a priority after every default filter, so they see
the content a write will store, after flows and extensions changed it. A raise here vetoes
the write; the revision insert commits or rolls back with it (ARCHITECTURE rule 5).

On update: the translations value is checked, a changed pinned field of another holder is
409, then the revision is written with the write's ``causedBy`` (its kind ``revert``/``promote``
for those causes, ``revisions.revision_kind``; the ``cause`` of an ``onDelete`` set-null in its
origin); an item's first update records its created state
first. On create: the translations check only. After a hard delete (an action, after
commit), the item's revisions, versions and pins are removed.
"""

from __future__ import annotations

from typing import Any

from kernel.tenancy.scope import SiteDB
from plugins.items.core.rows import UNPINNED
from plugins.items.history import pins, revisions
from plugins.items.read import locale
from plugins.items.tables import HISTORY_TABLES, items
from plugins.schema.api import get_schema, load_schema

# Bus filters run lowest first; the items core and flows use the default (100).
PRIORITY = 10_000


async def collection_of(ctx: Any, name: str) -> Any:
    """The event's collection: the cached schema, else (created in this very transaction) the
    schema as this transaction sees it."""
    coll = (await get_schema(ctx.kernel, ctx.site_id)).collection(name)
    if coll is None:
        coll = (await load_schema(ctx.conn, ctx.site_id)).collection(name)
    return coll


async def _context(ctx: Any, payload: Any) -> tuple[SiteDB, Any, str] | None:
    if ctx.conn is None or not ctx.site_id or not isinstance(payload, dict):
        return None
    item_id = payload.get("id")
    coll = await collection_of(ctx, payload.get("collection"))
    if coll is None or not isinstance(item_id, str):
        return None
    return SiteDB(ctx.site_id, ctx.conn), coll, item_id


async def on_item_update(event: str, payload: Any, ctx: Any) -> None:
    """Filter of ``<collection>.items.update``."""
    found = await _context(ctx, payload)
    if found is None:
        return None
    before, after = payload.get("before"), payload.get("after")
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None
    db, coll, item_id = found
    locale.check_translations(coll, after.get(locale.FIELD))
    changed = [name for name in coll.fields if before.get(name) != after.get(name)]
    caused_by = payload.get("causedBy")
    uow = ctx.uow
    if uow is None or not uow.notes.pop((UNPINNED, coll.id, item_id), False):  # read with the row when it could be
        await pins.check_write(db, coll, item_id, changed, ctx.principal, caused_by)
    rows = [revisions.baseline_row(coll, item_id, before)] if revisions.first_update(before) else []
    kind, tag = revisions.revision_kind(payload)
    rows.append(revisions.revision_row(coll, item_id, kind=kind, before=before, after=after,
                                       principal=ctx.principal, origin=tag,
                                       caused_by=caused_by if isinstance(caused_by, str) else None))
    await revisions.record_revisions(db, rows)  # the baseline and the revision: one statement
    return None


async def on_item_create(event: str, payload: Any, ctx: Any) -> None:
    """Filter of ``<collection>.items.create``: only the translations check (a create writes no
    revision; its first update records the created state)."""
    after = payload.get("after") if isinstance(payload, dict) else None
    if not isinstance(after, dict) or after.get(locale.FIELD) is None:
        return None
    found = await _context(ctx, payload)
    if found is not None:
        locale.check_translations(found[1], after[locale.FIELD])
    return None


async def on_item_deleted(event: str, payload: Any, ctx: Any) -> None:
    """Action of ``<collection>.items.delete``: after a *hard* delete (the row is gone; soft
    deletes keep it, and their ids are never reused) the item's history goes too, so a new item
    given the same id starts clean. Deletes are rarer than creates: checking here keeps every
    create free of the check."""
    if ctx.remote or not ctx.site_id or not isinstance(payload, dict) or not isinstance(payload.get("id"), str):
        return
    item_id = payload["id"]
    async with ctx.kernel.db.begin() as conn:
        coll = (await load_schema(conn, ctx.site_id)).collection(payload.get("collection"))
        db = SiteDB(ctx.site_id, conn)
        if coll is None or await db.one(db.select(items, items.c.id).where(
                items.c.collection_id == coll.id, items.c.id == item_id)) is not None:
            return
        for table in HISTORY_TABLES:
            await db.execute(db.delete(table).where(table.c.collection_id == coll.id, table.c.item_id == item_id))


def register(bus: Any) -> list[Any]:
    """Subscribe the history handlers (from ``plugin.register_event_handlers``); returns the
    unregister handles."""
    return [bus.on_filter("*.items.create", on_item_create, priority=PRIORITY),
            bus.on_filter("*.items.update", on_item_update, priority=PRIORITY),
            bus.on_action("*.items.delete", on_item_deleted, priority=PRIORITY)]
