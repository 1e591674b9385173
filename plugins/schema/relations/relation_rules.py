"""What makes a relation valid against a schema snapshot (see docs/decisions/schema-relations.md).

- ``m2o``: ``field`` is a real field of ``collection`` (uuid, string, integer, bigInteger) holding
  the id of a ``relatedCollection`` item; optional ``relatedField`` names the reverse (o2m) alias
  on ``relatedCollection``.
- ``o2m``: ``field`` is an alias on ``collection`` (no stored value); ``relatedField`` is the real
  id field of ``relatedCollection`` pointing back at ``collection``.
- ``m2m``: ``field`` is a real ``json`` or ``csv`` field of ``collection`` holding a list of ids of
  ``relatedCollection`` items (no junction collection).
- ``m2a``: ``field`` is a real ``json`` field holding a list of ``{ collection, id }`` whose
  collections are among ``relatedCollections``.

Every stored reference lives in exactly one holder field, so each holder belongs to at most
one relation and ``onDelete`` is never ambiguous.
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from plugins.schema import bodies
from plugins.schema.fieldtypes import types
from plugins.schema.names import check_field_name
from plugins.schema.snapshot import SchemaSnapshot

RELATION_TYPES = ("m2o", "o2m", "m2m", "m2a")
ON_DELETE = ("restrict", "set null", "cascade")
BODY_KEYS = frozenset({"type", "collection", "field", "relatedCollection", "relatedCollections",
                       "relatedField", "onDelete"})
MAX_M2A_TARGETS = 50


def _live(snap: SchemaSnapshot, name: Any, path: list[Any]) -> str:
    if not isinstance(name, str) or snap.collection(name) is None:
        raise ApiError.validation(f"No live collection {name!r} in this site", path=path)
    return name


def names_taken(snap: SchemaSnapshot, collection: str, exclude: str | None) -> set[str]:
    """Lower-cased names taken on ``collection``: real fields and other relations' aliases."""
    coll = snap.collection(collection)
    taken = {f.lower() for f in (coll.fields if coll else {})}
    for name, nested in snap.nested_fields(collection).items():
        if nested.relation.id != exclude:
            taken.add(name.lower())
    return taken


def _alias(snap: SchemaSnapshot, collection: str, name: Any, path: list[Any], exclude: str | None) -> str:
    name = check_field_name(name, path)
    if name.lower() in names_taken(snap, collection, exclude):
        raise bodies.conflict(f"'{name}' is already a field or relation alias of '{collection}'", path)
    return name


def _holder(snap: SchemaSnapshot, collection: str, name: Any, path: list[Any], allowed: frozenset[str],
            what: str) -> Any:
    name = check_field_name(name, path)
    field = snap.field(collection, name)
    if field is None:
        raise ApiError.validation(f"'{collection}' has no field '{name}' to hold {what}", path=path)
    if field.type not in allowed:
        raise ApiError.validation(
            f"'{collection}.{name}' is a {field.type} field; {what} needs one of {', '.join(sorted(allowed))}",
            path=path)
    return field


def _absent(spec: dict[str, Any], key: str, kind: str) -> None:
    if spec.get(key) not in (None, [], ""):
        raise ApiError.validation(f"A {kind} relation takes no '{key}'", path=[key])


def _targets(snap: SchemaSnapshot, value: Any) -> list[str]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_M2A_TARGETS:
        raise ApiError.validation(f"'relatedCollections' must list 1 to {MAX_M2A_TARGETS} collections",
                                  path=["relatedCollections"])
    out = [_live(snap, name, ["relatedCollections", i]) for i, name in enumerate(value)]
    if len(set(out)) != len(out):
        raise ApiError.validation("'relatedCollections' lists a collection twice", path=["relatedCollections"])
    return out


