"""The items API for other plugins: typed calls on content items, the same path REST takes.

A plugin that declares ``requires = ("items",)`` imports this module (and only this one) to
read and write items: GraphQL, delivery, releases, flows, the AI copilot and MCP. The REST
routes of ``/items`` call it too, so every caller meets the same permissions (the
``principal`` of ``ctx``), validation, bus filters and actions, pins, revisions and search
index. Every call takes:

- ``ctx``: who acts and where: a ``kernel.core.context.RequestContext`` (a route's
  ``request_context(req)``) or ``context(kernel, site_id, principal)`` for server code (jobs,
  a bus handler, a release). Permissions are ``ctx.principal``'s.
- ``uow`` (optional): an open unit of work to run in. Writes then join its transaction (they
  commit or roll back with it; their actions run after its commit) and reads run on its
  connection, so they see its uncommitted writes. A bus filter passes ``ctx.uow`` (the
  ``EventContext`` of the write it filters) to write in the same transaction: opening a
  transaction of its own in that task fails at once with ``kernel.db.NestedWriteError`` (it
  would wait on the write lock the filtered write holds). Without ``uow`` each write is one
  transaction of its own.
- writes: ``cause`` (optional): why the write happens, ``<kind>:<id>`` such as
  ``release:<id>`` or ``flow-run:<id>``. Revisions record it (``causedBy`` in the revisions
  API), item event payloads carry it (``causedBy``), and a cause ``release:<id>`` writes as the
  pin holder ``("release", <id>)``. REST writes have none (null). Writes joining a ``uow``
  without a cause of their own inherit the unit of work's. ``revert`` and ``promote`` are the
  items plugin's own (400 here).
- reads: ``draft`` (answer the version ``draft`` where an item has one) and ``locale``
  (apply the item's translations of that language), REST's ``X-Svc-Draft``/``X-Svc-Locale``.

Errors are ``ApiError`` as REST answers them (403, 404 ``RECORD_NOT_FOUND``, 400
``VALIDATION_FAILED``, 409 ``CONFLICT``/``DEPENDENT_RECORDS_EXIST``). Returned items are
plain dicts masked by the caller's read permission, as REST shows them.

Example (a plugin reacting to new articles by creating a log entry in the same transaction)::

    from plugins.items import api as items

    async def on_article_create(event, payload, ctx):
        actor = items.context(ctx.kernel, ctx.site_id, ctx.principal, ctx.request_id)
        await items.create(actor, "article_log", {"article": payload["id"]}, uow=ctx.uow)
"""

from __future__ import annotations

import json
from typing import Any

from kernel.base.errors import ApiError
from kernel.core.context import RequestContext
from plugins.items import erase as erasure
from plugins.items import service
from plugins.items.core import etags, live, personal
from plugins.items.core.reveal import reveal
from plugins.items.history import pins, revisions, versions
from plugins.items.live_reach import LiveReach  # noqa: F401 - for live readers (realtime, GraphQL)
from plugins.items.query import ListQuery, parse_list_query
from plugins.items.query.parse.limits import MAX_NESTING, MAX_NESTING_CEILING
from plugins.items.read.drafts import ReadOptions, read_options
from plugins.items.read.listing import DEFAULT_LIMIT, MAX_LIMIT, ListPage
from plugins.items.search import service as search
from plugins.items.upkeep import stored
from plugins.items.write import dependents
from plugins.schema.api import get_schema

Item = dict[str, Any]
QUERY_KEYS = ("fields", "filter", "sort", "limit", "offset", "page", "meta", "aggregate", "groupBy", "deep")


# ---------------------------------------------------------------------- context, options

def context(kernel: Any, site_id: str, principal: Any, request_id: str = "internal") -> RequestContext:
    """The ``ctx`` of server code acting as ``principal`` in site ``site_id`` (a job, a bus
    handler, a release): calls check ``principal``'s permissions like any caller's."""
    return RequestContext(kernel=kernel, request_id=request_id, site_id=site_id, principal=principal)


def query(**params: Any) -> ListQuery:
    """A ``ListQuery`` from keyword arguments shaped like REST's query parameters:
    ``fields=["title", "author.name"]``, ``filter={"status": {"_eq": "published"}}``,
    ``sort=["-date"]``, ``limit``, ``offset``, ``page``, ``meta="none"``,
    ``aggregate={"count": "*"}``, ``groupBy=["status"]`` (or ``group_by``), ``deep={...}``.
    400 ``VALIDATION_FAILED`` for what REST refuses."""
    return _query(params, MAX_NESTING)


