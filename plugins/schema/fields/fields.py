"""Fields of a collection: list, read, create, update (type changes included), delete.

A type change runs the ``fields.type_change`` filter before anything else: the items plugin
vetoes it there when a stored value does not convert. Dropping a field runs ``fields.delete``
(items may veto or strip the values). A field that holds a relation's references cannot
change to a type that cannot hold them, nor be dropped while the relation exists.
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.core.uow import UnitOfWork
from kernel.db.meta import now_utc
from kernel.tenancy.scope import SiteDB
from plugins.schema import bodies, changes
from plugins.schema.collections.collection_rows import find_row
from plugins.schema.collections.collection_rows import not_found as collection_not_found
from plugins.schema.data_check import holding_data
from plugins.schema.fields.field_body import event_record, field_record, parse_field_body, with_path
from plugins.schema.fields.options import validate_options
from plugins.schema.fieldtypes import types
from plugins.schema.names import check_field_name, is_lookup_name
from plugins.schema.relations.relation_rules import names_taken
from plugins.schema.snapshot import CollectionDef, FieldDef, SchemaSnapshot, with_field
from plugins.schema.tables import collections, fields

HOLDER_TYPES = {"m2o": types.ID_TYPES, "o2m": types.ID_TYPES, "m2m": types.LIST_ID_TYPES,
                "m2a": frozenset({"json"})}


def field_not_found(collection: str, name: str) -> ApiError:
    """404 ``NOT_FOUND`` for a field the collection does not have."""
    return ApiError.not_found(f"No field '{name}' in collection '{collection}'")


async def list_fields(db: SiteDB, collection: str | None = None) -> list[dict[str, Any]]:
    """The fields of one live collection in order, or of every live collection."""
    stmt = db.scope(db.select(fields).join(collections, collections.c.id == fields.c.collection_id),
                    collections).where(collections.c.deleted_at.is_(None))
    if collection is not None:
        if await find_row(db, collection) is None:
            raise collection_not_found(collection)
        stmt = stmt.where(fields.c.collection == collection)
    rows = await db.all(stmt.order_by(fields.c.collection, fields.c.sort, fields.c.created_at, fields.c.field))
    return [field_record(r) for r in rows]


async def get_field(db: SiteDB, collection: str, name: str) -> dict[str, Any]:
    """One field of a live collection as the API shows it (404 otherwise)."""
    row = await find_row(db, collection)
    if row is None:
        raise collection_not_found(collection)
    found = None
    if is_lookup_name(name):
        found = await db.one(db.select(fields).where(fields.c.collection_id == row["id"], fields.c.field == name))
    if found is None:
        raise field_not_found(collection, name)
    return field_record(found)


def _live(snap: SchemaSnapshot, collection: str) -> CollectionDef:
    coll = snap.collection(collection)
    if coll is None:
        raise collection_not_found(collection)
    return coll


async def create_field(uow: UnitOfWork, collection: str, body: Any, path: list[Any] | None = None) -> dict[str, Any]:
    """Add a field to a live collection. ``path`` prefixes error paths (inline fields)."""
    try:
        if not isinstance(body, dict):
            raise ApiError.validation("A field must be an object", path=[])
        return await _create(uow, collection, body)
    except ApiError as exc:
        if path is None or exc.status != 400 and exc.status != 409:
            raise
        raise with_path(exc, path) from None


async def _create(uow: UnitOfWork, collection: str, body: dict[str, Any]) -> dict[str, Any]:
    spec = parse_field_body(body, collection)
    name = check_field_name(spec.get("field"), ["field"])
    if "type" not in spec:
        raise ApiError.validation("'type' is required", path=["type"])
    options = validate_options(spec["type"], spec.get("options"))
    snap = await changes.begin(uow)
    coll = _live(snap, collection)
    if name.lower() in names_taken(snap, collection, None):
        raise bodies.conflict(f"'{collection}' already has a field or relation alias '{name}'", ["field"])
    sort = spec.get("sort")
    if sort is None:
        sort = max((f.sort for f in coll.fields.values()), default=0) + 1
    now = now_utc()
    row = {"collection_id": coll.id, "collection": collection, "field": name, "type": spec["type"],
           "interface": spec.get("interface"), "display": spec.get("display"), "options": options,
           "required": spec.get("required", False), "sort": sort, "created_at": now, "updated_at": now}
    record = field_record(row)
    data = changes.payload(uow, collection, name, after=event_record(record))
    await changes.check(uow, "fields.create", data)
    await changes.insert_row(uow, fields, row, f"Field '{name}'", ["field"])
    await changes.done(uow, "fields.create", data, target_type="field", target_id=f"{collection}.{name}")
    changes.remember(uow, with_field(snap, row))
    return record


def _existing(snap: SchemaSnapshot, collection: str, name: str) -> tuple[CollectionDef, FieldDef]:
    coll = _live(snap, collection)
    field = coll.field(name)
    if field is None:
        raise field_not_found(collection, name)
    return coll, field


def _check_holder(snap: SchemaSnapshot, field: FieldDef, new_type: str, required: bool) -> None:
    for rel in snap.relations:
        if rel.holder != (field.collection, field.name):
            continue
        if new_type not in HOLDER_TYPES[rel.type]:
            raise bodies.conflict(f"'{field.name}' holds the references of {rel.type} relation {rel.id}, "
                                  f"which a {new_type} field cannot hold", ["type"])
        if required and rel.on_delete == "set null" and rel.type in ("m2o", "o2m"):
            raise ApiError.validation(f"Relation {rel.id} sets '{field.name}' to null when its target is "
                                      "deleted; change its onDelete before making the field required",
                                      path=["required"])


async def update_field(uow: UnitOfWork, collection: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
    """Change a field's configuration; a type change must be accepted by ``fields.type_change``."""
    spec = parse_field_body(body, collection, current=name)
    snap = await changes.begin(uow)
    coll, field = _existing(snap, collection, name)
    new_type = spec.get("type", field.type)
    if "options" in spec:
        options = validate_options(new_type, spec["options"])
    elif new_type != field.type:
        options = validate_options(new_type, dict(field.options))
    else:
        options = dict(field.options)
    required = spec.get("required", field.required)
    _check_holder(snap, field, new_type, required)
    db = uow.db
    row = await db.one(db.select(fields).where(fields.c.collection_id == coll.id, fields.c.field == name))
    assert row is not None  # the snapshot was read in this transaction
    before = field_record(row)
    if new_type != field.type:
        await changes.check(uow, changes.FIELD_TYPE_CHANGE, changes.payload(
            uow, collection, name, fromType=field.type, toType=new_type))
    values: dict[str, Any] = {"type": new_type, "options": options, "required": required, "updated_at": now_utc(),
              **{k: spec[k] for k in ("interface", "display") if k in spec}}
    if spec.get("sort") is not None:
        values["sort"] = spec["sort"]
    after = field_record({**row, **values})
    data = changes.payload(uow, collection, name, before=event_record(before), after=event_record(after))
    await changes.check(uow, "fields.update", data)
    await db.execute(db.update(fields).where(fields.c.collection_id == coll.id, fields.c.field == name)
                     .values(**values))
    await changes.done(uow, "fields.update", data, target_type="field", target_id=f"{collection}.{name}")
    return after


