"""Collections: list, read, create, update meta, soft delete, restore.

A soft-deleted collection keeps its row and fields (its items are the items plugin's to keep
or clean up, on the ``collections.delete`` filter); its name is free for a new collection.
Relations touching it are detached into the row and re-attached by a restore where they
still fit. Writes take a ``UnitOfWork`` so a bundle or manifest import can make many changes
in one transaction; reads take a ``SiteDB``.
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.core.uow import UnitOfWork
from kernel.db.meta import now_utc
from kernel.tenancy.scope import SiteDB
from plugins.schema import bodies, changes
from plugins.schema.collections.collection_meta import collection_record, event_record, parse_collection_body
from plugins.schema.collections.collection_rows import find_row, not_found
from plugins.schema.fields import fields as field_service
from plugins.schema.names import check_collection_name
from plugins.schema.relations import relations
from plugins.schema.snapshot import SchemaSnapshot, with_collection
from plugins.schema.tables import collections


async def list_collections(db: SiteDB, *, include_deleted: bool = False) -> list[dict[str, Any]]:
    """Live collections by name (and soft-deleted ones after them when asked)."""
    stmt = db.select(collections)
    if not include_deleted:
        stmt = stmt.where(collections.c.deleted_at.is_(None))
    rows = await db.all(stmt.order_by(collections.c.deleted_at.is_not(None), collections.c.name,
                                      collections.c.deleted_at.desc()))
    return [collection_record(r) for r in rows]


async def get_collection(db: SiteDB, name: str) -> dict[str, Any]:
    """The live collection ``name`` as the API shows it (404 otherwise)."""
    row = await find_row(db, name)
    if row is None:
        raise not_found(name)
    return collection_record(row)


def _clashing(snap: SchemaSnapshot, name: str) -> str | None:
    # Names differing only in case would be one name to case-insensitive consumers
    # (PostgreSQL identifiers, some GraphQL clients, file systems of exports).
    return next((n for n in snap.collections if n.lower() == name.lower()), None)


async def create_collection(uow: UnitOfWork, body: dict[str, Any]) -> dict[str, Any]:
    """Create a collection (and its inline ``fields``, Directus-style) from a request body."""
    name, meta, inline = parse_collection_body(body)
    if name is None:
        raise ApiError.validation("'name' is required", path=["name"])
    name = check_collection_name(name, ["collection" if "collection" in body else "name"])
    snap = await changes.begin(uow)
    clash = _clashing(snap, name)
    if clash:
        raise bodies.conflict(f"A collection named '{clash}' already exists", ["name"])
    now = now_utc()
    row = {"id": uuid7(), "name": name, "meta": meta, "detached_relations": None, "deleted_at": None,
           "created_at": now, "updated_at": now}
    record = collection_record(row)
    data = changes.payload(uow, name, after=event_record(record))
    await changes.check(uow, "collections.create", data)
    await changes.insert_row(uow, collections, row, f"Collection '{name}'", ["name"])
    await changes.done(uow, "collections.create", data, target_type="collection", target_id=name)
    changes.remember(uow, with_collection(snap, row))
    for i, spec in enumerate(inline or []):
        if isinstance(spec, dict) and spec.get("field") == "id":
            continue  # Directus clients send their primary key; svc's structural id is that key
        await field_service.create_field(uow, name, spec, path=["fields", i])
    return record


async def update_collection(uow: UnitOfWork, name: str, body: dict[str, Any]) -> dict[str, Any]:
    """Change a collection's meta (its name never changes)."""
    _, meta, _ = parse_collection_body(body, current=name)
    await changes.begin(uow)
    row = await find_row(uow.db, name)
    if row is None:
        raise not_found(name)
    before = collection_record(row)
    merged = {**(row["meta"] or {}), **meta}
    new_row = {**row, "meta": merged, "updated_at": now_utc()}
    after = collection_record(new_row)
    data = changes.payload(uow, name, before=event_record(before), after=event_record(after))
    await changes.check(uow, "collections.update", data)
    db = uow.db
    await db.execute(db.update(collections).where(collections.c.id == row["id"])
                     .values(meta=merged, updated_at=new_row["updated_at"]))
    await changes.done(uow, "collections.update", data, target_type="collection", target_id=name)
    return after


async def delete_collection(uow: UnitOfWork, name: str) -> None:
    """Soft-delete: mark the row deleted and detach the relations that touch it."""
    snap = await changes.begin(uow)
    row = await find_row(uow.db, name)
    if row is None:
        raise not_found(name)
    before = collection_record(row)
    data = changes.payload(uow, name, before=event_record(before))
    await changes.check(uow, "collections.delete", data)
    detached = await relations.detach_all(uow, snap, name)
    db = uow.db
    now = now_utc()
    await db.execute(db.update(collections).where(collections.c.id == row["id"])
                     .values(deleted_at=now, updated_at=now, detached_relations=detached or None))
    await changes.done(uow, "collections.delete", data, target_type="collection", target_id=name)


async def restore_collection(uow: UnitOfWork, name: str) -> tuple[dict[str, Any], list[str]]:
    """Bring back the most recently deleted collection ``name``; returns it and the ids of the
    detached relations that no longer fit (so were dropped)."""
    snap = await changes.begin(uow)
    row = await find_row(uow.db, name, deleted=True)
    if row is None:
        raise ApiError.not_found(f"No deleted collection '{name}' in this site")
    clash = _clashing(snap, name)
    if clash:
        raise bodies.conflict(f"A live collection named '{clash}' exists; delete it first", ["name"])
    now = now_utc()
    new_row = {**row, "deleted_at": None, "updated_at": now, "detached_relations": None}
    record = collection_record(new_row)
    data = changes.payload(uow, name, after=event_record(record), restored=True)
    await changes.check(uow, "collections.create", data)
    db = uow.db
    await db.execute(db.update(collections).where(collections.c.id == row["id"])
                     .values(deleted_at=None, updated_at=now, detached_relations=None))
    await changes.done(uow, "collections.create", data, target_type="collection", target_id=name)
    skipped = await relations.reattach_all(uow, row["detached_relations"] or [])
    return record, skipped
