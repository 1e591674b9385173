"""A site's GraphQL schema, generated from its schema snapshot (collections, fields, relations).

For each collection ``X`` (name mapped by ``names``): the object type ``X`` with the structural
columns, ``_data`` and the content fields (a content field named like a structural column is
not repeated); an m2o field is the related object (nullable), an o2m alias a list with
``limit`` and ``offset``; m2m and m2a fields stay JSON ids (use ``_data``). Root fields:
``X``, ``X_by_id``, ``_collections``; ``create_X``, ``update_X``, ``delete_X``; ``X_events``
(a singleton ``S``: ``S``, ``update_S`` as an upsert, ``S_events``). Content fields of one scalar
type share one ``GraphQLField`` and root fields share their argument definitions, which keeps a
50 x 20 site near 250 KiB (docs/performance.md).
Resolvers live in ``resolvers`` and ``subscriptions``; this module only shapes the types and
records, per type, what each GraphQL field stands for (``TypeMeta``), which the resolvers use
to turn a selection into one items read.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLBoolean,
    GraphQLField,
    GraphQLFloat,
    GraphQLID,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLString,
)

from plugins.graphql import names, resolvers, subscriptions
from plugins.graphql.scalars import ID_ARG, JSON, DateTime, ItemEvent

# Structural columns: (GraphQL name, type). ``_data`` is added beside them.
STRUCTURAL: tuple[tuple[str, Any], ...] = (
    ("id", GraphQLNonNull(GraphQLID)), ("status", GraphQLString), ("sort", GraphQLInt),
    ("createdAt", DateTime), ("updatedAt", DateTime), ("userCreated", GraphQLString),
    ("userUpdated", GraphQLString))
STRUCTURAL_NAMES = frozenset(name for name, _ in STRUCTURAL) | {"_data", "deletedAt"}

SCALARS: dict[str, Any] = {
    "boolean": GraphQLBoolean, "integer": GraphQLInt, "float": GraphQLFloat, "decimal": GraphQLFloat,
    "bigInteger": GraphQLString,
    **dict.fromkeys(("dateTime", "date", "time", "timestamp"), DateTime),
    **dict.fromkeys(("string", "text", "uuid", "hash", "slug", "code", "color"), GraphQLString),
    **dict.fromkeys(("json", "csv", "geometry", "files"), JSON),
}

LIST_ARGS = {
    "filter": GraphQLArgument(JSON, description="A filter tree, as REST's `filter`."),
    "sort": GraphQLArgument(GraphQLList(GraphQLNonNull(GraphQLString)), description="Field tokens; `-` descends."),
    "limit": GraphQLArgument(GraphQLInt, description="At most 200."),
    "offset": GraphQLArgument(GraphQLInt),
    "status": GraphQLArgument(GraphQLString, description="Only items of this status."),
    "search": GraphQLArgument(GraphQLString, description="Full-text search words (the items search)."),
}
NESTED_LIST_ARGS = {"limit": GraphQLArgument(GraphQLInt), "offset": GraphQLArgument(GraphQLInt)}
WRITE_ARGS = {"status": GraphQLArgument(GraphQLString), "sort": GraphQLArgument(GraphQLInt)}
CREATE_ARGS = {"data": GraphQLArgument(GraphQLNonNull(JSON)), **WRITE_ARGS}
UPDATE_ARGS = {**ID_ARG, "data": GraphQLArgument(JSON), **WRITE_ARGS,
               "ifMatch": GraphQLArgument(GraphQLString, description=(
                   "Update only while the item's ETag (GET /items/:c/:id) is one of these, as REST's "
                   "If-Match; a stale one is refused (reason PRECONDITION_FAILED, status 412)."))}
COLLECTIONS_FIELD = GraphQLField(GraphQLNonNull(GraphQLList(GraphQLNonNull(GraphQLString))),
                                 description="The collections the caller may read.",
                                 resolve=resolvers.resolve_collections)
DELETE_FIELD = GraphQLField(GraphQLNonNull(GraphQLBoolean), args=ID_ARG, description="Soft delete.",
                            resolve=resolvers.resolve_delete)
EVENTS_FIELD = GraphQLField(GraphQLNonNull(ItemEvent), subscribe=subscriptions.subscribe_events,
                            resolve=subscriptions.resolve_event)


@dataclass(frozen=True)
class FieldMeta:
    """What one GraphQL field of an item type stands for."""

    kind: str  # structural | data | content | m2o | o2m
    key: str  # the item key (the original field name)
    related: str | None = None  # m2o/o2m: the related collection


# Shared by every item type of every site (fields hold no reference to their parent type): a
# schema then costs one GraphQLField per relation and per root field, not per content field.
STRUCTURAL_FIELDS = {name: GraphQLField(kind) for name, kind in STRUCTURAL}
SINGLETON_ID = GraphQLField(GraphQLID, description="Null until the singleton's first write.")
DATA_FIELD = GraphQLField(JSON, description="Every field the caller may read, as REST shows it.",
                          resolve=resolvers.resolve_data)
SCALAR_FIELDS = {kind: GraphQLField(kind) for kind in {*SCALARS.values(), JSON}}
BASE_META = {**{name: FieldMeta("structural", name) for name, _ in STRUCTURAL}, "_data": FieldMeta("data", "_data")}


@dataclass
class TypeMeta:
    """One collection's item type: the GraphQL fields that are not plain content fields (those
    are read under their own name): relations, and content fields whose name was mapped."""

    collection: str
    fields: dict[str, FieldMeta] = field(default_factory=dict)

    def lookup(self, name: str, gql_type: Any) -> FieldMeta | None:
        """What the field ``name`` of this type stands for (``None``: ``__typename``)."""
        found = self.fields.get(name) or BASE_META.get(name)
        if found is None and name in gql_type.fields:
            return FieldMeta("content", name)
        return found

    @property
    def nested(self) -> dict[str, FieldMeta]:
        return {k: f for k, f in self.fields.items() if f.kind in ("m2o", "o2m")}


@dataclass
class SiteGraph:
    """A site's schema at one schema version, and the meta the resolvers need."""

    site_id: str
    version: int
    schema: GraphQLSchema
    types: dict[str, TypeMeta]  # by collection name
    collections: tuple[str, ...]
    singletons: frozenset[str]
    by_type: dict[str, str] = field(default_factory=dict)  # GraphQL type name -> collection
    view: Hashable = None  # None: the whole schema; else the member view it was built for


