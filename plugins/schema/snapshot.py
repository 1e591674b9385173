"""The schema snapshot: a site's live collections, fields and relations at one version.

Immutable by design (frozen dataclasses, read-only mappings): one snapshot is cached per site
and shared by every request of the process, so nobody may change it in place.
``load_snapshot(conn, site_id)`` reads one from the database; ``plugins.schema.api`` caches it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from types import MappingProxyType
from typing import Any

from kernel.tenancy.scope import SiteDB
from plugins.schema.fields.options import is_indexed
from plugins.schema.fieldtypes import types
from plugins.schema.tables import collections, fields, relations, schema_versions

EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class FieldDef:
    """One content field: its type, options (``default``, ``unique``, validation...) and order."""

    collection: str
    name: str
    type: str
    options: Mapping[str, Any] = dc_field(default_factory=lambda: EMPTY)
    required: bool = False
    sort: int = 0
    interface: str | None = None
    display: str | None = None

    @property
    def has_default(self) -> bool:
        return "default" in self.options

    @property
    def default(self) -> Any:
        return self.options.get("default")

    @property
    def unique(self) -> bool:
        return bool(self.options.get("unique"))

    @property
    def indexed(self) -> bool:
        return is_indexed(self.type, self.options)

    @property
    def sensitive(self) -> bool:
        """Regulated content: never named in a query, never searched, maybe stored encrypted."""
        return self.options.get("sensitive") is True

    def validate(self, value: Any) -> Any:
        """``types.validate_value(self, value)``: the normalised value, or ``ValueError``."""
        return types.validate_value(self, value)


@dataclass(frozen=True)
class RelationDef:
    """One relation. ``holder`` is the (collection, field) whose values hold the references."""

    id: str
    type: str
    collection: str
    field: str
    related_collection: str | None = None
    related_collections: tuple[str, ...] = ()
    related_field: str | None = None
    on_delete: str = "set null"

    @property
    def holder(self) -> tuple[str, str]:
        if self.type == "o2m":
            assert self.related_collection and self.related_field
            return self.related_collection, self.related_field
        return self.collection, self.field

    @property
    def targets(self) -> tuple[str, ...]:
        """The collections whose item ids the holder field holds."""
        if self.type == "m2a":
            return self.related_collections
        if self.type == "o2m":
            return (self.collection,)
        return (self.related_collection,) if self.related_collection else ()

    @property
    def shape(self) -> str:
        """``id`` (one id), ``ids`` (a list of ids) or ``refs`` (a list of ``{collection, id}``)."""
        return {"m2m": "ids", "m2a": "refs"}.get(self.type, "id")


@dataclass(frozen=True)
class Reference:
    """Where items of some collection are referenced: what items needs to enforce ``onDelete``."""

    relation: RelationDef
    collection: str
    field: str
    shape: str
    on_delete: str


@dataclass(frozen=True)
class NestedField:
    """A relational field as read nested: ``m2o`` one object, ``o2m`` a list, ``m2m``/``m2a``."""

    name: str
    kind: str
    relation: RelationDef
    related_collection: str | None
    foreign_key: str | None = None  # o2m: the field of the related collection holding our id


@dataclass(frozen=True)
class CollectionDef:
    """One live collection: ``fields`` ordered by ``sort``; ``meta`` as the API shows it."""

    id: str
    name: str
    meta: Mapping[str, Any] = dc_field(default_factory=lambda: EMPTY)
    fields: Mapping[str, FieldDef] = dc_field(default_factory=lambda: EMPTY)

    def field(self, name: str) -> FieldDef | None:
        return self.fields.get(name)

    @property
    def singleton(self) -> bool:
        return bool(self.meta.get("singleton"))

    @property
    def editorial_workflow(self) -> bool:
        return bool(self.meta.get("editorialWorkflow"))

    @property
    def require_separate_reviewer(self) -> bool:
        return bool(self.meta.get("requireSeparateReviewer"))

    @property
    def editorial_publish(self) -> str:
        """``approval`` when an editorial approval publishes the item at once, else ``release``."""
        return "approval" if self.meta.get("editorialPublish") == "approval" else "release"

    @property
    def versioning(self) -> bool:
        return bool(self.meta.get("versioning"))

    @property
    def status_field(self) -> str | None:
        return self.meta.get("status_field")

    @property
    def sort_field(self) -> str | None:
        return self.meta.get("sort_field")


@dataclass(frozen=True)
class SchemaSnapshot:
    """A site's schema at ``version``. Lookups by name; ``None`` for what does not exist."""

    site_id: str
    version: int
    collections: Mapping[str, CollectionDef] = dc_field(default_factory=lambda: EMPTY)
    relations: tuple[RelationDef, ...] = ()
    _nested: dict[str, dict[str, NestedField]] = dc_field(default_factory=dict, compare=False, repr=False)
    _sensitive: dict[str, tuple[str, ...]] = dc_field(default_factory=dict, compare=False, repr=False)

    def collection(self, name: str) -> CollectionDef | None:
        return self.collections.get(name)

    def sensitive_fields(self, collection: str) -> tuple[str, ...]:
        """The names of ``collection``'s ``sensitive`` fields (memoised: reads ask per request)."""
        if collection not in self._sensitive:
            coll = self.collections.get(collection)
            self._sensitive[collection] = tuple(n for n, f in coll.fields.items() if f.sensitive) if coll else ()
        return self._sensitive[collection]

    @property
    def has_sensitive(self) -> bool:
        """Whether any collection of the site has a ``sensitive`` field (one memo per snapshot)."""
        if "" not in self._sensitive:  # "" is no collection's name
            self._sensitive[""] = tuple(n for n in self.collections if self.sensitive_fields(n))
        return bool(self._sensitive[""])

    def field(self, collection: str, name: str) -> FieldDef | None:
        coll = self.collections.get(collection)
        return coll.fields.get(name) if coll else None

    def relation(self, relation_id: str) -> RelationDef | None:
        return next((r for r in self.relations if r.id == relation_id), None)

    def relations_of(self, collection: str) -> list[RelationDef]:
        """Relations with ``collection`` at either end."""
        return [r for r in self.relations
                if r.collection == collection or collection in r.targets or r.holder[0] == collection]

    def nested_fields(self, collection: str) -> Mapping[str, NestedField]:
        """Relational names readable on ``collection`` (m2o fields, o2m aliases, m2m/m2a fields)."""
        if collection not in self._nested:
            out: dict[str, NestedField] = {}
            for r in self.relations:
                if r.collection == collection:
                    fk = r.related_field if r.type == "o2m" else None
                    out[r.field] = NestedField(r.field, r.type, r, r.related_collection, fk)
                if r.type == "m2o" and r.related_collection == collection and r.related_field:
                    out[r.related_field] = NestedField(r.related_field, "o2m", r, r.collection, r.field)
            self._nested[collection] = out  # a memo, not state: the snapshot never changes
        return MappingProxyType(self._nested[collection])

    def references_to(self, collection: str) -> list[Reference]:
        """Every field that may hold ids of ``collection``'s items, with its ``onDelete``."""
        return [Reference(r, r.holder[0], r.holder[1], r.shape, r.on_delete)
                for r in self.relations if collection in r.targets]


