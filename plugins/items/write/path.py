"""The write path of items: create, update (PATCH, PUT, conditional), the singleton's upsert, delete.

Access is checked here (``guard``), input is checked here (``validation``), and writes run in a
unit of work (``core.context.transaction``: the caller's when given, else a new one). The rows
and their events are written by ``writes``; an item a write answers is masked as the caller may
read it and goes through the read hook (``core.reveal``). The façade (``plugins/items/service.py``)
and history's revert and promote call these.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from kernel.base.errors import ApiError
from plugins.items.core import etags
from plugins.items.core.context import default_status, dialect_of, reading, schema_and_collection, transaction
from plugins.items.core.grants import WriteGuard, fields_by_row, mask_row
from plugins.items.core.guard import decide, readable, require
from plugins.items.core.records import mask
from plugins.items.core.reveal import reveal
from plugins.items.core.rows import UNPINNED, fetch_row, live_rows
from plugins.items.core.validation import check_bodies, is_item_id
from plugins.items.errors import action_denied, dependents_exist, record_not_found
from plugins.items.tables import items
from plugins.items.write import ondelete, writes
from plugins.schema.api import get_schema, nested_fields

# The item's ETag for the caller, read in the write's transaction: (uow, item_id, updated_at) -> tag.
TagOf = Callable[[Any, str, Any], Awaitable[str]]


async def _as_read(ctx: Any, coll: Any, item: dict[str, Any], db: Any = None) -> dict[str, Any]:
    """A just-written item as the caller may read it (only ``id`` without read permission;
    where read grants depend on the row, the fields granted on this one, read on ``db``, the
    write's transaction, when given)."""
    read = await decide(ctx, coll.name, "read")
    if not read.paired:
        return mask(item, readable(read))
    snapshot = await get_schema(ctx.kernel, ctx.site_id)
    async with contextlib.AsyncExitStack() as stack:
        db = db if db is not None else await stack.enter_async_context(ctx.reader())
        found = await fields_by_row(db, coll, read, [item["id"]], dialect=dialect_of(ctx), snapshot=snapshot)
    return mask_row(item, found.get(item["id"], frozenset()))


async def create_items(ctx: Any, collection: str, body: Any, *, uow: Any = None, cause: str | None = None) -> Any:
    """Create one item (``body`` an object) or many in one transaction (``body`` an array, at
    most ``SVC_MAX_BATCH``); returns the item or the list, as the caller may read them."""
    decision = await require(ctx, collection, "create")
    snap, coll = await schema_and_collection(ctx, collection)
    bulk = isinstance(body, list)
    bodies = body if bulk else [body]
    limit = ctx.kernel.settings.max_batch
    if bulk and not 1 <= len(bodies) <= limit:
        raise ApiError.validation(f"A bulk create takes 1 to {limit} items", path=["body"])
    if coll.singleton:
        if bulk:
            raise ApiError.validation(f"'{collection}' is a singleton: create one object", path=["body"])
        if await _singleton_row(ctx, coll, uow) is not None:
            raise ApiError(409, "CONFLICT", f"'{collection}' is a singleton and has its item; PATCH it instead",
                           path=["body"])
    prefixes = [[i] for i in range(len(bodies))] if bulk else [[]]
    drafts = check_bodies(coll, bodies, prefixes, mode="create", writable=decision.fields, action="write",
                          nested=nested_fields(snap, collection), read=await decide(ctx, collection, "read"))
    guard = WriteGuard(decision, snap, dialect_of(ctx))  # the stored rows must satisfy the create rule
    keys = [frozenset(b) - {"id"} for b in bodies]
    async with transaction(ctx, uow, cause) as u:
        created = await writes.insert_drafts(u, coll, drafts, prefixes, default_status(coll), guard=guard, keys=keys)
        shaped = [await _as_read(ctx, coll, item, u.db) for item in created]
        await reveal(ctx, snap, collection, shaped, "write", uow=u)
    return shaped if bulk else shaped[0]


async def update_item(ctx: Any, collection: str, item_id: str, body: Any, *, replace: bool = False,
                      uow: Any = None, cause: str | None = None) -> dict[str, Any]:
    """PATCH (``replace=False``: the given fields) or PUT (``replace=True``: the whole content,
    defaults for what is absent; ``status``/``sort`` kept unless given)."""
    return (await _update_item(ctx, collection, item_id, body, replace=replace, uow=uow, cause=cause))[0]


async def update_item_if_match(ctx: Any, collection: str, item_id: str, body: Any, if_match: list[str] | None, *,
                               tag_of: TagOf, replace: bool = False, uow: Any = None,
                               cause: str | None = None) -> tuple[dict[str, Any], str]:
    """``update_item`` applied only when ``if_match`` (the strong tags of ``If-Match``; ``None``
    for ``*``) holds the item's ETag as stored when the write locks its row (412
    ``PRECONDITION_FAILED`` else, core/etags.py); returns the item and its new ETag. ``tag_of(uow,
    item_id, updated_at)`` is the item's tag for the caller, read in that transaction."""
    shaped, after = await _update_item(ctx, collection, item_id, body, replace=replace, uow=uow, cause=cause,
                                       if_match=(if_match, tag_of))
    return shaped, after["_tag"]


async def _update_item(ctx: Any, collection: str, item_id: str, body: Any, *, replace: bool, uow: Any,
                       cause: str | None, if_match: tuple[list[str] | None, TagOf] | None = None) -> tuple[dict, dict]:
    decision = await require(ctx, collection, "update")
    snap, coll = await schema_and_collection(ctx, collection)
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    [draft] = check_bodies(coll, [body], [[]], mode="replace" if replace else "update", writable=decision.fields,
                           action="write", nested=nested_fields(snap, collection), current_id=item_id,
                           read=await decide(ctx, collection, "read"))
    async with transaction(ctx, uow, cause) as u:
        guard = WriteGuard(decision, snap, dialect_of(ctx))
        if if_match is not None and is_item_id(item_id):
            # A conditional update only: the row is locked (PostgreSQL) before it is read and
            # compared, so no write can land between the check and this one.
            await u.db.execute(live_rows(u.db, coll, items.c.id).where(items.c.id == item_id).with_for_update())
        row = await fetch_row(u.db, coll, item_id, decision, dialect_of(ctx), snap, guard=guard, pinned=True)
        if row is None:
            raise record_not_found(collection, str(item_id))
        if if_match is not None and if_match[0] is not None:  # If-Match: * matches any live item
            etags.check(if_match[0], await if_match[1](u, row["id"], row["updated_at"]))
        if not row["pinned"]:
            u.notes[(UNPINNED, coll.id, row["id"])] = True
        old = row["data"] or {}
        data = draft.data if replace else {**old, **draft.data}
        # What the caller writes: the keys sent, and on PUT every field it changes by leaving it out.
        keys = frozenset(body) - {"id"} | {k for k in {*old, *data} if old.get(k) != data.get(k)}
        after = await writes.update_row(u, coll, row, data, guard=guard, selected=True, keys=keys,
                                        status=draft.status, sort=draft.sort if draft.sort_given else ...)
        shaped = await _as_read(ctx, coll, after, u.db)
        await reveal(ctx, snap, collection, [shaped], "write", uow=u)
        if if_match is not None:  # the new tag, as the caller's next read will give it
            after = {**after, "_tag": await if_match[1](u, after["id"], after["updatedAt"])}
        return shaped, after


async def _singleton_row(ctx: Any, coll: Any, uow: Any = None) -> Any:
    async with reading(ctx, uow) as db:
        return await db.one(live_rows(db, coll, items.c.id).order_by(items.c.id).limit(1))


async def upsert_singleton(ctx: Any, collection: str, body: Any, *, uow: Any = None,
                           cause: str | None = None) -> dict[str, Any]:
    """``PATCH /items/{singleton}``: update its item, or create it on the first write."""
    if not any([(await decide(ctx, collection, a)).allowed for a in ("create", "update")]):
        raise action_denied(collection, "write")
    _, coll = await schema_and_collection(ctx, collection)
    if not coll.singleton:
        raise ApiError(405, "METHOD_NOT_ALLOWED", f"'{collection}' is not a singleton: PATCH an item by its id")
    existing = await _singleton_row(ctx, coll, uow)
    if existing is None:
        return await create_items(ctx, collection, body, uow=uow, cause=cause)
    return await update_item(ctx, collection, existing["id"], body, uow=uow, cause=cause)


async def delete_item(ctx: Any, collection: str, item_id: str, *, uow: Any = None,
                      cause: str | None = None) -> None:
    """Soft-delete an item, enforcing ``onDelete`` (409 ``DEPENDENT_RECORDS_EXIST`` on restrict)."""
    decision = await require(ctx, collection, "delete")
    snap, coll = await schema_and_collection(ctx, collection)
    async with transaction(ctx, uow, cause) as u:
        row = await fetch_row(u.db, coll, item_id, decision, dialect_of(ctx), snap)
        if row is None:
            raise record_not_found(collection, str(item_id))
        plan = await ondelete.plan_delete(u.db, dialect_of(ctx), snap, coll, [row])
        if plan.blockers:
            raise dependents_exist(await blocker_entries(ctx, u.db, snap, plan))
        await ondelete.apply_plan(u, plan)


async def blocker_entries(ctx: Any, db: Any, snap: Any, plan: ondelete.DeletePlan) -> list[dict[str, Any]]:
    """The API entries of a plan's restrict blockers, samples limited to what the caller reads."""
    out = []
    for dep in plan.blockers.values():
        holder = snap.collection(dep.collection)
        read = await decide(ctx, dep.collection, "read")
        out.append(dep.entry(await ondelete.visible_sample(db, dep.ids, holder, read, dialect_of(ctx), snap)))
    return out
