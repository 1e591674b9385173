"""Resolvers of the root fields and ``_data``: every one calls the items API as the caller.

``info.context`` is a ``GraphQLContext`` (``service``): the request context (site, principal,
request id) and the site's ``SiteGraph``. Permissions, field masks, row conditions, validation,
the editorial gate, hooks and events are the items API's, exactly as REST meets them; an
``ApiError`` raised there becomes a GraphQL error with the spec's code (``errors``).
"""

from __future__ import annotations

from typing import Any

from plugins.graphql.guards import MAX_DEPTH
from plugins.graphql.names import collection_name
from plugins.graphql.selection import ReadPlan, check_page, pruned, read_plan, validation_error
from plugins.items import api as items

SEARCH_MAX = 400  # matches ranked by a `search`; within the filter grammar's 500 nodes
STRUCTURAL_KEYS = frozenset({"id", "status", "sort", "createdAt", "updatedAt", "userCreated", "userUpdated",
                             "deletedAt"})
# A document the depth guard lets through nests at most 12 fields: the root field, then at most
# 10 relations and a leaf. The items read nests that deep (REST stops at 3); the cost guard
# bounds how many rows each level may multiply to.
NESTING = min(MAX_DEPTH - 2, items.MAX_NESTING_CEILING)


def _query(plan: ReadPlan, **params: Any) -> Any:
    deep = pruned(plan.deep)
    return items.nested_query(NESTING, fields=plan.csv(), deep=deep, meta="none",
                              **{k: v for k, v in params.items() if v is not None})


def _filter(filter_: Any, status: str | None) -> Any:
    if filter_ is not None and not isinstance(filter_, dict):
        raise validation_error("filter must be an object")
    if status is None:
        return filter_ or None
    by_status = {"status": {"_eq": status}}
    return {"_and": [filter_, by_status]} if filter_ else by_status


def _sort(sort: Any) -> str | None:
    return ",".join(sort) if sort else None


def root_collection(info: Any) -> str:
    """The collection a root field (``X``, ``X_by_id``, ``create_X``, ``update_X``,
    ``delete_X``, ``X_events``) is about, from its name."""
    name = info.field_name
    if info.parent_type.name == "Mutation":
        name = name.partition("_")[2]
    elif info.parent_type.name == "Subscription":
        name = name[:-len("_events")]
    elif name.endswith("_by_id"):
        name = name[:-len("_by_id")]
    return info.context.graph.by_type[name]


async def resolve_list(_root: Any, info: Any, filter: Any = None, sort: Any = None, limit: Any = None,
                       offset: Any = None, status: Any = None, search: Any = None) -> list[dict[str, Any]]:
    check_page(limit, offset)
    collection = root_collection(info)
    ctx, plan, flt = info.context.ctx, read_plan(info, collection), _filter(filter, status)
    if search is not None:
        return await _search(ctx, collection, plan, search, flt, _sort(sort), limit, offset)
    page = await items.list_items(ctx, collection, _query(plan, filter=flt, sort=_sort(sort), limit=limit,
                                                          offset=offset))
    return page.items


async def _search(ctx: Any, collection: str, plan: ReadPlan, q: str, flt: Any, sort: str | None,
                  limit: int | None, offset: int | None) -> list[dict[str, Any]]:
    """The list narrowed to the items search's best ``SEARCH_MAX`` matches: in rank order, or
    in ``sort`` order when one is given."""
    hits, _ = await items.search_items(ctx, q, collection=collection, limit=SEARCH_MAX)
    ranked = [h["id"] for h in hits]
    if not ranked:
        return []
    matched = {"id": {"_in": ranked}}
    if sort:
        page = await items.list_items(ctx, collection, _query(
            plan, filter={"_and": [flt, matched]} if flt else matched, sort=sort, limit=limit, offset=offset))
        return page.items
    if flt:
        visible: set[str] = set()
        for start in range(0, len(ranked), 200):
            part = {"id": {"_in": ranked[start:start + 200]}}
            rows = await items.list_items(ctx, collection, items.query(
                fields="id", filter={"_and": [flt, part]}, limit=200, meta="none"))
            visible.update(r["id"] for r in rows.items)
        ranked = [i for i in ranked if i in visible]
    start = offset or 0
    wanted = ranked[start:start + (items.DEFAULT_LIMIT if limit is None else limit)]
    if not wanted:
        return []
    page = await items.list_items(ctx, collection, _query(plan, filter={"id": {"_in": wanted}}, limit=len(wanted)))
    by_id = {item["id"]: item for item in page.items}
    return [by_id[i] for i in wanted if i in by_id]