Shown = Callable[[str, str], bool]  # (collection, field) -> whether a member's view shows it


_NO_EXTENSIONS: dict[str, Any] = {}


def _shared_args(args: dict[str, Any]) -> dict[str, Any]:
    return GraphQLField(GraphQLString, args=args).args  # normalised once, shared by every field


SHARED_ARGS = {id(a): _shared_args(a) for a in (LIST_ARGS, NESTED_LIST_ARGS, ID_ARG, CREATE_ARGS, UPDATE_ARGS)}


def _field(type_: Any, args: dict[str, Any] | None = None, resolve: Any = None) -> GraphQLField:
    """A field whose argument definitions (and empty extensions) are shared, not copied: a site's
    schema holds hundreds of root fields, each with the same few arguments. Never mutated."""
    out = GraphQLField(type_, resolve=resolve)
    if args is not None:
        out.args = SHARED_ARGS[id(args)]
    out.extensions = _NO_EXTENSIONS
    return out


def _getter(key: str) -> Any:
    def resolve(item: Any, info: Any, **_: Any) -> Any:
        return item.get(key) if isinstance(item, dict) else None
    return resolve


def _item_fields(snap: Any, coll: Any, meta: TypeMeta, objects: dict[str, GraphQLObjectType],
                 shown: Shown | None) -> Any:
    def thunk() -> dict[str, GraphQLField]:
        out: dict[str, GraphQLField] = {**STRUCTURAL_FIELDS, "_data": DATA_FIELD}
        if coll.singleton:
            out["id"] = SINGLETON_ID
        if shown is not None:  # id and _data always stay (the read is refused, or masked, later)
            for name in STRUCTURAL_FIELDS:
                if name != "id" and not shown(coll.name, name):
                    del out[name]
        nested = snap.nested_fields(coll.name)
        for fname, fdef in coll.fields.items():
            if fname in STRUCTURAL_NAMES or (shown is not None and not shown(coll.name, fname)):
                continue
            gname = names.field_name(fname)
            rel = nested.get(fname)
            getter = None if gname == fname else _getter(fname)
            if rel is not None and rel.kind == "m2o" and rel.related_collection in objects:
                out[gname] = _field(objects[rel.related_collection], resolve=getter)
                meta.fields[gname] = FieldMeta("m2o", fname, rel.related_collection)
            elif getter is None:
                out[gname] = SCALAR_FIELDS[SCALARS.get(fdef.type, JSON)]
            else:
                out[gname] = _field(SCALARS.get(fdef.type, JSON), resolve=getter)
                meta.fields[gname] = FieldMeta("content", fname)
        for alias, rel in nested.items():
            if rel.kind != "o2m" or alias in coll.fields or rel.related_collection not in objects:
                continue
            if shown is not None and not shown(coll.name, alias):
                continue
            gname = names.field_name(alias)
            if gname in out:  # never two meanings under one name
                continue
            out[gname] = _field(GraphQLList(GraphQLNonNull(objects[rel.related_collection])), NESTED_LIST_ARGS,
                                None if gname == alias else _getter(alias))
            meta.fields[gname] = FieldMeta("o2m", alias, rel.related_collection)
        return out
    return thunk


