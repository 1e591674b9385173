"""The façade of items: the one data path REST (``http/``) and other plugins (through ``api``) call.

Every function takes a ``ctx`` with ``kernel``, ``site_id``, ``principal``, ``request_id`` and
``unit_of_work()`` (a ``kernel.core.context.RequestContext``; jobs build one with the principal
they act as). Reads are composed here from ``read/`` (the plan, the page, drafts and locales, the
read hook); writes are ``write/path``'s (access and input checked, run in a unit of work: the
caller's ``uow`` when given, a release publishing many items in one transaction, a bus filter
writing in the transaction of the write it filters, else a new one). Reads given ``uow`` run on
its connection, so they see its uncommitted writes. Read options (``options``: draft, locale) and
the cause of a write (``cause``: ``release:<id>``, ``flow-run:<id>``; revisions record it) are
parameters. No Falcon here. It sits beside ``api.py``, above ``read/``, ``write/``, ``history/``
and ``search/``, and nothing of the plugin below ``api`` imports it (tests/test_layout.py).
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from plugins.items.core import etags
from plugins.items.core.context import (
    OWN_CAUSES,
    acting_context,
    check_cause,
    default_status,
    dialect_of,
    item_of,
    reading,
    schema_and_collection,
)
from plugins.items.core.guard import ReadAccess, decide, read_access, readable
from plugins.items.core.records import empty_record, mask, project
from plugins.items.core.reveal import reveal
from plugins.items.core.rows import live_rows
from plugins.items.core.validation import apply_defaults, is_item_id
from plugins.items.errors import action_denied, record_not_found
from plugins.items.query import ListQuery
from plugins.items.read import group_counts
from plugins.items.read.drafts import ReadOptions, overlay_one, overlay_read
from plugins.items.read.listing import ListPage, run_list, run_one
from plugins.items.read.readplan import plan_for
from plugins.items.read.whitelist import first_unlisted
from plugins.items.tables import items
from plugins.items.write.path import (
    create_items,
    delete_item,
    update_item,
    upsert_singleton,
)
from plugins.items.write.path import update_item_if_match as conditional_update

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


async def item_etag(ctx: Any, collection: str, item_id: str, updated_at: Any = None, *, uow: Any = None) -> str:
    """The ETag of an item for the caller (core/etags.py). A caller who reads every field gets the
    cheap tag of its last write (from ``updatedAt`` when the read showed it, else read from the
    row); a caller whose mask hides fields gets the digest of the item as it reads it, so a write
    to a hidden field leaves its tag alone. A caller who may not read the collection (a write-only
    rule) sees no content: the tag of the last write."""
    read = await decide(ctx, collection, "read")
    if read.allowed and (read.fields is not None or read.paired):
        try:
            return etags.view_etag(item_id, await read_item(ctx, collection, item_id, uow=uow))
        except ApiError as exc:  # a conditional write took the row out of the caller's sight
            if exc.status != 404:
                raise
    if updated_at is None:
        _schema, coll = await schema_and_collection(ctx, collection)
        async with reading(ctx, uow) as db:
            updated_at = await db.scalar(live_rows(db, coll, items.c.updated_at).where(items.c.id == item_id))
    return etags.item_etag(item_id, updated_at)


async def update_item_if_match(ctx: Any, collection: str, item_id: str, body: Any, if_match: list[str] | None, *,
                               replace: bool = False, uow: Any = None,
                               cause: str | None = None) -> tuple[dict[str, Any], str]:
    """``write.path.update_item_if_match`` with the caller's ETag (``item_etag``)."""

    async def tag_of(u: Any, one_id: str, updated_at: Any) -> str:
        return await item_etag(ctx, collection, one_id, updated_at, uow=u)

    return await conditional_update(ctx, collection, item_id, body, if_match, tag_of=tag_of, replace=replace,
                                    uow=uow, cause=cause)


__all__ = ["OWN_CAUSES", "ListPage", "ListQuery", "ReadOptions", "acting_context", "author_of", "check_cause",
           "create_items", "delete_item", "item_etag", "item_of", "list_items", "read_collection", "read_item",
           "read_singleton", "reading", "schema_and_collection", "unlisted_name", "update_item",
           "update_item_if_match", "upsert_singleton"]
