"""What other plugins may use of schema (declare ``requires = ("schema",)``).

Reading a site's schema::

    snap = await get_schema(kernel, site_id)          # cached, invalidated on every worker
    coll = snap.collection("articles")                # CollectionDef | None
    for name, field in coll.fields.items(): ...       # FieldDef, ordered by sort
    value = validate_value(field, raw)                # normalised value, or ValueError

Inside a transaction that changed the schema, ``await load_schema(conn, site_id)`` sees the
uncommitted state. For ``onDelete``: ``relations_pointing_to(snap, "authors")`` lists every
field holding ids of ``authors`` items. Writes (bundles, config import) call the service
functions re-exported below with a ``UnitOfWork``; each bumps the schema version and emits the
same events as the REST routes.

Events (bus): filter and action ``collections.create|update|delete``, ``fields.create|update|
delete``, ``relations.create|update|delete`` with ``{ siteId, collection, field?, relationId?,
before?, after? }``; filter ``fields.type_change`` with ``{ siteId, collection, field, fromType,
toType }``; action ``schema.changed`` with ``{ siteId, version }``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from kernel.tenancy.scope import SiteDB
from plugins.schema.cache import get_schema
from plugins.schema.changes import FIELD_TYPE_CHANGE, SCHEMA_CHANGED, in_transaction
from plugins.schema.collections.collections import (
    create_collection,
    delete_collection,
    restore_collection,
    update_collection,
)
from plugins.schema.fields.conversion import convert, converts
from plugins.schema.fields.fields import create_field, delete_field, update_field
from plugins.schema.fields.options import is_indexed
from plugins.schema.fieldtypes.numeric import parse_decimal
from plugins.schema.fieldtypes.types import FIELD_TYPES, coerce, validate_value
from plugins.schema.names import STRUCTURAL_FIELDS, collection_name_problem, field_name_problem
from plugins.schema.relations.relation_rules import ON_DELETE, RELATION_TYPES
from plugins.schema.relations.relations import create_relation, delete_relation, update_relation
from plugins.schema.snapshot import (
    CollectionDef,
    FieldDef,
    NestedField,
    Reference,
    RelationDef,
    SchemaSnapshot,
    load_snapshot,
)
from plugins.schema.tables import fields as _field_rows

SCHEMA_EVENTS = tuple(f"{kind}.{verb}" for kind in ("collections", "fields", "relations")
                      for verb in ("create", "update", "delete"))


async def config_dry_run(kernel: Any, db: Any, ctx: Any, body: dict[str, Any], mode: str = "merge") -> dict[str, Any]:
    """The config import's dry run of a manifest ``body`` (``POST /config/import?dryRun=true``):
    ``{ valid, errors, diff }``, writing nothing; ``db`` a site reader, ``ctx`` an EventContext."""
    from plugins.schema.config import manifest, manifest_apply
    from plugins.schema.config.manifest_hooks import sections

    providers = sections(kernel)
    return await manifest_apply.dry_run(kernel, db, ctx, manifest.parse_manifest(body, providers), mode, providers)


async def config_apply(uow: Any, body: dict[str, Any], mode: str = "merge", *,
                       allow_destructive: bool = False) -> dict[str, Any]:
    """The config import of a manifest ``body`` in ``uow`` (``POST /config/import``): 400 for a
    malformed manifest, 422 when invalid, 409 when destructive and not allowed."""
    from plugins.schema.config import manifest, manifest_apply
    from plugins.schema.config.manifest_hooks import sections

    providers = sections(uow.kernel)
    return await manifest_apply.apply_manifest(uow, manifest.parse_manifest(body, providers), mode, providers,
                                               allow_destructive=allow_destructive)


async def load_schema(conn: Any, site_id: str) -> SchemaSnapshot:
    """The site's schema read on ``conn`` (no cache): inside a transaction, its own changes show."""
    return await load_snapshot(SiteDB(site_id, conn))


async def transaction_schema(ctx: Any) -> SchemaSnapshot:
    """The schema as a bus filter's transaction sees it: the snapshot the schema change in
    progress holds (no query: see ``changes.begin``), else read on ``ctx.conn``."""
    return in_transaction(getattr(ctx, "uow", None)) or await load_schema(ctx.conn, ctx.site_id)


def relations_pointing_to(snapshot: SchemaSnapshot, collection: str) -> list[Reference]:
    """Every (collection, field) that may hold ids of ``collection``'s items, with the relation,
    the value shape (``id``, ``ids`` or ``refs``) and ``onDelete``: what deleting one of
    ``collection``'s items must check (restrict), clear (set null) or delete too (cascade)."""
    return snapshot.references_to(collection)


def nested_fields(snapshot: SchemaSnapshot, collection: str) -> dict[str, NestedField]:
    """The relational names readable on ``collection`` (m2o objects, o2m lists, m2m, m2a)."""
    return dict(snapshot.nested_fields(collection))


async def indexed_fields(conn: Any) -> list[tuple[str, str]]:
    """``(field, type)`` of every field with an index (``is_indexed``), in every site: for
    maintenance that spans sites (the items' planner statistics)."""
    rows = await conn.execute(select(_field_rows.c.field, _field_rows.c.type, _field_rows.c.options))
    return [(name, kind) for name, kind, options in rows if is_indexed(kind, options)]


def live_fields() -> Any:
    """A subquery of the fields of live collections in every site (``site_id``,
    ``collection_id``, ``collection`` (its name), ``field``, ``type``, ``options``): for
    maintenance queries that span sites and join the items (the search backfill), so they need
    no query per site."""
    from plugins.schema.tables import collections as collection_rows

    return (select(_field_rows.c.site_id, _field_rows.c.collection_id, collection_rows.c.name.label("collection"),
                   _field_rows.c.field, _field_rows.c.type, _field_rows.c.options)
            .join(collection_rows, collection_rows.c.id == _field_rows.c.collection_id)
            .where(collection_rows.c.deleted_at.is_(None)).subquery("live_fields"))


async def field_in_use(conn: Any, name: str) -> bool:
    """Whether any site has a field called ``name``."""
    found = await conn.execute(select(_field_rows.c.field).where(_field_rows.c.field == name).limit(1))
    return found.first() is not None


def forget_cached(kernel: Any, site_id: str | None = None) -> None:
    """Drop this process's cached snapshot of a site (tests, maintenance)."""
    from plugins.schema.cache import forget

    forget(kernel, site_id)


__all__ = [
    "FIELD_TYPES", "FIELD_TYPE_CHANGE", "is_indexed", "ON_DELETE", "RELATION_TYPES", "SCHEMA_CHANGED", "SCHEMA_EVENTS",
    "STRUCTURAL_FIELDS", "CollectionDef", "FieldDef", "NestedField", "Reference", "RelationDef",
    "SchemaSnapshot", "coerce", "collection_name_problem", "convert", "converts", "create_collection",
    "create_field", "create_relation", "delete_collection", "delete_field", "delete_relation",
    "field_in_use", "field_name_problem", "forget_cached", "get_schema", "indexed_fields", "live_fields", "transaction_schema",
    "load_schema",
    "nested_fields", "parse_decimal",
    "relations_pointing_to", "restore_collection", "update_collection", "update_field", "update_relation",
    "validate_value",
]
