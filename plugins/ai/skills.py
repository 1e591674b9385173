"""The built-in skills. They register through ``register_ai_skills`` (plugin.py), as an
extension's would. Each one calls the items or schema API as the caller: permissions,
validation, the editorial gate and the bus filters apply as they do for REST.

Safe: ``list_collections``, ``describe_collection``, ``read_items``, ``read_item``,
``search_items``, ``count_items``. Dangerous (an approval first): ``create_item``,
``update_item``, ``delete_item``, ``create_collection``, ``delete_collection``, ``create_field``,
``delete_field``. Other plugins contribute theirs through the same hook, without requiring ai:
files ``import_file`` (safe), releases ``publish_release`` (dangerous).
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from plugins.ai.skill import DESTRUCTIVE, Skill, SkillContext
from plugins.items import api as items
from plugins.schema import api as schema

NAME = {"type": "string", "minLength": 1, "maxLength": 64}
ID = {"type": "string", "minLength": 1, "maxLength": 200}
FILTER = {"type": "object", "additionalProperties": True, "description": "A filter as GET /items takes it, e.g. {\"status\": {\"_eq\": \"draft\"}}"}
LIMIT = {"type": "integer", "minimum": 1, "maximum": 100}
DATA = {"type": "object", "additionalProperties": True, "description": "The item's fields"}


def _object(needed: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": needed, "additionalProperties": False}


# ---------------------------------------------------------------------- safe

async def list_collections(ctx: SkillContext, args: dict[str, Any]) -> Any:
    """The collections the caller may read (every one for an admin)."""
    snap = await schema.get_schema(ctx.kernel, ctx.site_id)
    out = []
    for name in sorted(snap.collections):
        if not ctx.principal.is_admin:
            decision = await ctx.kernel.access.decide(ctx.principal, ctx.site_id, name, "read")
            if not decision.allowed:
                continue
        coll = snap.collections[name]
        out.append({"collection": name, "singleton": coll.singleton, "fields": len(coll.fields)})
    return out


async def describe_collection(ctx: SkillContext, args: dict[str, Any]) -> Any:
    snap = await schema.get_schema(ctx.kernel, ctx.site_id)
    coll = snap.collection(args["collection"])
    if coll is None:
        raise ApiError(404, "NOT_FOUND", f"Collection '{args['collection']}' not found")
    decision = await ctx.kernel.access.decide(ctx.principal, ctx.site_id, coll.name, "read")
    fields = [{"field": f.name, "type": f.type, "required": f.required} for f in coll.fields.values()
              if decision.field_allowed(f.name)]
    return {"collection": coll.name, "singleton": coll.singleton, "fields": fields}


def _list_query(args: dict[str, Any], **extra: Any) -> Any:
    params: dict[str, Any] = {k: args[k] for k in ("filter", "sort", "fields") if args.get(k) is not None}
    return items.query(**params, **extra)


async def read_items(ctx: SkillContext, args: dict[str, Any]) -> Any:
    page = await items.list_items(ctx.items_context(), args["collection"],
                                  _list_query(args, limit=args.get("limit") or 25, meta="none"))
    return page.items


async def read_item(ctx: SkillContext, args: dict[str, Any]) -> Any:
    return await items.read(ctx.items_context(), args["collection"], args["id"])


async def search_items(ctx: SkillContext, args: dict[str, Any]) -> Any:
    hits, meta = await items.search_items(ctx.items_context(), args["q"], collection=args.get("collection"),
                                          limit=args.get("limit") or 10)
    return {"hits": hits, "total": meta.get("total")}


async def count_items(ctx: SkillContext, args: dict[str, Any]) -> Any:
    extra: dict[str, Any] = {"aggregate": {"count": "*"}}
    if args.get("groupBy"):
        extra["groupBy"] = args["groupBy"]
    return await items.aggregate(ctx.items_context(), args["collection"], _list_query(args, **extra))


# ---------------------------------------------------------------------- dangerous

async def create_item(ctx: SkillContext, args: dict[str, Any]) -> Any:
    return await items.create(ctx.items_context(), args["collection"], args["data"], cause=ctx.cause)


async def update_item(ctx: SkillContext, args: dict[str, Any]) -> Any:
    return await items.update(ctx.items_context(), args["collection"], args["id"], args["data"], cause=ctx.cause)


async def delete_item(ctx: SkillContext, args: dict[str, Any]) -> Any:
    await items.delete(ctx.items_context(), args["collection"], args["id"], cause=ctx.cause)
    return {"collection": args["collection"], "id": args["id"], "deleted": True}


def _schema_uow(ctx: SkillContext) -> Any:
    return ctx.kernel.unit_of_work(ctx.site_id, ctx.principal, ctx.request_id, ctx.cause)


async def create_collection(ctx: SkillContext, args: dict[str, Any]) -> Any:
    body: dict[str, Any] = {"name": args["name"]}
    if args.get("fields"):
        body["fields"] = args["fields"]
    async with _schema_uow(ctx) as uow:
        return await schema.create_collection(uow, body)


async def delete_collection(ctx: SkillContext, args: dict[str, Any]) -> Any:
    async with _schema_uow(ctx) as uow:
        await schema.delete_collection(uow, args["name"])
    return {"collection": args["name"], "deleted": True}


async def create_field(ctx: SkillContext, args: dict[str, Any]) -> Any:
    body = {"field": args["field"], "type": args["type"], **({"required": True} if args.get("required") else {})}
    async with _schema_uow(ctx) as uow:
        return await schema.create_field(uow, args["collection"], body)


async def delete_field(ctx: SkillContext, args: dict[str, Any]) -> Any:
    """Drop a field; one holding data only with ``allowDestructive`` (else 409
    ``DESTRUCTIVE_BLOCKED``, as REST), and such a call always waits for an approval."""
    async with _schema_uow(ctx) as uow:
        await schema.delete_field(uow, args["collection"], args["field"],
                                  allow_destructive=args.get(DESTRUCTIVE) is True)
    return {"collection": args["collection"], "field": args["field"], "deleted": True}


def builtins() -> list[Skill]:
    """The built-in skills, as ``register_ai_skills`` returns them."""
    coll = {"collection": NAME}
    field_type = {"type": "string", "enum": sorted(schema.FIELD_TYPES)}
    inline_fields = {"type": "array", "maxItems": 50, "items": _object(["field", "type"], field=NAME, type=field_type)}
    return [
        Skill("list_collections", "List the collections the caller may read.", list_collections, _object([]),
              untrusted=False),
        Skill("describe_collection", "Describe a collection's fields.", describe_collection, _object(
            ["collection"], **coll), capability="items:read", untrusted=False),
        Skill("read_items", "Read items of a collection (optional filter, sort, fields, limit).", read_items,
              _object(["collection"], **coll, filter=FILTER, sort={"type": "array", "items": {"type": "string"}},
                      fields={"type": "array", "items": {"type": "string"}}, limit=LIMIT),
              capability="items:read"),
        Skill("read_item", "Read one item by id.", read_item, _object(["collection", "id"], **coll, id=ID),
              capability="items:read"),
        Skill("search_items", "Full-text search over the items the caller may read.", search_items,
              _object(["q"], q={"type": "string", "minLength": 1, "maxLength": 500}, collection=NAME, limit=LIMIT)),
        Skill("count_items", "Count items (optional filter and groupBy).", count_items, _object(
            ["collection"], **coll, filter=FILTER, groupBy={"type": "array", "items": NAME, "maxItems": 5}),
            capability="items:read"),
        Skill("create_item", "Create an item.", create_item, _object(["collection", "data"], **coll, data=DATA),
              dangerous=True, capability="items:create",
              summary=lambda a: f"Create an item in '{a['collection']}'"),
        Skill("update_item", "Change fields of an item.", update_item, _object(
            ["collection", "id", "data"], **coll, id=ID, data=DATA), dangerous=True, capability="items:update",
            summary=lambda a: f"Update item '{a['id']}' of '{a['collection']}' ({', '.join(sorted(a['data']))[:200]})"),
        Skill("delete_item", "Delete an item.", delete_item, _object(["collection", "id"], **coll, id=ID),
              dangerous=True, capability="items:delete",
              summary=lambda a: f"Delete item '{a['id']}' of '{a['collection']}'"),
        Skill("create_collection", "Create a collection (optionally with fields).", create_collection,
              _object(["name"], name=NAME, fields=inline_fields), dangerous=True, capability="admin",
              summary=lambda a: f"Create collection '{a['name']}'", untrusted=False),
        Skill("delete_collection", "Delete a collection.", delete_collection, _object(["name"], name=NAME),
              dangerous=True, capability="admin", summary=lambda a: f"Delete collection '{a['name']}'",
              untrusted=False),
        Skill("create_field", "Add a field to a collection.", create_field, _object(
            ["collection", "field", "type"], **coll, field=NAME, type=field_type, required={"type": "boolean"}),
            dangerous=True, capability="admin", untrusted=False,
            summary=lambda a: f"Add field '{a['field']}' ({a['type']}) to '{a['collection']}'"),
        Skill("delete_field", "Delete a field of a collection. A field holding data is refused unless "
              "allowDestructive is true (its values are dropped with it).", delete_field, _object(
                  ["collection", "field"], **coll, field=NAME, **{DESTRUCTIVE: {
                      "type": "boolean", "description": "Drop the field even though it holds data (lost for good)"}}),
              dangerous=True, capability="admin", untrusted=False,
              summary=lambda a: f"Delete field '{a['field']}' of '{a['collection']}'"
                                + (" with its data" if a.get(DESTRUCTIVE) is True else "")),
    ]
