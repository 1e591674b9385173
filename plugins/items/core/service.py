"""The one data path for items: REST (routes.py) and other plugins (through ``api``) call these.

Every function takes a ``ctx`` with ``kernel``, ``site_id``, ``principal``, ``request_id`` and
``unit_of_work()`` (a ``kernel.context.RequestContext``; jobs build one with the principal
they act as). Access is checked here (``guard``), input is checked here (``validation``),
and writes run in a unit of work: the caller's ``uow`` when given (a release publishing many
items in one transaction, a bus filter writing in the transaction of the write it filters),
else a new one. Reads given ``uow`` run on its connection, so they see its uncommitted writes.
Read options (``options``: draft, locale) and the cause of a write (``cause``:
``release:<id>``, ``flow-run:<id>``; revisions record it) are parameters. No Falcon here.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import bindparam, or_, select

from kernel.db.meta import now_utc
from kernel.errors import ApiError
from kernel.tenancy.scope import SiteDB
from plugins.items.core import etags, ondelete, writes
from plugins.items.core.grants import WriteGuard, fields_by_row, mask_row
from plugins.items.core.guard import ReadAccess, decide, read_access, readable, require
from plugins.items.core.records import empty_record, item_record, mask, project
from plugins.items.core.rowfilter import row_condition
from plugins.items.core.validation import apply_defaults, check_bodies, is_item_id
from plugins.items.errors import action_denied, collection_not_found, dependents_exist, record_not_found
from plugins.items.history.tables import pins
from plugins.items.query import ListQuery
from plugins.items.read import group_counts
from plugins.items.read.drafts import ReadOptions, overlay_one, overlay_read
from plugins.items.read.listing import ListPage, live_in, live_rows, run_list, run_one
from plugins.items.read.readplan import plan_for
from plugins.items.read.reveal import reveal
from plugins.items.read.whitelist import first_unlisted
from plugins.items.tables import items
from plugins.schema.api import get_schema, nested_fields

# ``<kind>:<id>``: what made a write happen, recorded on its revision (``causedBy``).
CAUSE = re.compile(r"^[a-z][a-z0-9_-]{0,31}:[A-Za-z0-9._:@/+=-]{1,160}$")
# Causes the items plugin gives its own updates (revisions.py): they tag the one item's
# revision, so writes that join the unit of work later (a filter's) do not inherit them.
OWN_CAUSES = ("revert", "promote")


def default_status(coll: Any) -> str:
    """``draft`` where a workflow decides publication (editorial or a status field), else
    ``published`` (docs/decisions/items-crud.md)."""
    return "draft" if coll.editorial_workflow or coll.status_field else "published"


async def schema_and_collection(ctx: Any, name: str) -> tuple[Any, Any]:
    """The site's schema and its live collection ``name`` (404 ``NOT_FOUND`` otherwise)."""
    snap = await get_schema(ctx.kernel, ctx.site_id)
    coll = snap.collection(name) if isinstance(name, str) else None
    if coll is None:
        raise collection_not_found(str(name))
    return snap, coll


def check_cause(cause: Any) -> str | None:
    """A write cause as given (``None``: none), 400 ``VALIDATION_FAILED`` unless ``<kind>:<id>``."""
    if cause is not None and (not isinstance(cause, str) or not CAUSE.match(cause)):
        raise ApiError.validation("A write's cause must look like '<kind>:<id>' (e.g. 'release:42')",
                                  path=["cause"])
    return cause


def same_site(ctx: Any, uow: Any) -> Any:
    """``uow`` if it is bound to ``ctx``'s site: a unit of work of another site would run one
    site's checks against the other's rows."""
    if uow is not None and uow.site_id != ctx.site_id:
        raise ApiError.validation("The unit of work belongs to another site than the call", path=["uow"])
    return uow