def normalise_on_delete(value: Any) -> str | None:
    """``onDelete`` in its canonical spelling (Directus's ``SET NULL``/``set_null`` accepted)."""
    if value is None:
        return None
    if isinstance(value, str):
        spelled = value.strip().lower().replace("_", " ")
        if spelled in ON_DELETE:
            return spelled
    raise ApiError.validation(f"'onDelete' must be one of {', '.join(ON_DELETE)}", path=["onDelete"])


def validate_relation(snap: SchemaSnapshot, spec: dict[str, Any], exclude: str | None = None) -> dict[str, Any]:
    """``spec`` (API keys) checked against ``snap`` and completed; ``exclude`` is the id of the
    relation being updated, whose own names do not count as taken."""
    kind = spec.get("type")
    if kind not in RELATION_TYPES:
        raise ApiError.validation(f"'type' must be one of {', '.join(RELATION_TYPES)}", path=["type"])
    collection = _live(snap, spec.get("collection"), ["collection"])
    out: dict[str, Any] = {"type": kind, "collection": collection, "relatedCollection": None,
                           "relatedCollections": None, "relatedField": None}
    if kind == "m2a":
        _absent(spec, "relatedCollection", kind)
        _absent(spec, "relatedField", kind)
        out["relatedCollections"] = _targets(snap, spec.get("relatedCollections"))
        holder = _holder(snap, collection, spec.get("field"), ["field"], frozenset({"json"}), "m2a references")
        out["field"] = holder.name
    else:
        _absent(spec, "relatedCollections", kind)
        related = _live(snap, spec.get("relatedCollection"), ["relatedCollection"])
        out["relatedCollection"] = related
        if kind == "o2m":
            out["field"] = _alias(snap, collection, spec.get("field"), ["field"], exclude)
            holder = _holder(snap, related, spec.get("relatedField"), ["relatedField"], types.ID_TYPES,
                             f"the id of a '{collection}' item")
            out["relatedField"] = holder.name
        elif kind == "m2o":
            holder = _holder(snap, collection, spec.get("field"), ["field"], types.ID_TYPES,
                             f"the id of a '{related}' item")
            out["field"] = holder.name
            if spec.get("relatedField") is not None:
                out["relatedField"] = _alias(snap, related, spec["relatedField"], ["relatedField"], exclude)
        else:
            _absent(spec, "relatedField", kind)
            holder = _holder(snap, collection, spec.get("field"), ["field"], types.LIST_ID_TYPES,
                             f"a list of '{related}' ids")
            out["field"] = holder.name
    _check_holder_free(snap, holder, kind, exclude)
    out["onDelete"] = _on_delete(spec.get("onDelete"), holder, kind)
    return out


def _check_holder_free(snap: SchemaSnapshot, holder: Any, kind: str, exclude: str | None) -> None:
    for other in snap.relations:
        if other.id != exclude and other.holder == (holder.collection, holder.name):
            path = ["relatedField"] if kind == "o2m" else ["field"]
            raise bodies.conflict(
                f"'{holder.collection}.{holder.name}' already holds the references of relation {other.id}",
                path)


def _on_delete(value: Any, holder: Any, kind: str) -> str:
    on_delete = normalise_on_delete(value)
    single = kind in ("m2o", "o2m")
    if on_delete is None:
        # Like Directus, a reference is cleared when its target goes, unless it may not be empty.
        return "restrict" if single and holder.required else "set null"
    if on_delete == "set null" and single and holder.required:
        raise ApiError.validation(
            f"'set null' cannot apply: '{holder.collection}.{holder.name}' is required", path=["onDelete"])
    return on_delete


def spec_from_body(body: dict[str, Any], current: dict[str, Any] | None = None) -> dict[str, Any]:
    """The relation a create body asks for, or ``current`` with an update body applied
    (``type``, ``collection`` and ``field`` are the relation's identity and cannot change)."""
    bodies.reject_unknown(body, BODY_KEYS)
    if current is None:
        return dict(body)
    for key in ("type", "collection", "field"):
        if key in body and body[key] != current[key]:
            raise ApiError.validation(f"'{key}' of a relation cannot be changed; create a new one",
                                      path=[key])
    return {**current, **body}
