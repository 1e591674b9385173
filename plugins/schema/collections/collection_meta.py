"""A collection's body and record: flat keys and a Directus-style ``meta`` object, both ways.

In: ``{ name | collection, <meta keys flat>, meta: {<meta keys>, <Directus UI keys>}, schema,
fields }`` (see docs/decisions/schema-collection-shape.md). Out: the flat keys and ``meta``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernel.base.errors import ApiError
from kernel.db.meta import iso
from plugins.schema import bodies
from plugins.schema.names import field_reference_problem

DEFAULT_META: dict[str, Any] = {
    "displayName": None, "icon": None, "note": None, "singleton": False, "status_field": None,
    "sort_field": None, "editorialWorkflow": False, "requireSeparateReviewer": False, "versioning": False,
    # What an editorial approval does (docs/releases-and-editorial.md): "release" (the item waits,
    # approved, for a release or a write to publish it) or "approval" (the approval publishes it).
    "editorialPublish": "release",
    # The collection holds personal data: the privacy plugin exports its items to the users
    # who created them or whom they point at (docs/privacy.md).
    "personalData": False,
}
META_KEYS = frozenset(DEFAULT_META)
# Directus's collection meta keys for its admin UI: kept and echoed so a Directus client's
# settings survive a round trip, but svc itself gives them no meaning.
DIRECTUS_META_KEYS = frozenset({
    "hidden", "color", "sort", "group", "collapse", "display_template", "translations", "preview_url",
    "archive_field", "archive_value", "unarchive_value", "archive_app_filter", "accountability",
    "item_duplication_fields",
})
TOP_LEVEL = META_KEYS | {"name", "collection", "meta", "schema", "fields"}
MAX_UI_VALUE_BYTES = 4_096
MAX_INLINE_FIELDS = 500


def _bool(value: Any, path: list[Any]) -> bool:
    return bodies.boolean(value, path)


EDITORIAL_PUBLISH = ("release", "approval")


def _editorial_publish(value: Any, path: list[Any]) -> str:
    if value not in EDITORIAL_PUBLISH or not isinstance(value, str):
        raise ApiError.validation("Must be 'release' (approval waits for a release) or 'approval' (approval "
                                  "publishes at once)", path=path)
    return value


def _field_ref(column: str) -> Any:
    """The check of ``status_field`` / ``sort_field``: null, a content field's name, or the item's
    structural ``column`` of the same meaning (``status``, ``sort``), the natural value."""
    allowed = frozenset({column})

    def check(value: Any, path: list[Any]) -> str | None:
        if value is not None and field_reference_problem(value, allowed):
            raise ApiError.validation(
                f"Must name a field (^[A-Za-z_][A-Za-z0-9_]{{0,63}}$, or '{column}') or be null", path=path)
        return value

    return check


CHECKS = {
    "displayName": lambda v, p: bodies.text_or_null(v, p, 200),
    "icon": lambda v, p: bodies.text_or_null(v, p, 64),
    "note": lambda v, p: bodies.text_or_null(v, p, 2_000),
    "singleton": _bool, "editorialWorkflow": _bool, "requireSeparateReviewer": _bool, "versioning": _bool,
    "personalData": _bool, "status_field": _field_ref("status"), "sort_field": _field_ref("sort"),
    "editorialPublish": _editorial_publish,
}


def parse_collection_body(body: dict[str, Any], current: str | None = None) -> tuple[str | None, dict[str, Any],
                                                                                     list[Any] | None]:
    """``(name, meta changes, inline fields)`` from a create (``current`` None) or update body."""
    bodies.reject_unknown(body, TOP_LEVEL)
    name = bodies.same_name(body, ("name", "collection"), current)
    if body.get("schema") is not None and not isinstance(body["schema"], dict):
        raise ApiError.validation("'schema' must be an object or null", path=["schema"])
    changes: dict[str, Any] = {}
    for key, (value, path) in bodies.merge_meta(body, META_KEYS, META_KEYS | DIRECTUS_META_KEYS).items():
        if key in CHECKS:
            changes[key] = CHECKS[key](value, path)
        else:
            changes[key] = bodies.small_json(value, path, MAX_UI_VALUE_BYTES)
    inline = body.get("fields")
    if inline is not None:
        if current is not None:
            raise ApiError.validation("Fields are changed through /fields, not by updating the collection",
                                      path=["fields"])
        if not isinstance(inline, list) or len(inline) > MAX_INLINE_FIELDS:
            raise ApiError.validation(f"'fields' must be a list of at most {MAX_INLINE_FIELDS} fields",
                                      path=["fields"])
    return name, changes, inline


def full_meta(stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """The stored meta with every svc key present (defaults filled in)."""
    return {**DEFAULT_META, **(stored or {})}


def collection_record(row: Any) -> dict[str, Any]:
    """The API shape: flat keys for svc clients and ``meta`` for Directus-style ones."""
    meta = full_meta(row["meta"])
    return {
        "name": row["name"],
        "collection": row["name"],
        **{key: meta[key] for key in DEFAULT_META},
        "meta": meta,
        "createdAt": iso(row["created_at"]),
        "updatedAt": iso(row["updated_at"]),
        "deletedAt": iso(row["deleted_at"]),
    }


def event_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """The collection as events carry it: names and meta, no timestamps."""
    return {"name": record["name"], "meta": dict(record["meta"])}