@contextlib.asynccontextmanager
async def transaction(ctx: Any, uow: Any, cause: str | None = None) -> AsyncIterator[Any]:
    """The caller's ``uow`` or a new one, as a view acting for ``ctx.principal`` with ``cause``
    (a filter may pass the request's unit of work while acting as another principal)."""
    async with contextlib.AsyncExitStack() as stack:
        # inline: an item write's statements are short and by key (Database.begin)
        u = same_site(ctx, uow) or await stack.enter_async_context(ctx.unit_of_work(inline=True))
        inherited = getattr(u, "cause", None) or ""
        own = cause is None and inherited.partition(":")[0] in OWN_CAUSES
        if cause is not None or own or u.principal is not ctx.principal:
            u = u.acting(ctx.principal, cause=check_cause(cause))
            if own:
                u.cause = None
        yield u


@contextlib.asynccontextmanager
async def reading(ctx: Any, uow: Any = None) -> AsyncIterator[Any]:
    """A site-scoped ``db`` for reads: the unit of work's (its uncommitted writes included)
    when one is given, else a plain connection."""
    if same_site(ctx, uow) is not None:
        yield uow.db
        return
    async with ctx.reader() as db:
        yield db


def dialect_of(ctx: Any) -> str:
    return ctx.kernel.db.dialect


# fetch_row's statement when the caller may read every row: live_rows's, built once.
_LIVE_ROW = SiteDB.template(select(items).where(
    *live_in(bindparam("coll", literal_execute=True)), items.c.id == bindparam("item")), items)

# ``pinned``: whether a field of the row has an active pin, read with the row an update reads,
# so that the update's pin check (``history.events``) needs no query of its own when none has.
def _pinned(now: Any) -> Any:
    return select(pins.c.item_id).where(
        pins.c.site_id == items.c.site_id, pins.c.collection_id == items.c.collection_id, pins.c.item_id == items.c.id,
        or_(pins.c.expires_at.is_(None), pins.c.expires_at > now)).exists().label("pinned")


_LIVE_ROW_PINNED = SiteDB.template(select(items, _pinned(bindparam("now", type_=pins.c.expires_at.type))).where(
    *live_in(bindparam("coll", literal_execute=True)), items.c.id == bindparam("item")), items)
UNPINNED = "items.unpinned"  # uow.notes key (with the collection and item ids): the row read has no pin


async def fetch_row(db: Any, coll: Any, item_id: Any, decision: Any, dialect: str, snapshot: Any = None, *,
                    guard: WriteGuard | None = None, pinned: bool = False) -> Any:
    """The live row ``item_id`` of ``coll`` if ``decision``'s row filter lets the caller see it
    (``snapshot``: the site's schema, for conditions through relations); with ``guard``, also
    its pair columns, for ``writes.update_row(..., selected=True)``; with ``pinned``, also
    whether a field of it has an active pin (column ``pinned``)."""
    if not is_item_id(item_id):
        return None
    condition = row_condition(decision, dialect=dialect, table=items, coll=coll, snapshot=snapshot)
    columns = guard.columns(coll) if guard is not None else ()
    if condition is None and not columns:  # every row, no pairs: the statement built once
        if pinned:
            found = await db.run(_LIVE_ROW_PINNED, {"coll": coll.id, "item": item_id, "now": now_utc()})
        else:
            found = await db.run(_LIVE_ROW, {"coll": coll.id, "item": item_id})
        return found.mappings().first()
    stmt = live_rows(db, coll).where(items.c.id == item_id).add_columns(*columns)
    if pinned:
        stmt = stmt.add_columns(_pinned(now_utc()))
    return await db.one(stmt if condition is None else stmt.where(condition))


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


# ---------------------------------------------------------------------- reads

async def _read_scope(ctx: Any, collection: str) -> tuple[ReadAccess, Any, Any, Any]:
    """The caller's read access and decision (403 without read permission, asked before the
    collection lookup), the site's schema and the collection (404)."""
    access = await read_access(ctx)
    read = access.decision(collection)
    if not read.allowed:
        raise action_denied(collection, "read")
    schema, coll = await schema_and_collection(ctx, collection)
    return access, read, schema, coll