async def delete_field(uow: UnitOfWork, collection: str, name: str, *, allow_destructive: bool = False) -> None:
    """Drop a field (``fields.delete`` may veto). A field whose live items hold values is dropped
    only with ``allow_destructive``: otherwise 409 ``DESTRUCTIVE_BLOCKED``, as the config import
    answers for the same removal (its dry run lists it under ``destructive``)."""
    snap = await changes.begin(uow)
    coll, field = _existing(snap, collection, name)
    for rel in snap.relations:
        if rel.holder == (collection, name):
            raise bodies.conflict(f"'{name}' holds the references of relation {rel.id}; delete the "
                                  "relation first", ["field"])
    if not allow_destructive:
        change = {"resource": "fields", "action": "delete", "collection": collection, "field": name}
        held = await holding_data(uow.kernel, uow.event_context(), [{**change, "collectionId": coll.id}])
        if held:
            raise ApiError(409, "DESTRUCTIVE_BLOCKED", f"Field '{name}' holds data; repeat with "
                           "allowDestructive=true to drop it with its values",
                           extensions={"changes": [{**change, "hasData": True}]})
    db = uow.db
    row = await db.one(db.select(fields).where(fields.c.collection_id == coll.id, fields.c.field == name))
    assert row is not None  # the snapshot was read in this transaction
    data = changes.payload(uow, collection, name, before=event_record(field_record(row)))
    await changes.check(uow, "fields.delete", data)
    await db.execute(db.delete(fields).where(fields.c.collection_id == coll.id, fields.c.field == name))
    await changes.done(uow, "fields.delete", data, target_type="field", target_id=f"{collection}.{name}")