def with_collection(snap: SchemaSnapshot, row: Any) -> SchemaSnapshot:
    """``snap`` plus the new collection of ``row`` (a ``svc_collections`` row, no fields yet),
    as ``load_snapshot`` would read it."""
    from plugins.schema.collections.collection_meta import full_meta

    added = CollectionDef(id=row["id"], name=row["name"], meta=MappingProxyType(full_meta(row["meta"])),
                          fields=MappingProxyType({}))
    defs = {**snap.collections, row["name"]: added}
    return SchemaSnapshot(snap.site_id, snap.version, MappingProxyType(dict(sorted(defs.items()))), snap.relations)


def with_field(snap: SchemaSnapshot, row: Any) -> SchemaSnapshot:
    """``snap`` plus the new field of ``row`` (a ``svc_fields`` row), as ``load_snapshot`` would
    read it: after the fields of the same or a smaller ``sort`` (they were made before it)."""
    coll = snap.collections[row["collection"]]
    added = field_def(row)
    listed = list(coll.fields.values())
    at = next((i for i, f in enumerate(listed) if f.sort > added.sort), len(listed))
    listed.insert(at, added)
    fields_ = MappingProxyType({f.name: f for f in listed})
    defs = {**snap.collections, coll.name: CollectionDef(id=coll.id, name=coll.name, meta=coll.meta, fields=fields_)}
    return SchemaSnapshot(snap.site_id, snap.version, MappingProxyType(defs), snap.relations)


def relation_def(row: Any) -> RelationDef:
    """A ``RelationDef`` from a ``svc_relations`` row."""
    return RelationDef(
        id=row["id"], type=row["type"], collection=row["collection"], field=row["field"],
        related_collection=row["related_collection"],
        related_collections=tuple(row["related_collections"] or ()),
        related_field=row["related_field"], on_delete=row["on_delete"],
    )


def field_def(row: Any) -> FieldDef:
    """A ``FieldDef`` from a ``svc_fields`` row."""
    return FieldDef(
        collection=row["collection"], name=row["field"], type=row["type"],
        options=MappingProxyType(dict(row["options"] or {})), required=bool(row["required"]),
        sort=row["sort"], interface=row["interface"], display=row["display"],
    )


async def read_version(db: SiteDB) -> int:
    """The site's schema version (0 before its first schema change)."""
    value = await db.scalar(db.select(schema_versions, schema_versions.c.version))
    return int(value or 0)


async def load_snapshot(db: SiteDB) -> SchemaSnapshot:
    """Read the site's live schema through ``db`` (inside a transaction, it sees its changes).

    The version is read first: a change committed in between makes the snapshot newer than
    its label, never older, so the cache reloads it rather than keeping stale data.
    """
    from plugins.schema.collections.collection_meta import full_meta

    version = await read_version(db)
    live = collections.c.deleted_at.is_(None)
    coll_rows = await db.all(db.select(collections).where(live))
    ids = {r["id"]: r for r in coll_rows}
    by_collection: dict[str, dict[str, FieldDef]] = {r["name"]: {} for r in coll_rows}
    if ids:
        stmt = db.select(fields).where(fields.c.collection_id.in_(list(ids)))
        for row in await db.all(stmt.order_by(fields.c.sort, fields.c.created_at, fields.c.field)):
            by_collection[ids[row["collection_id"]]["name"]][row["field"]] = field_def(row)
    defs = {
        r["name"]: CollectionDef(id=r["id"], name=r["name"], meta=MappingProxyType(full_meta(r["meta"])),
                                 fields=MappingProxyType(by_collection[r["name"]]))
        for r in sorted(coll_rows, key=lambda r: r["name"])
    }
    rel_rows = await db.all(db.select(relations).order_by(relations.c.created_at, relations.c.id))
    return SchemaSnapshot(db.site_id, version, MappingProxyType(defs),
                          tuple(relation_def(r) for r in rel_rows))

