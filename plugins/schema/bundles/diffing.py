"""Compare a desired schema with a site's current one, without writing anything.

``plan_schema(current, desired, scope)`` answers what must be created, updated or deleted,
which entries are unchanged, what is wrong with the desired state (``problems``: dangling
references, name clashes, relation rules) and which changes are risky. Whether a resource
absent from the desired state goes is ``scope``'s answer (a bundle: the fields and relations
of its collection; a manifest: its mode and managed scopes).

Relations are checked against the *target* schema (the current one with every planned change
applied, built in memory), with the same ``validate_relation`` the REST route uses, so a plan
without problems applies without a validation error part-way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kernel.base.errors import ApiError
from plugins.schema.bundles.desired import DesiredSchema, complete_meta, relation_entry
from plugins.schema.relations.relation_rules import validate_relation
from plugins.schema.snapshot import CollectionDef, FieldDef, RelationDef, SchemaSnapshot

RESOURCES = ("collections", "fields", "relations")
ACTIONS = ("create", "update", "delete", "unchanged")
FIELD_KEYS = ("type", "interface", "display", "options", "required", "sort")
RELATION_KEYS = ("relatedCollection", "relatedCollections", "relatedField", "onDelete")


@dataclass
class Change:
    """One planned change; ``body`` is what the write service takes."""

    resource: str
    action: str
    collection: str
    field: str | None = None
    changes: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    relation_id: str | None = None

    def entry(self) -> dict[str, Any]:
        """The change as a diff lists it: names, and ``changes`` ``{ key: { from, to } }``."""
        out: dict[str, Any] = {"collection": self.collection}
        if self.field is not None:
            out["field"] = self.field
        if self.changes:
            out["changes"] = self.changes
        return out


@dataclass
class Problem:
    """Why the desired state cannot apply: a code, a message and the path of the entry."""

    code: str
    message: str
    path: list[Any]

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "path": list(self.path)}


@dataclass
class Scope:
    """Which resources absent from the desired state are deleted (default: none)."""

    collection: Callable[[str], bool] = lambda name: False
    field: Callable[[str, str], bool] = lambda collection, name: False
    relation: Callable[[RelationDef], bool] = lambda rel: False


@dataclass
class Plan:
    """The changes (in the order they were found), the problems, and the risky changes."""

    changes: list[Change] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    risky: list[dict[str, Any]] = field(default_factory=list)

    def of(self, resource: str, action: str) -> list[Change]:
        return [c for c in self.changes if c.resource == resource and c.action == action]

    def counts(self, resource: str) -> dict[str, int]:
        return {action: len(self.of(resource, action)) for action in ACTIONS}

    def lists(self, resource: str, *, with_unchanged: bool = True) -> dict[str, list[dict[str, Any]]]:
        return {action: [c.entry() for c in self.of(resource, action)] for action in ACTIONS
                if with_unchanged or action != "unchanged"}

    def problem(self, code: str, message: str, path: list[Any]) -> None:
        self.problems.append(Problem(code, message, path))


def same(a: Any, b: Any) -> bool:
    """JSON equality (``True`` is not ``1``, key order does not matter)."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def differences(before: dict[str, Any], after: dict[str, Any], keys: Any) -> dict[str, Any]:
    """``{ key: { from, to } }`` for the ``keys`` whose values differ."""
    return {k: {"from": before.get(k), "to": after.get(k)} for k in keys if not same(before.get(k), after.get(k))}


def risk_of(plan: Plan, extra_deletes: int = 0, extra_updates: int = 0) -> str:
    """``high``: anything deleted, a type change or ``onDelete`` widening; ``medium``: updates;
    ``low``: only creates and unchanged entries."""
    if plan.risky or extra_deletes or any(c.action == "delete" for c in plan.changes):
        return "high"
    if extra_updates or any(c.action == "update" for c in plan.changes):
        return "medium"
    return "low"


def plan_schema(current: SchemaSnapshot, desired: DesiredSchema, scope: Scope) -> Plan:
    """Everything that turns ``current`` into ``desired`` (within ``scope``), checked."""
    plan = Plan()
    gone = _plan_collections(plan, current, desired, scope)
    fields_after = _plan_fields(plan, current, desired, scope, gone)
    _plan_relations(plan, current, desired, scope, gone, fields_after)
    return plan


