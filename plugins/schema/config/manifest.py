"""The config manifest ``svc.config@v1``: export a site's configuration, and read one in.

A manifest holds collections, fields, relations, settings and webhooks, named by their names
(never by internal ids, so it imports into another site); never items, secrets or access
control. A collection entry is ``{ name, label, versioning, <other meta keys flat> }``, a field
entry ``{ collection, field, type, interface, display, options, required, sort }``, a relation
entry the relation body of ``POST /relations``. See docs/decisions/schema-manifest.md.

``parse_manifest`` raises 400 for what is not a well-formed manifest (wrong types, unknown
keys, bad names, too many entries) and collects, as ``Problem``s, what is well-formed but does
not fit: an unknown version, duplicate keys, a section nobody provides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernel.base.errors import ApiError
from kernel.db.meta import iso, now_utc
from plugins.schema import bodies
from plugins.schema.bundles.desired import (
    DesiredSchema,
    collection_meta,
    complete_meta,
    desired_field,
    desired_relation,
    entries,
    field_entry,
    name_at,
    prefixed,
    relation_entry,
)
from plugins.schema.bundles.diffing import Problem
from plugins.schema.collections.collection_meta import DEFAULT_META, DIRECTUS_META_KEYS
from plugins.schema.config.manifest_hooks import SECTION_NAMES
from plugins.schema.snapshot import SchemaSnapshot

VERSION = "svc.config@v1"
EXPORT_SCOPES = ("all", "schema", "settings", "webhooks")
KEYS = frozenset({"version", "exportedAt", "collections", "fields", "relations", "settings", "webhooks",
                  "managedScopes"})
CAPS = {"collections": 2_000, "fields": 20_000, "relations": 5_000, "settings": 10_000, "webhooks": 1_000,
        "managedScopes": 2_100}
MAX_KEY_LENGTH = 200
# The meta keys a collection entry carries flat; ``displayName`` travels as ``label``.
SVC_FLAT = tuple(k for k in DEFAULT_META if k not in ("displayName", "versioning"))
COLLECTION_KEYS = frozenset({"name", "label", "versioning", *SVC_FLAT, *DIRECTUS_META_KEYS})


@dataclass
class Manifest:
    """A parsed manifest: the desired schema, the section entries ``(entry, path)``, the managed
    scopes and the problems found while reading it."""

    desired: DesiredSchema = field(default_factory=DesiredSchema)
    sections: dict[str, list[tuple[dict[str, Any], list[Any]]]] = field(default_factory=dict)
    managed: set[str] = field(default_factory=set)
    problems: list[Problem] = field(default_factory=list)


def collection_entry(name: str, meta: Any) -> dict[str, Any]:
    """A collection as the manifest shows it."""
    full = complete_meta(meta)
    return {"name": name, "label": full["displayName"], "versioning": full["versioning"],
            **{k: full[k] for k in SVC_FLAT}, **{k: v for k, v in full.items() if k in DIRECTUS_META_KEYS}}


def export_schema(snap: SchemaSnapshot) -> dict[str, list[dict[str, Any]]]:
    """The schema part of a manifest, in a stable order (so two exports compare equal)."""
    colls = sorted(snap.collections.values(), key=lambda c: c.name)
    return {
        "collections": [collection_entry(c.name, c.meta) for c in colls],
        "fields": [{"collection": c.name, **field_entry(f)} for c in colls
                   for f in sorted(c.fields.values(), key=lambda f: (f.sort, f.name))],
        "relations": [relation_entry(r) for r in sorted(snap.relations, key=lambda r: (r.collection, r.field))],
    }


async def export_manifest(snap: SchemaSnapshot, db: Any, providers: dict[str, Any], scope: str) -> dict[str, Any]:
    """``{ version, exportedAt, collections, fields, relations, webhooks, settings, managedScopes }``."""
    out: dict[str, Any] = {"version": VERSION, "exportedAt": iso(now_utc()), "collections": [], "fields": [],
                           "relations": [], "webhooks": [], "settings": [], "managedScopes": []}
    if scope in ("all", "schema"):
        out.update(export_schema(snap))
        out["managedScopes"].append("schema")
    for name in SECTION_NAMES:
        if scope in ("all", name) and name in providers:
            out[name] = list(await providers[name].export(db))
            out["managedScopes"].append(name)
    return out


def _collection(entry: dict[str, Any], path: list[Any]) -> tuple[str, dict[str, Any]]:
    for key in entry:
        if key not in COLLECTION_KEYS:
            raise ApiError.validation(f"Unknown key '{key}'", path=[*path, key])
    body = {k: v for k, v in entry.items() if k in SVC_FLAT or k in ("name", "versioning")}
    if "label" in entry:
        body["displayName"] = entry["label"]
    body["meta"] = {k: v for k, v in entry.items() if k in DIRECTUS_META_KEYS}
    try:
        name, meta = collection_meta(body, [])
    except ApiError as exc:
        for detail in exc.details:  # point at the manifest's own spelling of the key
            detail.path = [("label" if p == "displayName" else p) for p in (detail.path or []) if p != "meta"]
        raise prefixed(exc, path) from None
    if name is None:
        raise ApiError.validation("'name' is required", path=[*path, "name"])
    return name, meta


def _check_version(body: dict[str, Any]) -> Problem | None:
    version = body.get("version")
    if version == VERSION:
        return None
    shown = version if isinstance(version, str) else type(version).__name__
    return Problem("UNSUPPORTED_MANIFEST_VERSION", f"Manifest version {shown[:100]!r} is not supported; "
                   f"this service reads '{VERSION}'", ["version"])


def _scopes(body: dict[str, Any], out: Manifest) -> None:
    value = body.get("managedScopes")
    if value is None:
        return
    if not isinstance(value, list) or len(value) > CAPS["managedScopes"]:
        raise ApiError.validation(f"'managedScopes' must be an array of at most {CAPS['managedScopes']} scopes",
                                  path=["managedScopes"])
    for i, scope in enumerate(value):
        kind, _, name = scope.partition(":") if isinstance(scope, str) else ("", "", "")
        if not (scope in ("schema", *SECTION_NAMES) or (kind == "collection" and name)):
            raise ApiError.validation("A scope is 'schema', 'settings', 'webhooks' or 'collection:<name>'",
                                      path=["managedScopes", i])
        if kind == "collection":
            name_at(name, ["managedScopes", i], collection=True)
        if scope in out.managed:
            out.problems.append(Problem("DUPLICATE_KEY", f"Scope '{scope}' is listed twice", ["managedScopes", i]))
        out.managed.add(scope)


def _schema(body: dict[str, Any], out: Manifest) -> None:
    desired, seen = out.desired, {}
    for i, entry in enumerate(entries(body, "collections", CAPS["collections"])):
        name, meta = _collection(entry, ["collections", i])
        if name.lower() in seen:
            out.problems.append(Problem("DUPLICATE_KEY", f"Collection '{name}' is listed twice (first at "
                                        f"{seen[name.lower()]})", ["collections", i, "name"]))
            continue
        seen[name.lower()] = i
        desired.collections[name] = (meta, ["collections", i])
    seen_fields: dict[tuple[str, str], int] = {}
    for i, entry in enumerate(entries(body, "fields", CAPS["fields"])):
        collection = name_at(entry.get("collection"), ["fields", i, "collection"], collection=True)
        want = desired_field(entry, collection, ["fields", i])
        key = (collection, want.name.lower())
        if key in seen_fields:
            out.problems.append(Problem("DUPLICATE_KEY", f"Field '{collection}.{want.name}' is listed twice "
                                        f"(first at {seen_fields[key]})", ["fields", i, "field"]))
            continue
        seen_fields[key] = i
        desired.fields[(collection, want.name)] = want
    for i, entry in enumerate(entries(body, "relations", CAPS["relations"])):
        rel = desired_relation(entry, ["relations", i])
        if rel.key in desired.relations:
            out.problems.append(Problem("DUPLICATE_KEY", f"Relation {rel.key[0]}.{rel.key[1]} is listed twice",
                                        ["relations", i, "field"]))
            continue
        desired.relations[rel.key] = rel


def _section(body: dict[str, Any], name: str, provider: Any, out: Manifest) -> None:
    listed = entries(body, name, CAPS[name])
    out.sections[name] = []
    if listed and provider is None:
        out.problems.append(Problem("VALIDATION_FAILED", f"No plugin provides '{name}' on this deployment; "
                                    "leave the section empty", [name]))
        return
    seen: dict[str, int] = {}
    for i, entry in enumerate(listed):
        key = entry.get(provider.key)
        if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY_LENGTH:
            raise ApiError.validation(f"'{provider.key}' must be a string of 1 to {MAX_KEY_LENGTH} characters",
                                      path=[name, i, provider.key])
        try:
            entry = provider.check(entry)
        except ApiError as exc:
            raise prefixed(exc, [name, i]) from None
        if key in seen:
            out.problems.append(Problem("DUPLICATE_KEY", f"'{key}' is listed twice (first at {seen[key]})",
                                        [name, i, provider.key]))
            continue
        seen[key] = i
        out.sections[name].append((entry, [name, i]))


def parse_manifest(body: dict[str, Any], providers: dict[str, Any]) -> Manifest:
    """Read a manifest: 400 for malformed input; other findings in ``Manifest.problems``.

    An unsupported version stops the reading there: the rest may follow another format.
    """
    out = Manifest()
    version = _check_version(body)
    if version is not None:
        out.problems.append(version)
        return out
    bodies.reject_unknown(body, KEYS)
    exported = body.get("exportedAt")
    if exported is not None and not isinstance(exported, str):
        raise ApiError.validation("'exportedAt' must be a string or null", path=["exportedAt"])
    _scopes(body, out)
    _schema(body, out)
    for name in SECTION_NAMES:
        _section(body, name, providers.get(name), out)
    return out