def nested_query(nesting: int, **params: Any) -> ListQuery:
    """``query(**params)`` whose ``fields`` and ``deep`` may nest up to ``nesting`` relations:
    more than REST's ``MAX_NESTING`` (3), at most ``MAX_NESTING_CEILING`` (10). For a caller that
    bounds the depth and size of what it asks itself, as GraphQL's depth and cost guards do.
    Every level is still read with one statement per relation, whatever the number of rows."""
    return _query(params, nesting)


def _query(params: dict[str, Any], nesting: int) -> ListQuery:
    if "group_by" in params:
        params["groupBy"] = params.pop("group_by")
    unknown = sorted(set(params) - set(QUERY_KEYS))
    if unknown:
        raise ApiError.validation(f"Unknown query parameter '{unknown[0]}'", path=["query", unknown[0]])
    pairs = {k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items() if v is not None}
    return parse_list_query(pairs, default_limit=DEFAULT_LIMIT, max_limit=MAX_LIMIT, nesting=nesting)


def parse_query(params: Any, *, default_limit: int = DEFAULT_LIMIT, max_limit: int = MAX_LIMIT) -> ListQuery:
    """A ``ListQuery`` from a query string's parameters exactly as ``GET /items`` reads them
    (Falcon's ``req.params``, or ``(key, value)`` pairs): the bracket and JSON filter forms,
    sort, limit, offset, page, meta. The filter is checked for shape and bounds only, so a
    plugin listing its own table (``/files``) compiles it against its own columns."""
    return parse_list_query(params, default_limit=default_limit, max_limit=max_limit)


def _options(draft: bool, locale: str | None) -> ReadOptions | None:
    return read_options(draft, locale) if draft or locale is not None else None


def _cause(cause: str | None) -> str | None:
    kind = cause.partition(":")[0] if isinstance(cause, str) else ""
    if kind in service.OWN_CAUSES:
        raise ApiError.validation(f"The cause '{kind}:' is the items plugin's own", path=["cause"])
    return service.check_cause(cause)


# ---------------------------------------------------------------------- reads

async def read(ctx: Any, collection: str, item_id: str, *, query: ListQuery | None = None, draft: bool = False,
               locale: str | None = None, uow: Any = None) -> Item:
    """One item (``query``: its ``fields`` and ``deep``); 404 ``RECORD_NOT_FOUND`` when it is
    missing, deleted or hidden from the caller, 403 without read permission."""
    return await service.read_item(ctx, collection, item_id, query, options=_options(draft, locale), uow=uow)


async def author_of(ctx: Any, collection: str, item_id: str, *, uow: Any = None) -> str | None:
    """The id of the user who created an item the caller can see, whatever the caller's field
    mask (404 like ``read``)."""
    return await service.author_of(ctx, collection, item_id, uow=uow)


async def list_items(ctx: Any, collection: str, query: ListQuery | None = None, *, draft: bool = False,
                     locale: str | None = None, uow: Any = None) -> ListPage:
    """One page of the items the caller may see: ``ListPage.items`` and ``.total`` (counted
    unless ``meta="none"``), ``.limit``, ``.offset``. An aggregate query answers its rows in
    ``items`` (see ``aggregate``)."""
    return await service.list_items(ctx, collection, query or ListQuery(), options=_options(draft, locale), uow=uow)


async def aggregate(ctx: Any, collection: str, query: ListQuery, *, uow: Any = None) -> list[dict[str, Any]]:
    """The aggregate rows of ``query`` (``aggregate``/``groupBy`` set, e.g.
    ``query(aggregate={"count": "*"}, groupBy=["status"])``), over the items the caller may see:
    ``[{"group": {...}?, "count": ..., "sum": {...}, ...}]`` as REST answers them."""
    if not query.is_aggregate:
        raise ApiError.validation("An aggregate query needs 'aggregate' or 'groupBy'", path=["query", "aggregate"])
    return (await service.list_items(ctx, collection, query, uow=uow)).items


async def unlisted_name(ctx: Any, collection: str, query: ListQuery) -> list[Any] | None:
    """For callers that answer one error for unknown and hidden names (dashboards' 400
    ``INVALID_FIELD``): the query path (``["query", "filter", ...]``) of the first name ``query``
    references (filter paths through ``_and``/``_or`` and relations, ``groupBy`` and its time
    buckets, ``aggregate``, ``sort``) that does not exist or that the caller may not name in a
    predicate, else ``None``. Grammar faults are 400 as a list answers them; 403 without read
    permission; 404 for an unknown collection."""
    return await service.unlisted_name(ctx, collection, query)


