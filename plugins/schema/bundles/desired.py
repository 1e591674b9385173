"""The desired schema a bundle or a manifest declares, and the shape checks of its entries.

Both formats declare whole resources: a field entry is the field's complete configuration
(a key left out means its default, not "keep the current value"; only ``sort`` left out keeps
the current position). Shape problems (wrong types, unknown keys, names with path or SQL
characters) are 400 ``VALIDATION_FAILED`` with the path of the offending part; whether the
entries fit together and fit the site is ``diffing``'s question.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernel.base.errors import ApiError
from plugins.schema import bodies
from plugins.schema.collections.collection_meta import DEFAULT_META, DIRECTUS_META_KEYS, parse_collection_body
from plugins.schema.fields.field_body import parse_field_body, with_path
from plugins.schema.fields.options import validate_options
from plugins.schema.names import COLLECTION_NAME, FIELD_NAME, check_collection_name, check_field_name
from plugins.schema.relations.relation_rules import (
    BODY_KEYS,
    MAX_M2A_TARGETS,
    RELATION_TYPES,
    normalise_on_delete,
)


@dataclass
class DesiredField:
    """A field as declared: its complete configuration and where in the input it came from."""

    collection: str
    name: str
    type: str
    interface: str | None
    display: str | None
    options: dict[str, Any]
    required: bool
    sort: int | None
    path: list[Any]

    def body(self) -> dict[str, Any]:
        """The body ``create_field`` / ``update_field`` take (``sort`` only when declared)."""
        out = {"field": self.name, "type": self.type, "interface": self.interface, "display": self.display,
               "options": self.options, "required": self.required}
        if self.sort is not None:
            out["sort"] = self.sort
        return out


@dataclass
class DesiredRelation:
    """A relation as declared (API keys, ``onDelete`` spelled canonically or ``None``)."""

    spec: dict[str, Any]
    path: list[Any]

    @property
    def key(self) -> tuple[str, str]:
        return self.spec["collection"], self.spec["field"]


@dataclass
class DesiredSchema:
    """Collections (name -> (complete meta, path)), fields and relations keyed by
    ``(collection, field)``."""

    collections: dict[str, tuple[dict[str, Any], list[Any]]] = field(default_factory=dict)
    fields: dict[tuple[str, str], DesiredField] = field(default_factory=dict)
    relations: dict[tuple[str, str], DesiredRelation] = field(default_factory=dict)


def prefixed(exc: ApiError, prefix: list[Any]) -> ApiError:
    """``exc`` with ``prefix`` in front of its paths (a 400 raised deep inside an entry)."""
    return with_path(exc, prefix)


def entries(container: dict[str, Any], key: str, cap: int, path: list[Any] | None = None) -> list[Any]:
    """``container[key]``: a list of at most ``cap`` objects (absent or null: empty)."""
    value = container.get(key)
    where = [*(path or []), key]
    if value is None:
        return []
    if not isinstance(value, list):
        raise ApiError.validation(f"'{key}' must be an array", path=where)
    if len(value) > cap:
        raise ApiError.validation(f"'{key}' holds {len(value)} entries; at most {cap} are accepted", path=where)
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise ApiError.validation("Each entry must be an object", path=[*where, i])
    return value


def name_at(value: Any, path: list[Any], *, collection: bool) -> str:
    """A collection or field name of the right shape (existence is checked later)."""
    pattern = COLLECTION_NAME if collection else FIELD_NAME
    if not isinstance(value, str) or not pattern.match(value):
        what = "a collection" if collection else "a field"
        raise ApiError.validation(f"Must name {what} ({pattern.pattern})", path=path)
    return value


def complete_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """svc's meta keys with their defaults, plus the Directus UI keys that hold a value.

    A Directus key set to null is the same as an absent one, so both compare equal and an
    export never shows them.
    """
    out = {**DEFAULT_META, **{k: v for k, v in meta.items() if k in DEFAULT_META}}
    out.update({k: v for k, v in meta.items() if k in DIRECTUS_META_KEYS and v is not None})
    return out


def collection_meta(body: dict[str, Any], path: list[Any]) -> tuple[str | None, dict[str, Any]]:
    """``(name, complete meta)`` of a collection body (flat keys or ``meta``), 400 at ``path``."""
    try:
        if body.get("fields") is not None:
            raise ApiError.validation("Fields are listed beside the collection, not inside it", path=["fields"])
        name, meta, _ = parse_collection_body(body)
    except ApiError as exc:
        raise prefixed(exc, path) from None
    if name is not None:
        name = check_collection_name(name, [*path, "name" if "name" in body else "collection"])
    return name, complete_meta(meta)


def desired_field(entry: dict[str, Any], collection: str, path: list[Any]) -> DesiredField:
    """A field entry checked for shape: name, type, options (normalised), flags."""
    try:
        spec = parse_field_body(entry, collection)
        name = check_field_name(spec.get("field"), ["field"])
        if "type" not in spec:
            raise ApiError.validation("'type' is required", path=["type"])
        options = validate_options(spec["type"], spec.get("options"))
    except ApiError as exc:
        raise prefixed(exc, path) from None
    return DesiredField(collection, name, spec["type"], spec.get("interface"), spec.get("display"), options,
                        spec.get("required", False), spec.get("sort"), path)


def _optional_name(entry: dict[str, Any], key: str, path: list[Any], *, collection: bool) -> str | None:
    value = entry.get(key)
    return None if value is None else name_at(value, [*path, key], collection=collection)


def desired_relation(entry: dict[str, Any], path: list[Any]) -> DesiredRelation:
    """A relation entry checked for shape: the keys its type needs, and no others."""
    try:
        bodies.reject_unknown(entry, BODY_KEYS)
        on_delete = normalise_on_delete(entry.get("onDelete"))
    except ApiError as exc:
        raise prefixed(exc, path) from None
    kind = entry.get("type")
    if kind not in RELATION_TYPES:
        raise ApiError.validation(f"'type' must be one of {', '.join(RELATION_TYPES)}", path=[*path, "type"])
    spec: dict[str, Any] = {
        "type": kind, "collection": name_at(entry.get("collection"), [*path, "collection"], collection=True),
        "field": name_at(entry.get("field"), [*path, "field"], collection=False),
        "relatedCollection": _optional_name(entry, "relatedCollection", path, collection=True),
        "relatedCollections": None,
        "relatedField": _optional_name(entry, "relatedField", path, collection=False), "onDelete": on_delete,
    }
    targets = entry.get("relatedCollections")
    if targets is not None:
        if not isinstance(targets, list) or not 1 <= len(targets) <= MAX_M2A_TARGETS:
            raise ApiError.validation(f"'relatedCollections' must list 1 to {MAX_M2A_TARGETS} collections",
                                      path=[*path, "relatedCollections"])
        spec["relatedCollections"] = [name_at(t, [*path, "relatedCollections", i], collection=True)
                                      for i, t in enumerate(targets)]
    needs = {"m2o": ("relatedCollection",), "m2m": ("relatedCollection",), "m2a": ("relatedCollections",),
             "o2m": ("relatedCollection", "relatedField")}[kind]
    refuses = {"m2o": ("relatedCollections",), "m2m": ("relatedCollections", "relatedField"),
               "m2a": ("relatedCollection", "relatedField"), "o2m": ("relatedCollections",)}[kind]
    for key in needs:
        if spec[key] is None:
            raise ApiError.validation(f"A {kind} relation needs '{key}'", path=[*path, key])
    for key in refuses:
        if spec[key] is not None:
            raise ApiError.validation(f"A {kind} relation takes no '{key}'", path=[*path, key])
    return DesiredRelation(spec, path)


def relation_entry(spec: Any) -> dict[str, Any]:
    """A relation as bundles and manifests show it: identity by names, never by id."""
    return {"type": spec.type, "collection": spec.collection, "field": spec.field,
            "relatedCollection": spec.related_collection,
            "relatedCollections": list(spec.related_collections) if spec.type == "m2a" else None,
            "relatedField": spec.related_field, "onDelete": spec.on_delete}


def field_entry(f: Any) -> dict[str, Any]:
    """A field's complete configuration as bundles and manifests show it."""
    return {"field": f.name, "type": f.type, "interface": f.interface, "display": f.display,
            "options": dict(f.options), "required": f.required, "sort": f.sort}
