"""A field's body and record.

In: ``{ field, type, interface, display, options, required, sort }`` flat, or Directus-style
with those under ``meta``; Directus's ``schema`` block contributes ``default_value``,
``is_unique``, ``is_indexed`` and ``max_length`` as the options ``default``, ``unique``,
``indexed`` and ``maxLength`` (its other keys describe SQL columns svc does not have and are
ignored). Out: the flat keys, plus ``meta`` with the same values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernel.base.errors import ApiError
from kernel.db.meta import iso
from plugins.schema import bodies
from plugins.schema.fieldtypes import types

META_KEYS = frozenset({"interface", "display", "options", "required", "sort"})
TOP_LEVEL = META_KEYS | {"field", "collection", "type", "meta", "schema"}
SCHEMA_TO_OPTION = {"default_value": "default", "is_unique": "unique", "is_indexed": "indexed",
                    "max_length": "maxLength"}
SORT_RANGE = (-(2**31), 2**31 - 1)


def _schema_options(block: Any) -> dict[str, Any]:
    if block is None:
        return {}
    if not isinstance(block, dict):
        raise ApiError.validation("'schema' must be an object or null", path=["schema"])
    return {SCHEMA_TO_OPTION[k]: v for k, v in block.items() if k in SCHEMA_TO_OPTION and v is not None}


def parse_field_body(body: dict[str, Any], collection: str, current: str | None = None) -> dict[str, Any]:
    """The keys a create (``current`` None) or update body sets, checked for shape only."""
    bodies.reject_unknown(body, TOP_LEVEL)
    bodies.same_name(body, ("collection",), collection)
    out: dict[str, Any] = {}
    name = bodies.same_name(body, ("field",), current)
    if name is not None:
        out["field"] = name
    if "type" in body:
        if body["type"] not in types.FIELD_TYPES:
            raise ApiError.validation(f"'type' must be one of {', '.join(types.FIELD_TYPES)}", path=["type"])
        out["type"] = body["type"]
    for key, (value, path) in bodies.merge_meta(body, META_KEYS, META_KEYS).items():
        if key in ("interface", "display"):
            out[key] = bodies.text_or_null(value, path, 200)
        elif key == "required":
            out[key] = bodies.boolean(value, path)
        elif key == "sort":
            out[key] = None if value is None else bodies.integer(value, path, *SORT_RANGE)
        else:
            if value is not None and not isinstance(value, dict):
                raise ApiError.validation("'options' must be an object", path=path)
            out["options"] = value or {}
    from_schema = _schema_options(body.get("schema"))
    if from_schema:
        out["options"] = {**from_schema, **out.get("options", {})}
    return out


def with_path(exc: ApiError, prefix: list[Any]) -> ApiError:
    """``exc`` with ``prefix`` in front of each detail's path (errors of inline fields)."""
    for detail in exc.details:
        detail.path = [*prefix, *(detail.path or [])]
    return exc


def field_record(row: Any) -> dict[str, Any]:
    """The API shape: flat keys, and ``meta`` repeating the editable ones for Directus clients."""
    editable = {"interface": row["interface"], "display": row["display"], "options": dict(row["options"] or {}),
                "required": bool(row["required"]), "sort": row["sort"]}
    return {
        "collection": row["collection"], "field": row["field"], "type": row["type"], **editable,
        "meta": {**editable, "options": dict(editable["options"])},
        "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"]),
    }


def event_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """The field as events carry it (no timestamps, no repeated meta)."""
    return {k: record[k] for k in ("field", "type", "interface", "display", "options", "required", "sort")}
