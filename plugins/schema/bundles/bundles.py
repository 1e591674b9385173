"""Schema bundles: one collection, its fields and the relations touching it, as one JSON value.

Shape (what ``GET /collections/{name}/schema`` gives and ``PUT`` takes)::

    { "collection": { "name": "articles", "meta": { displayName, icon, ..., versioning } },
      "fields":     [ { field, type, interface, display, options, required, sort } ],
      "relations":  [ { type, collection, field, relatedCollection, relatedCollections,
                        relatedField, onDelete } ] }

Relations are named by their ends, never by id, so a bundle applies to another site. Applying
makes the collection match: missing fields and relations are created, differing ones updated,
others of the collection deleted (relations: those touching it). A part the bundle leaves out
(``collection``, ``fields`` or ``relations``) is left as it is; an empty list deletes. The
collection itself is never deleted by a bundle. Applying the same bundle twice changes nothing
the second time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernel.base.errors import ApiError
from kernel.core.uow import UnitOfWork
from kernel.tenancy.scope import SiteDB
from plugins.schema import bodies
from plugins.schema.bundles.applying import apply_plan, lock_schema
from plugins.schema.bundles.desired import (
    DesiredSchema,
    collection_meta,
    complete_meta,
    desired_field,
    desired_relation,
    entries,
    field_entry,
    relation_entry,
)
from plugins.schema.bundles.diffing import RESOURCES, Plan, Scope, plan_schema, risk_of
from plugins.schema.collections.collection_rows import not_found
from plugins.schema.snapshot import SchemaSnapshot, load_snapshot

BUNDLE_KEYS = frozenset({"collection", "fields", "relations"})
MAX_BUNDLE_FIELDS = 500
MAX_BUNDLE_RELATIONS = 500


@dataclass
class Bundle:
    """A parsed bundle: the collection's name, the desired state, and which parts it declares."""

    name: str
    desired: DesiredSchema
    declared: frozenset[str]


def touches(rel: Any, name: str) -> bool:
    """Whether relation ``rel`` (a ``RelationDef``) has collection ``name`` at either end."""
    return rel.collection == name or name in rel.targets or rel.holder[0] == name


def export_bundle(snap: SchemaSnapshot, name: str) -> dict[str, Any]:
    """The bundle of live collection ``name`` (404 when there is none)."""
    coll = snap.collection(name)
    if coll is None:
        raise not_found(name)
    rels = sorted((r for r in snap.relations if touches(r, name)), key=lambda r: (r.collection, r.field))
    return {
        "collection": {"name": name, "meta": complete_meta(coll.meta)},
        "fields": [field_entry(f) for f in sorted(coll.fields.values(), key=lambda f: (f.sort, f.name))],
        "relations": [relation_entry(r) for r in rels],
    }


def parse_bundle(body: dict[str, Any], name: str | None = None) -> Bundle:
    """The bundle ``body`` declares; ``name`` is the one the path gives (400 with a path)."""
    bodies.reject_unknown(body, BUNDLE_KEYS)
    declared = frozenset(k for k in BUNDLE_KEYS if body.get(k) is not None)
    head = body.get("collection")
    if head is None and name is not None:
        head = {"name": name}
    if not isinstance(head, dict):
        raise ApiError.validation("'collection' must be an object with the collection's name", path=["collection"])
    given, meta = collection_meta(head, ["collection"])
    if given is None:
        if name is None:
            raise ApiError.validation("'collection.name' is required", path=["collection", "name"])
        given = name
    if name is not None and given != name:
        raise ApiError.validation(f"The bundle describes '{given}', not '{name}'", path=["collection", "name"])
    desired = DesiredSchema(collections={given: (meta, ["collection"])})
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries(body, "fields", MAX_BUNDLE_FIELDS)):
        want = desired_field(entry, given, ["fields", i])
        if want.name.lower() in seen:
            raise ApiError.validation(f"Field '{want.name}' is listed twice (also at {seen[want.name.lower()]})",
                                      path=["fields", i, "field"])
        seen[want.name.lower()] = i
        desired.fields[(given, want.name)] = want
    for i, entry in enumerate(entries(body, "relations", MAX_BUNDLE_RELATIONS)):
        rel = desired_relation(entry, ["relations", i])
        spec = rel.spec
        ends = {spec["collection"], spec["relatedCollection"], *(spec["relatedCollections"] or [])}
        if given not in ends:
            raise ApiError.validation(f"The relation does not touch '{given}'", path=["relations", i])
        if rel.key in desired.relations:
            raise ApiError.validation(f"Relation {rel.key[0]}.{rel.key[1]} is listed twice",
                                      path=["relations", i, "field"])
        desired.relations[rel.key] = rel
    return Bundle(given, desired, declared)


def bundle_scope(bundle: Bundle) -> Scope:
    """What a bundle owns: the collection's fields and the relations touching it, each only when
    the bundle lists them."""
    name = bundle.name
    return Scope(field=lambda collection, _field: "fields" in bundle.declared and collection == name,
                 relation=lambda rel: "relations" in bundle.declared and touches(rel, name))


def checked_plan(snap: SchemaSnapshot, bundle: Bundle) -> Plan:
    """The plan of a bundle; a problem is a 400 (409 for a name clash) at the entry's path."""
    current = snap.collection(bundle.name)
    if "collection" not in bundle.declared and current is not None:  # meta not given: keep it
        bundle.desired.collections[bundle.name] = (complete_meta(current.meta), ["collection"])
    plan = plan_schema(snap, bundle.desired, bundle_scope(bundle))
    if plan.problems:
        first = plan.problems[0]
        status = 409 if first.code == "CONFLICT" else 400
        raise ApiError(status, "CONFLICT" if status == 409 else "VALIDATION_FAILED", first.message,
                       path=first.path, extensions={"reason": first.code} if status == 400 else None)
    return plan


def diff_view(plan: Plan) -> dict[str, Any]:
    """``{ collections, fields, relations: { create, update, delete, unchanged: [entries] }, risk }``."""
    out: dict[str, Any] = {resource: plan.lists(resource) for resource in RESOURCES}
    out["risk"] = risk_of(plan)
    return out


async def diff_bundle(db: SiteDB, body: dict[str, Any]) -> dict[str, Any]:
    """The diff of a bundle against the site's current schema; writes nothing."""
    return diff_view(checked_plan(await load_snapshot(db), parse_bundle(body)))


async def apply_bundle(uow: UnitOfWork, name: str, body: dict[str, Any], *,
                       allow_destructive: bool = False) -> dict[str, Any]:
    """Make collection ``name`` match the bundle, in the caller's unit of work. A field it drops
    with data needs ``allow_destructive`` (409 ``DESTRUCTIVE_BLOCKED`` otherwise)."""
    bundle = parse_bundle(body, name)
    await lock_schema(uow)
    plan = checked_plan(await load_snapshot(uow.db), bundle)
    applied = await apply_plan(uow, plan, allow_destructive=allow_destructive)
    applied["unchanged"] = sum(len(plan.of(r, "unchanged")) for r in RESOURCES)
    return {"collection": bundle.name, "applied": applied, "diff": diff_view(plan)}