async def resolve_by_id(_root: Any, info: Any, id: str) -> dict[str, Any] | None:
    collection = root_collection(info)
    return await items.read(info.context.ctx, collection, id, query=_query(read_plan(info, collection)))


def _write_body(data: Any, status: Any, sort: Any, *, required: bool) -> dict[str, Any]:
    if data is None and not required:
        data = {}
    if not isinstance(data, dict):
        raise validation_error("data must be an object of fields")
    body = dict(data)
    if status is not None:
        body["status"] = status
    if sort is not None:
        body["sort"] = sort
    return body


async def _as_selected(info: Any, collection: str, written: dict[str, Any]) -> dict[str, Any]:
    """The written item shaped by the selection: read again when it names relations (the write
    answers them as stored ids)."""
    plan = read_plan(info, collection)
    if not pruned(plan.deep) and not any("." in f for f in plan.fields):
        return written
    if collection in info.context.graph.singletons:
        return await items.read_singleton(info.context.ctx, collection, query=_query(plan))
    return await items.read(info.context.ctx, collection, written["id"], query=_query(plan))


async def resolve_singleton(_root: Any, info: Any) -> dict[str, Any]:
    """A singleton's item (before its first write: ``id`` null and the field defaults)."""
    collection = root_collection(info)
    return await items.read_singleton(info.context.ctx, collection, query=_query(read_plan(info, collection)))


async def resolve_upsert_singleton(_root: Any, info: Any, data: Any, status: Any = None,
                                   sort: Any = None) -> dict[str, Any]:
    collection = root_collection(info)
    written = await items.upsert_singleton(info.context.ctx, collection,
                                           _write_body(data, status, sort, required=True))
    return await _as_selected(info, collection, written)


async def resolve_create(_root: Any, info: Any, data: Any, status: Any = None, sort: Any = None) -> dict[str, Any]:
    collection = root_collection(info)
    created = await items.create(info.context.ctx, collection, _write_body(data, status, sort, required=True))
    return await _as_selected(info, collection, created)


async def resolve_update(_root: Any, info: Any, id: str, data: Any = None, status: Any = None,
                         sort: Any = None, ifMatch: str | None = None) -> dict[str, Any]:  # noqa: N803 - GraphQL's name
    collection = root_collection(info)
    body = _write_body(data, status, sort, required=False)
    if ifMatch is None:
        updated = await items.update(info.context.ctx, collection, id, body)
    else:  # a conditional update (docs/items.md, "Conditional updates")
        updated, _tag = await items.update_if_match(info.context.ctx, collection, id, body, ifMatch)
    return await _as_selected(info, collection, updated)


async def resolve_delete(_root: Any, info: Any, id: str) -> bool:
    await items.delete(info.context.ctx, root_collection(info), id)
    return True


async def resolve_collections(_root: Any, info: Any) -> list[str]:
    """The collections of the schema the caller may read (GraphQL names)."""
    ctx = info.context.ctx
    access = ctx.kernel.access
    out = []
    for name in info.context.graph.collections:
        if access is None or (await access.decide(ctx.principal, ctx.site_id, name, "read")).allowed:
            out.append(collection_name(name))
    return out


def resolve_data(item: Any, info: Any) -> dict[str, Any] | None:
    """``_data``: the item's readable fields as REST shows them; a relation read nested here
    shows as stored (the m2o id), an o2m alias not at all."""
    if not isinstance(item, dict):
        return None
    meta = info.context.graph.types[info.context.graph.by_type[info.parent_type.name]]
    nested = {f.key: f.kind for f in meta.nested.values()}
    out: dict[str, Any] = {}
    for key, value in item.items():
        if key in STRUCTURAL_KEYS:
            continue
        kind = nested.get(key)
        if kind == "o2m":
            continue
        if kind == "m2o" and isinstance(value, dict):
            value = value.get("id")
        out[key] = value
    return out