def _plan_collections(plan: Plan, current: SchemaSnapshot, desired: DesiredSchema, scope: Scope) -> set[str]:
    gone = {n for n in current.collections if n not in desired.collections and scope.collection(n)}
    for name in sorted(gone):
        plan.changes.append(Change("collections", "delete", name))
        plan.risky.append({"resource": "collections", "action": "delete", "collection": name,
                           "collectionId": current.collections[name].id})
    staying = {n.lower(): n for n in current.collections if n not in gone}
    for name, (meta, path) in desired.collections.items():
        coll = current.collection(name)
        if coll is None:
            if name.lower() in staying:  # the schema treats names differing in case as one
                plan.problem("CONFLICT", f"The site has a collection '{staying[name.lower()]}'", [*path, "name"])
                continue
            plan.changes.append(Change("collections", "create", name, body={"name": name, "meta": meta}))
            continue
        changes = differences(complete_meta(coll.meta), meta, {*complete_meta(coll.meta), *meta})
        body = {"meta": {k: c["to"] for k, c in changes.items()}}
        plan.changes.append(Change("collections", "update" if changes else "unchanged", name,
                                   changes=changes or None, body=body if changes else None))
    return gone


def _plan_fields(plan: Plan, current: SchemaSnapshot, desired: DesiredSchema, scope: Scope,
                 gone: set[str]) -> dict[str, dict[str, FieldDef]]:
    after: dict[str, dict[str, FieldDef]] = {n: dict(c.fields) for n, c in current.collections.items()
                                             if n not in gone}
    after.update({n: {} for n in desired.collections if n not in after})
    for cname, fields in after.items():
        for fname in list(fields):
            if (cname, fname) not in desired.fields and scope.field(cname, fname):
                del fields[fname]
                plan.changes.append(Change("fields", "delete", cname, fname))
                plan.risky.append({"resource": "fields", "action": "delete", "collection": cname, "field": fname,
                                   "collectionId": current.collections[cname].id})
    for (cname, fname), want in desired.fields.items():
        fields = after.get(cname)
        if fields is None:
            plan.problem("DANGLING_REFERENCE", f"No collection '{cname}' in the manifest or the site",
                         [*want.path, "collection"])
            continue
        have = fields.get(fname)
        body = want.body()
        if have is None:
            clash = next((n for n in fields if n.lower() == fname.lower()), None)
            if clash is not None:
                plan.problem("CONFLICT", f"'{cname}' has a field '{clash}'", [*want.path, "field"])
                continue
            plan.changes.append(Change("fields", "create", cname, fname, body=body))
            sort = want.sort if want.sort is not None else max((f.sort for f in fields.values()), default=0) + 1
        else:
            before = {k: getattr(have, k) for k in FIELD_KEYS} | {"options": dict(have.options)}
            keys = FIELD_KEYS if want.sort is not None else FIELD_KEYS[:-1]
            changes = differences(before, body, keys)
            plan.changes.append(Change("fields", "update" if changes else "unchanged", cname, fname,
                                       changes=changes or None, body=body if changes else None))
            if "type" in changes:
                plan.risky.append({"resource": "fields", "action": "type_change", "collection": cname,
                                   "field": fname, "from": have.type, "to": want.type})
            sort = want.sort if want.sort is not None else have.sort
        fields[fname] = FieldDef(cname, fname, want.type, MappingProxyType(want.options), want.required, sort,
                                 want.interface, want.display)
    return after


def _relation_def(rid: str, spec: dict[str, Any]) -> RelationDef:
    return RelationDef(rid, spec["type"], spec["collection"], spec["field"], spec["relatedCollection"],
                       tuple(spec["relatedCollections"] or ()), spec["relatedField"], spec["onDelete"] or "set null")


def _target(current: SchemaSnapshot, desired: DesiredSchema, fields_after: dict[str, dict[str, FieldDef]],
            relations: list[RelationDef]) -> SchemaSnapshot:
    colls = {}
    for name, fields in sorted(fields_after.items()):
        coll = current.collection(name)
        meta = desired.collections[name][0] if name in desired.collections else dict(coll.meta if coll else {})
        colls[name] = CollectionDef(coll.id if coll else f"new:{name}", name, MappingProxyType(meta),
                                    MappingProxyType(fields))
    return SchemaSnapshot(current.site_id, current.version, MappingProxyType(colls), tuple(relations))