async def list_items(ctx: Any, collection: str, query: ListQuery, *, options: ReadOptions | None = None,
                     uow: Any = None) -> ListPage:
    """One page of the collection's items the caller may see (``filter``, ``sort``, paging,
    ``fields`` with nested relations, ``deep``), or its aggregate rows (``aggregate``/``groupBy``)."""
    return await _list(ctx, await _read_scope(ctx, collection), query, options, uow)


async def unlisted_name(ctx: Any, collection: str, query: ListQuery) -> list[Any] | None:
    """The query path of the first name of ``query`` that does not exist or that the caller may
    not name in a predicate (``read.whitelist``; unknown and hidden alike), else ``None``. 403
    without read permission on the collection, 404 for an unknown collection, as a list."""
    access, _read, schema, coll = await _read_scope(ctx, collection)
    return first_unlisted(access, schema, coll, query, dialect_of(ctx))


async def _list(ctx: Any, scope: tuple[ReadAccess, Any, Any, Any], query: ListQuery,
                options: ReadOptions | None, uow: Any) -> ListPage:
    access, read, schema, coll = scope
    async with reading(ctx, uow) as db:
        plan = plan_for(ctx.kernel, "list", db, schema, coll, query, access, dialect_of(ctx))
        page = await run_list(db, plan, query, dialect_of(ctx), group_counts.registry(ctx.kernel))
        if plan.projection is not None:  # draft / locale
            page.items = await overlay_read(ctx, db, coll, page.items, read, plan.projection.shown(), options)
    if plan.projection is not None:  # not aggregates: they name no sensitive field (query/resolve.py)
        await reveal(ctx, schema, coll.name, page.items, "list", uow=uow)
    return page


async def read_collection(ctx: Any, collection: str, query: ListQuery, *, options: ReadOptions | None = None,
                          uow: Any = None) -> tuple[Any, dict[str, int] | None]:
    """``GET /items/{collection}``: ``(page items, meta)``, aggregates ``(rows, None)``, or a
    singleton's ``(item, None)``."""
    scope = await _read_scope(ctx, collection)
    if scope[3].singleton:
        return await read_singleton(ctx, collection, query, options=options, uow=uow), None
    page = await _list(ctx, scope, query, options, uow)
    return page.items, page.meta()


async def read_item(ctx: Any, collection: str, item_id: str, query: ListQuery | None = None, *,
                    options: ReadOptions | None = None, uow: Any = None) -> dict[str, Any]:
    """One item with ``query``'s ``fields`` and ``deep`` (404 ``RECORD_NOT_FOUND`` when missing,
    deleted or not visible)."""
    access, read, schema, coll = await _read_scope(ctx, collection)
    async with reading(ctx, uow) as db:
        plan = plan_for(ctx.kernel, "item", db, schema, coll, query or ListQuery(), access, dialect_of(ctx))
        item = await run_one(db, plan, item_id, dialect_of(ctx)) if is_item_id(item_id) else None
        if item is None:
            raise record_not_found(collection, str(item_id))
        item = await overlay_one(ctx, db, coll, item, read, plan.projection.shown(), options)  # draft / locale
    await reveal(ctx, schema, collection, [item], "item", uow=uow)
    return item


async def author_of(ctx: Any, collection: str, item_id: str, *, uow: Any = None) -> str | None:
    """Who created an item the caller can see (``user_created``), read from the structural
    column whatever the caller's field mask: a rule that needs the author (a separate reviewer)
    must not pass because ``userCreated`` is hidden. 404 like ``read_item``."""
    await read_item(ctx, collection, item_id, ListQuery(fields=["id"]), uow=uow)
    _access, _read, _schema, coll = await _read_scope(ctx, collection)
    async with reading(ctx, uow) as db:
        return await db.scalar(live_rows(db, coll, items.c.user_created).where(items.c.id == item_id))