def build(snap: Any, shown: Shown | None = None, view: Hashable = None) -> SiteGraph:
    """The GraphQL schema of ``snap`` (a ``SchemaSnapshot``). Root resolvers are shared: each
    finds its collection from the field name (``resolvers.root_collection``).

    ``shown(collection, field)``: a member's view (``view`` names it), the site's schema without
    the fields (content, structural, o2m aliases) it answers False for; ``id`` and ``_data`` stay.
    A document naming a hidden field then fails validation exactly as one naming a field that does
    not exist: same code, same message, and every other rule (leaf selections, arguments, merging,
    cost) sees it as unknown too."""
    colls = list(snap.collections.values())
    objects: dict[str, GraphQLObjectType] = {}
    types: dict[str, TypeMeta] = {}
    for coll in colls:
        meta = TypeMeta(coll.name)
        types[coll.name] = meta
        # Fields are a thunk: types refer to each other; the schema resolves it once, below.
        objects[coll.name] = GraphQLObjectType(names.collection_name(coll.name),
                                               _item_fields(snap, coll, meta, objects, shown))
    query: dict[str, GraphQLField] = {"_collections": COLLECTIONS_FIELD}
    mutation: dict[str, GraphQLField] = {}
    subscription: dict[str, GraphQLField] = {}
    for coll in colls:
        x, obj = names.collection_name(coll.name), objects[coll.name]
        subscription[f"{x}_events"] = EVENTS_FIELD
        if coll.singleton:  # one item: read it, write it (created on the first write)
            query[x] = _field(obj, None, resolvers.resolve_singleton)
            mutation[f"update_{x}"] = _field(GraphQLNonNull(obj), CREATE_ARGS, resolvers.resolve_upsert_singleton)
            continue
        query[x] = _field(GraphQLNonNull(GraphQLList(GraphQLNonNull(obj))), LIST_ARGS, resolvers.resolve_list)
        query[f"{x}_by_id"] = _field(obj, ID_ARG, resolvers.resolve_by_id)
        mutation[f"create_{x}"] = _field(GraphQLNonNull(obj), CREATE_ARGS, resolvers.resolve_create)
        mutation[f"update_{x}"] = _field(GraphQLNonNull(obj), UPDATE_ARGS, resolvers.resolve_update)
        mutation[f"delete_{x}"] = DELETE_FIELD
    schema = GraphQLSchema(
        query=GraphQLObjectType("Query", query),
        mutation=GraphQLObjectType("Mutation", mutation) if mutation else None,
        subscription=GraphQLObjectType("Subscription", subscription) if subscription else None,
        types=[ItemEvent] if not subscription else None)
    return SiteGraph(snap.site_id, snap.version, schema, types, tuple(c.name for c in colls),
                     frozenset(c.name for c in colls if c.singleton),
                     {names.collection_name(c.name): c.name for c in colls}, view)