def _dangling(target: SchemaSnapshot, spec: dict[str, Any], path: list[Any]) -> list[Problem]:
    out = []
    names = [("collection", spec["collection"])]
    if spec["type"] == "m2a":
        names += [(["relatedCollections", i], n) for i, n in enumerate(spec["relatedCollections"])]
    else:
        names.append(("relatedCollection", spec["relatedCollection"]))
    for key, name in names:
        if target.collection(name) is None:
            out.append(Problem("DANGLING_REFERENCE", f"No collection '{name}' in the manifest or the site",
                               [*path, *(key if isinstance(key, list) else [key])]))
    if out:
        return out
    holder, key = ((spec["relatedCollection"], spec["relatedField"]), "relatedField") if spec["type"] == "o2m" \
        else ((spec["collection"], spec["field"]), "field")
    if target.field(*holder) is None:
        out.append(Problem("DANGLING_REFERENCE", f"No field '{holder[1]}' in collection '{holder[0]}'", [*path, key]))
    return out


def _blame(rel: RelationDef, desired: DesiredSchema) -> list[Any]:
    """The path of the desired field that breaks an existing relation the input does not list:
    one taking the name of its alias, else its holder changed, else the relations section."""
    aliases = [(rel.collection, rel.field)] if rel.type == "o2m" else []
    if rel.type == "m2o" and rel.related_collection and rel.related_field:
        aliases.append((rel.related_collection, rel.related_field))
    for want in desired.fields.values():
        if (want.collection, want.name.lower()) in {(c, a.lower()) for c, a in aliases}:
            return [*want.path, "field"]
    holder = desired.fields.get(rel.holder)
    return list(holder.path) if holder else ["relations"]


def _removed_relations(current: SchemaSnapshot, desired: DesiredSchema, scope: Scope, gone: set[str],
                       fields_after: dict[str, dict[str, FieldDef]]) -> dict[str, RelationDef]:
    removed = {}
    for r in current.relations:
        key = (r.collection, r.field)
        ends = {r.collection, r.holder[0], *r.targets}
        want = desired.relations.get(key)
        if (ends & gone or r.holder[1] not in fields_after.get(r.holder[0], {})
                or (want is None and scope.relation(r)) or (want is not None and want.spec["type"] != r.type)):
            removed[r.id] = r  # a relation's type is part of its identity: a new type is a new relation
    return removed


def _plan_relations(plan: Plan, current: SchemaSnapshot, desired: DesiredSchema, scope: Scope, gone: set[str],
                    fields_after: dict[str, dict[str, FieldDef]]) -> None:
    removed = _removed_relations(current, desired, scope, gone, fields_after)
    for r in removed.values():
        plan.changes.append(Change("relations", "delete", r.collection, r.field, relation_id=r.id))
    by_key = {(r.collection, r.field): r for r in current.relations if r.id not in removed}
    kept = [r for r in by_key.values() if (r.collection, r.field) not in desired.relations]
    ids = {key: by_key[key].id if key in by_key else f"new:{key[0]}.{key[1]}" for key in desired.relations}
    target = _target(current, desired, fields_after,
                     kept + [_relation_def(ids[k], w.spec) for k, w in desired.relations.items()])
    for r in kept:
        try:
            validate_relation(target, relation_entry(r), exclude=r.id)
        except ApiError as exc:
            plan.problem(exc.code, f"Relation {r.collection}.{r.field} would no longer hold: {exc.message}",
                         _blame(r, desired))
    old = {(r.collection, r.field): r for r in removed.values()}
    for key, want in desired.relations.items():
        dangling = _dangling(target, want.spec, want.path)
        if dangling:
            plan.problems.extend(dangling)
            continue
        try:
            spec = validate_relation(target, dict(want.spec), exclude=ids[key])
        except ApiError as exc:
            plan.problem(exc.code, exc.message, [*want.path, *(exc.details[0].path or [])])
            continue
        have = by_key.get(key)
        before = relation_entry(have or old[key]) if have or key in old else {}
        if have is None:
            plan.changes.append(Change("relations", "create", *key, body=spec))
        else:
            changes = differences(before, spec, RELATION_KEYS)
            body = {k: spec[k] for k in RELATION_KEYS}
            plan.changes.append(Change("relations", "update" if changes else "unchanged", *key,
                                       changes=changes or None, body=body if changes else None,
                                       relation_id=have.id))
        if before and before["onDelete"] != "cascade" and spec["onDelete"] == "cascade":
            plan.risky.append({"resource": "relations", "action": "onDelete_widening", "collection": key[0],
                               "field": key[1], "from": before["onDelete"], "to": "cascade"})