async def read_singleton(ctx: Any, collection: str, *, query: ListQuery | None = None, draft: bool = False,
                         locale: str | None = None, uow: Any = None) -> Item:
    """A singleton's item; before its first write, ``id: null`` and the field defaults."""
    return await service.read_singleton(ctx, collection, query, options=_options(draft, locale), uow=uow)


async def read_collection(ctx: Any, collection: str, query: ListQuery | None = None, *,
                          options: ReadOptions | None = None, uow: Any = None) -> tuple[Any, dict[str, int] | None]:
    """What ``GET /items/{collection}`` answers: ``(items, meta)``, an aggregate's ``(rows,
    None)`` or a singleton's ``(item, None)``. ``options``: ``read_options(draft, locale)``."""
    return await service.read_collection(ctx, collection, query or ListQuery(), options=options, uow=uow)


async def search_items(ctx: Any, q: str, *, collection: str | None = None, limit: int = DEFAULT_LIMIT,
                       offset: int = 0, uow: Any = None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Full-text search (``GET /search``): ``(hits, {total, limit, offset})``, each hit
    ``{collection, id, score, item, highlights}``, filtered by the caller's permissions."""
    return await search.search_items(ctx, search.SearchQuery(q, collection, limit, offset), uow=uow)


async def describe_dependents(ctx: Any, collection: str, item_id: str, *, uow: Any = None) -> dict[str, Any]:
    """``{ blocking, dependents }``: the items referencing this one, by relation."""
    return await dependents.describe_dependents(ctx, collection, item_id, uow=uow)


async def list_revisions(ctx: Any, collection: str, item_id: str, *, limit: int = 25, offset: int = 0,
                         staged: bool | None = None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """An item's revisions, newest first: ``(page, {total, limit, offset})``; each shows its
    ``kind``, ``actor``, ``delta``, ``data`` (masked), ``origin`` and ``causedBy``."""
    return await revisions.list_revisions(ctx, collection, item_id, limit=limit, offset=offset, staged=staged)


async def get_revision(ctx: Any, collection: str, item_id: str, revision_id: str) -> dict[str, Any]:
    """One revision of the item (404 ``NOT_FOUND`` when it is not this item's)."""
    return await revisions.get_revision(ctx, collection, item_id, revision_id)


async def pinnable_revision(ctx: Any, collection: str, item_id: str, revision_id: str, *,
                            uow: Any = None) -> dict[str, Any]:
    """For releases: the committed revision, unmasked (``{id, data, createdAt, restore}``:
    ``restore`` is the update body that brings the item back to it), after the caller's
    ``update`` check; 409 ``REVISION_STAGED`` for a staged one."""
    return await revisions.pinnable_revision(ctx, collection, item_id, revision_id,
                                             db=uow.db if uow is not None else None)


async def revision_before(ctx: Any, collection: str, item_id: str, cause: str, *, uow: Any) -> dict[str, Any] | None:
    """For releases, in the transaction of ``cause``'s writes (``uow``), right after them: the
    item's latest committed revision that ``cause`` did not write, ``{ id, status }`` (the state
    before those writes; ``pinnable_revision`` brings an item back to it), or None; 404 like
    ``pinnable_revision``."""
    return await revisions.revision_before(ctx, collection, item_id, service.check_cause(cause) or "", db=uow.db)


async def get_version(ctx: Any, collection: str, item_id: str, key: str, *, uow: Any = None) -> dict[str, Any]:
    """A named version ``{ key, name, data, ... }`` of the item (404 ``NOT_FOUND``), as the caller
    may read it; ``uow``: read in that transaction."""
    return await versions.get_version(ctx, collection, item_id, key, uow=uow)


async def promote_version(ctx: Any, collection: str, item_id: str, key: str, *, uow: Any = None,
                          cause: str | None = None) -> dict[str, Any]:
    """Apply named version ``key``'s changes to the item (``POST .../versions/{key}/promote``)
    in ``uow`` with ``cause`` (a release: ``release:<id>``); returns the item."""
    item, _ = await versions.promote_version(ctx, collection, item_id, key, {}, uow=uow, cause=_cause(cause))
    return item


async def pin_field(ctx: Any, collection: str, item_id: str, field: str, *, holder: tuple[str, str] | None = None,
                    reason: str | None = None, expires_at: str | None = None) -> dict[str, Any]:
    """Pin ``field`` of an item for ``holder`` (default: the caller's identity; server code:
    ``("release", <id>)``), so only writes of that holder (cause ``release:<id>``) change it."""
    if holder is not None and (not isinstance(holder, tuple) or len(holder) != 2 or holder[0] not in pins.HOLDER_KINDS
                               or not isinstance(holder[1], str) or not holder[1]):
        raise ApiError.validation(f"A pin holder is (kind, id), kind one of {', '.join(pins.HOLDER_KINDS)}",
                                  path=["holder"])
    return await pins.create_pin(ctx, collection, item_id, {"field": field, "reason": reason, "expiresAt": expires_at},
                                 holder=holder)


# ---------------------------------------------------------------------- writes

async def create(ctx: Any, collection: str, data: Item, *, uow: Any = None, cause: str | None = None) -> Item:
    """Create one item (``data``: its fields, optionally ``id``, ``status``, ``sort``); returns it
    as the caller may read it. 403, 400 (every problem, with its path), 409 (``unique``, id)."""
    if not isinstance(data, dict):
        raise ApiError.validation("An item must be an object", path=["body"])
    return await service.create_items(ctx, collection, data, uow=uow, cause=_cause(cause))


async def create_many(ctx: Any, collection: str, data: list[Item], *, uow: Any = None,
                      cause: str | None = None) -> list[Item]:
    """Create 1 to ``SVC_MAX_BATCH`` items in one transaction (all or none)."""
    if not isinstance(data, list):
        raise ApiError.validation("A bulk create takes a list of items", path=["body"])
    return await service.create_items(ctx, collection, data, uow=uow, cause=_cause(cause))


async def create_body(ctx: Any, collection: str, body: Any, *, uow: Any = None, cause: str | None = None) -> Any:
    """REST's ``POST /items/{collection}``: an object creates one item, an array many."""
    return await service.create_items(ctx, collection, body, uow=uow, cause=_cause(cause))


async def update(ctx: Any, collection: str, item_id: str, data: Item, *, uow: Any = None,
                 cause: str | None = None) -> Item:
    """Change the given fields of an item (``PATCH``); returns it as the caller may read it."""
    return await service.update_item(ctx, collection, item_id, data, uow=uow, cause=_cause(cause))


async def replace(ctx: Any, collection: str, item_id: str, data: Item, *, uow: Any = None,
                  cause: str | None = None) -> Item:
    """Replace an item's content (``PUT``): absent fields take their defaults; ``status`` and
    ``sort`` stay unless given."""
    return await service.update_item(ctx, collection, item_id, data, replace=True, uow=uow, cause=_cause(cause))


async def update_if_match(ctx: Any, collection: str, item_id: str, data: Item, if_match: str, *,
                          replace: bool = False, uow: Any = None, cause: str | None = None) -> tuple[Item, str]:
    """``update`` (``replace``: ``replace``) only when the ``If-Match`` header value ``if_match``
    names the item's current ETag (412 ``PRECONDITION_FAILED`` else; 400 when malformed);
    returns the item and its new ETag (docs/items.md, "Conditional updates")."""
    return await service.update_item_if_match(ctx, collection, item_id, data, etags.parse_if_match(if_match),
                                              replace=replace, uow=uow, cause=_cause(cause))


async def item_etag(ctx: Any, collection: str, item: Item) -> str:
    """The ETag of ``item`` as ``read`` answered it (for ``GET /items/:c/:id``'s header)."""
    return await service.item_etag(ctx, collection, str(item["id"]), item.get("updatedAt"))


async def upsert_singleton(ctx: Any, collection: str, data: Item, *, uow: Any = None,
                           cause: str | None = None) -> Item:
    """Update a singleton's item, or create it on the first write."""
    return await service.upsert_singleton(ctx, collection, data, uow=uow, cause=_cause(cause))


async def delete(ctx: Any, collection: str, item_id: str, *, uow: Any = None, cause: str | None = None) -> None:
    """Soft-delete an item, applying ``onDelete`` (409 ``DEPENDENT_RECORDS_EXIST`` on restrict;
    cascaded and set-null writes carry the same cause)."""
    await service.delete_item(ctx, collection, item_id, uow=uow, cause=_cause(cause))


async def resolve_dependents(ctx: Any, collection: str, item_id: str, body: Any, *, uow: Any = None,
                             cause: str | None = None) -> dict[str, Any]:
    """Set null, reassign or delete one relation's dependents (``{ action, relation,
    newTargetId?, hard? }``) in one transaction; answers the new descriptor and ``affected``."""
    return await dependents.resolve_dependents(ctx, collection, item_id, body, uow=uow, cause=_cause(cause))


# The live topics of item writes (``core/live.py``): ``{ collection, action, itemId }`` per
# committed write, on ``live_topic(collection)`` of the site; ``LIVE_TOPICS`` matches them all.
live_topic = live.topic
LIVE_TOPICS = live.ALL

__all__ = ["LIVE_TOPICS", "MAX_NESTING", "MAX_NESTING_CEILING", "Item", "ListPage", "ListQuery", "ReadOptions", "aggregate", "context", "create", "create_body",
           "agent_revisions", "create_many", "delete", "describe_dependents", "erase", "erasure_matches", "erasure_values", "get_revision", "get_version", "list_items", "list_revisions", "live_topic",
           "nested_query", "parse_query", "pin_field", "pinnable_revision", "promote_version", "query", "read", "read_collection", "read_options", "read_singleton",
           "replace", "resolve_dependents", "update_if_match", "item_etag", "search_items", "subject_items", "unlisted_name", "update", "upsert_singleton"]


# ---------------------------------------------------------------------- privacy (erasure, export)


async def erasure_matches(ctx: Any, collection: str, filter: Any, *, uow: Any = None) -> list[str]:
    """The ids of the items of ``collection`` (live or soft-deleted) that ``filter`` matches, for
    an erasure request; admin only (403), 404 for an unknown collection, 400 for a bad filter."""
    snap, coll = await service.schema_and_collection(ctx, collection)
    async with service.reading(ctx, uow) as db:
        return await erasure.matching_ids(ctx, db, snap, coll, filter)


async def erase(ctx: Any, collection: str, ids: list[str], *, uow: Any, cause: str) -> int:
    """Hard-delete the items ``ids`` of ``collection`` and their revisions, versions, pins and
    search rows inside ``uow``; how many rows went. ``cause`` is ``erasure:<request id>``: the
    delete filters see it (``causedBy``), so the files plugin erases the items' files too; the
    durable delete events carry ids only."""
    if not cause.startswith("erasure:"):
        raise ApiError.validation("An erasure's cause is 'erasure:<request id>'", path=["cause"])
    _, coll = await service.schema_and_collection(ctx, collection)
    return await erasure.erase(uow.acting(ctx.principal, cause=service.check_cause(cause)), coll, ids)


async def erasure_values(ctx: Any, collection: str, ids: list[str], *, uow: Any) -> list[str]:
    """The text values the items ``ids`` of ``collection`` hold that no other item of it holds
    (no ids, dates or numbers, nothing short): the terms an erasure looks for in other plugins'
    records (``kernel.policy.privacy.Subject``). Call it before ``erase``."""
    snap, coll = await service.schema_and_collection(ctx, collection)
    return await erasure.subject_values(uow.acting(ctx.principal), snap, coll, ids)


async def subject_items(ctx: Any, user_id: str) -> list[dict[str, Any]]:
    """The live items of collections marked ``personalData`` that ``user_id`` created or whose
    top-level fields hold their id (the data export), unmasked: ``[{ collection, id, authored,
    referencedBy, item }]``. Fields another plugin stores in another form (regulated content's
    ``sensitive`` fields) are answered through the read hook, as to ``ctx``'s principal."""
    async with ctx.reader() as db:
        found = await personal.subject_items(ctx.kernel, db, ctx.site_id, user_id)
    snap = await get_schema(ctx.kernel, ctx.site_id)
    by_collection: dict[str, list[dict[str, Any]]] = {}
    for entry in found:
        by_collection.setdefault(entry["collection"], []).append(entry["item"])
    for collection, records in by_collection.items():
        await reveal(ctx, snap, collection, records, "export")
    return found


async def agent_revisions(ctx: Any, user_id: str, *, limit: int = 25, offset: int = 0) -> tuple[list[Item], int]:
    """Revisions caused by an agent (``agent:<id>``, ``ai:<id>``) on items ``user_id`` created:
    ``(page, total)``; each names the changed fields, never their values."""
    async with ctx.reader() as db:
        return await personal.agent_revisions(ctx.kernel, db, ctx.site_id, user_id, limit, offset)


# ---------------------------------------------------------------------- storage maintenance

async def stored_page(db: Any, collection_ids: list[str], after: tuple[str, str] | None, limit: int) -> list[Any]:
    """Stored items of ``collection_ids`` (live and deleted) after a cursor: ``upkeep/stored.py``.
    For plugins that change how values are stored (regulated content), never what they are."""
    return await stored.stored_page(db, collection_ids, after, limit)


async def rewrite_stored(db: Any, collection_id: str, item_id: str, data: dict[str, Any],
                         transform: Any) -> int:
    """Rewrite one item's stored content and its history with ``transform`` (``upkeep/stored.py``)."""
    return await stored.rewrite(db, collection_id, item_id, data, transform)
