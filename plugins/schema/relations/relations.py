"""Relations: list, read, create, update, delete; detach and re-attach around a collection's
soft delete and restore. The rules are in ``relation_rules``; this is the bookkeeping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.core.uow import UnitOfWork
from kernel.db.meta import iso, now_utc
from kernel.tenancy.scope import SiteDB
from plugins.schema import changes
from plugins.schema.relations.relation_rules import spec_from_body, validate_relation
from plugins.schema.snapshot import SchemaSnapshot, load_snapshot
from plugins.schema.tables import relations

_ID = 36


def relation_record(row: Any) -> dict[str, Any]:
    """The API shape of a relation row."""
    return {
        "id": row["id"], "type": row["type"], "collection": row["collection"], "field": row["field"],
        "relatedCollection": row["related_collection"],
        "relatedCollections": list(row["related_collections"]) if row["related_collections"] else None,
        "relatedField": row["related_field"], "onDelete": row["on_delete"],
        "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"]),
    }


def _event_form(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ("createdAt", "updatedAt")}


def _columns(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": spec["type"], "collection": spec["collection"], "field": spec["field"],
        "related_collection": spec["relatedCollection"], "related_collections": spec["relatedCollections"],
        "related_field": spec["relatedField"], "on_delete": spec["onDelete"],
    }


def not_found(relation_id: str) -> ApiError:
    """404 ``NOT_FOUND`` for a relation id the site does not have."""
    return ApiError.not_found(f"No relation '{relation_id[:_ID]}' in this site")


async def list_relations(db: SiteDB, collection: str | None = None) -> list[dict[str, Any]]:
    """Every relation of the site, or those with ``collection`` at either end."""
    rows = await db.all(db.select(relations).order_by(relations.c.created_at, relations.c.id))
    records = [relation_record(r) for r in rows]
    if collection is None:
        return records
    return [r for r in records if collection in (r["collection"], r["relatedCollection"])
            or collection in (r["relatedCollections"] or [])]


async def _row(db: SiteDB, relation_id: str) -> Any:
    # A NUL can be no id of ours, and PostgreSQL refuses to compare text holding one.
    if not isinstance(relation_id, str) or len(relation_id) > _ID or "\x00" in relation_id:
        return None
    return await db.one(db.select(relations).where(relations.c.id == relation_id))


async def get_relation(db: SiteDB, relation_id: str) -> dict[str, Any]:
    """One relation as the API shows it (404 otherwise)."""
    row = await _row(db, relation_id)
    if row is None:
        raise not_found(relation_id)
    return relation_record(row)


async def _insert(uow: UnitOfWork, spec: dict[str, Any], relation_id: str) -> dict[str, Any]:
    now = now_utc()
    row = {"id": relation_id, **_columns(spec), "created_at": now, "updated_at": now}
    record = relation_record(row)
    data = changes.payload(uow, spec["collection"], spec["field"], relationId=relation_id,
                           after=_event_form(record))
    await changes.check(uow, "relations.create", data)
    await changes.insert_row(uow, relations, row, "The relation", ["field"])
    await changes.done(uow, "relations.create", data, target_type="relation", target_id=relation_id)
    return record


async def create_relation(uow: UnitOfWork, body: dict[str, Any]) -> dict[str, Any]:
    """Create a relation from a request body (``{ type, collection, field, relatedCollection,
    relatedCollections, relatedField, onDelete }``)."""
    spec = spec_from_body(body)
    snap = await changes.begin(uow)
    return await _insert(uow, validate_relation(snap, spec), uuid7())


async def update_relation(uow: UnitOfWork, relation_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Change ``onDelete``, the related collection(s) or ``relatedField`` of a relation."""
    snap = await changes.begin(uow)
    row = await _row(uow.db, relation_id)
    if row is None:
        raise not_found(relation_id)
    before = relation_record(row)
    spec = validate_relation(snap, spec_from_body(body, before), exclude=relation_id)
    now = now_utc()
    after = relation_record({**row, **_columns(spec), "updated_at": now})
    data = changes.payload(uow, row["collection"], row["field"], relationId=relation_id,
                           before=_event_form(before), after=_event_form(after))
    await changes.check(uow, "relations.update", data)
    db = uow.db
    await db.execute(db.update(relations).where(relations.c.id == relation_id)
                     .values(**_columns(spec), updated_at=now))
    await changes.done(uow, "relations.update", data, target_type="relation", target_id=relation_id)
    return after


async def _remove(uow: UnitOfWork, row: Any) -> dict[str, Any]:
    before = relation_record(row)
    data = changes.payload(uow, row["collection"], row["field"], relationId=row["id"],
                           before=_event_form(before))
    await changes.check(uow, "relations.delete", data)
    db = uow.db
    await db.execute(db.delete(relations).where(relations.c.id == row["id"]))
    await changes.done(uow, "relations.delete", data, target_type="relation", target_id=row["id"])
    return before


async def delete_relation(uow: UnitOfWork, relation_id: str) -> None:
    """Remove a relation; the holder field and its stored ids stay (they are plain values now)."""
    await changes.begin(uow)
    row = await _row(uow.db, relation_id)
    if row is None:
        raise not_found(relation_id)
    await _remove(uow, row)


async def detach_all(uow: UnitOfWork, snap: SchemaSnapshot, collection: str) -> list[dict[str, Any]]:
    """Remove every relation touching ``collection``; returns their records for a later restore."""
    detached = []
    db = uow.db
    for rel in snap.relations_of(collection):
        row = await db.one(db.select(relations).where(relations.c.id == rel.id))
        if row is not None:
            detached.append(await _remove(uow, row))
    return detached


async def reattach_all(uow: UnitOfWork, records: list[dict[str, Any]]) -> list[str]:
    """Re-create detached relations that still fit the schema; returns the ids that did not."""
    skipped = []
    for record in records:
        snap = await load_snapshot(uow.db)
        try:
            spec = validate_relation(snap, {**record})
        except ApiError:
            skipped.append(str(record.get("id")))
            continue
        await _insert(uow, spec, record["id"])
    return skipped