async def read_singleton(ctx: Any, collection: str, query: ListQuery | None = None, *,
                         options: ReadOptions | None = None, uow: Any = None) -> dict[str, Any]:
    """A singleton's item; before its first write, ``id: null`` and the field defaults."""
    access, read, schema, coll = await _read_scope(ctx, collection)
    async with reading(ctx, uow) as db:
        plan = plan_for(ctx.kernel, "item", db, schema, coll, query or ListQuery(), access, dialect_of(ctx))
        first = await db.one(live_rows(db, coll, items.c.id).order_by(items.c.id).limit(1))
        item = None if first is None else await run_one(db, plan, first["id"], dialect_of(ctx))
        if first is None:
            defaults: dict[str, Any] = {}
            apply_defaults(coll, defaults, [], [])
            return project(mask(empty_record(defaults, default_status(coll)), readable(read)),
                           plan.projection.names())
        if item is None:
            raise record_not_found(collection, first["id"])
        item = await overlay_one(ctx, db, coll, item, read, plan.projection.shown(), options)  # draft / locale
    await reveal(ctx, schema, collection, [item], "item", uow=uow)
    return item


# ---------------------------------------------------------------------- writes

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
                          nested=nested_fields(snap, collection))
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
                               replace: bool = False, uow: Any = None,
                               cause: str | None = None) -> tuple[dict[str, Any], str]:
    """``update_item`` applied only when ``if_match`` (the strong tags of ``If-Match``; ``None``
    for ``*``) holds the item's ETag as stored when the write locks its row (412
    ``PRECONDITION_FAILED`` else, core/etags.py); returns the item and its new ETag."""
    shaped, after = await _update_item(ctx, collection, item_id, body, replace=replace, uow=uow, cause=cause,
                                       if_match=(if_match,))
    return shaped, etags.item_etag(after["id"], after["updatedAt"])


async def item_etag(ctx: Any, collection: str, item_id: str, updated_at: str | None = None) -> str:
    """The ETag of an item the caller just read: from its ``updatedAt`` when the read showed it,
    else read from the row (a field mask or ``?fields=`` left it out)."""
    if updated_at is None:
        _access, _read, _schema, coll = await _read_scope(ctx, collection)
        async with reading(ctx) as db:
            updated_at = await db.scalar(live_rows(db, coll, items.c.updated_at).where(items.c.id == item_id))
    return etags.item_etag(item_id, updated_at)


async def _update_item(ctx: Any, collection: str, item_id: str, body: Any, *, replace: bool, uow: Any,
                       cause: str | None, if_match: tuple[list[str] | None] | None = None) -> tuple[dict, dict]:
    decision = await require(ctx, collection, "update")
    snap, coll = await schema_and_collection(ctx, collection)
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    [draft] = check_bodies(coll, [body], [[]], mode="replace" if replace else "update", writable=decision.fields,
                           action="write", nested=nested_fields(snap, collection), current_id=item_id)
    async with transaction(ctx, uow, cause) as u:
        guard = WriteGuard(decision, snap, dialect_of(ctx))
        if if_match is not None and is_item_id(item_id):
            # A conditional update only: the row is locked (PostgreSQL) before it is read and
            # compared, so no write can land between the check and this one.
            await u.db.execute(live_rows(u.db, coll, items.c.id).where(items.c.id == item_id).with_for_update())
        row = await fetch_row(u.db, coll, item_id, decision, dialect_of(ctx), snap, guard=guard, pinned=True)
        if row is None:
            raise record_not_found(collection, str(item_id))
        if if_match is not None:
            etags.check(if_match[0], row["id"], row["updated_at"])
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


def acting_context(kernel: Any, site_id: str, principal: Any, request_id: str = "internal") -> Any:
    """A ``RequestContext`` for server code that acts without a request (jobs, releases, flows):
    the calls then check ``principal``'s permissions like any caller's."""
    from kernel.context import RequestContext

    return RequestContext(kernel=kernel, request_id=request_id, site_id=site_id, principal=principal)


def item_of(row: Any) -> dict[str, Any]:
    """A row as an unmasked item (for server code such as releases and revisions)."""
    return item_record(row)


__all__ = ["ListPage", "ListQuery", "ReadOptions", "acting_context", "check_cause", "create_items", "delete_item", "item_of", "list_items", "read_collection", "read_item",
           "read_singleton", "update_item", "upsert_singleton"]
