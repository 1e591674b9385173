"""JSON schemas of item bodies and answers, and the query parameters of item reads."""

from __future__ import annotations

from typing import Any

from plugins.items.dependents import ACTIONS
from plugins.items.listing import MAX_LIMIT

NULLABLE_STRING = {"type": ["string", "null"]}

# Content fields are per collection, so an item is an open object; which structural keys
# appear depends on the caller's read permission (``id`` always does).
ITEM: dict[str, Any] = {
    "type": "object",
    "required": ["id"],
    "properties": {
        "id": NULLABLE_STRING, "status": NULLABLE_STRING, "sort": {"type": ["integer", "null"]},
        "createdAt": NULLABLE_STRING, "updatedAt": NULLABLE_STRING,
        "userCreated": NULLABLE_STRING, "userUpdated": NULLABLE_STRING,
    },
    "additionalProperties": True,
}
ITEM_LIST = {"type": "array", "items": ITEM}
ITEM_BODY: dict[str, Any] = {
    "type": "object",
    "description": "Content fields flat, plus optional id (create), status and sort.",
    "properties": {"id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}, "status": {"type": "string"},
                   "sort": {"type": ["integer", "null"]}},
    "additionalProperties": True,
}
CREATE_BODY = {"oneOf": [ITEM_BODY, {"type": "array", "items": ITEM_BODY, "minItems": 1}]}
CREATED = {"oneOf": [ITEM, ITEM_LIST]}
COLLECTION_READ = {"oneOf": [ITEM_LIST, ITEM], "description": "A page of items; a singleton's one item."}

DEPENDENT = {
    "type": "object",
    "required": ["relation", "collection", "field", "onDelete", "count", "sample"],
    "properties": {
        "relation": {"type": "string"}, "collection": {"type": "string"}, "field": {"type": "string"},
        "onDelete": {"type": "string"}, "count": {"type": "integer"},
        "sample": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
    },
}
DESCRIPTOR_PROPERTIES = {"blocking": {"type": "boolean"}, "dependents": {"type": "array", "items": DEPENDENT}}
DESCRIPTOR = {"type": "object", "required": ["blocking", "dependents"], "properties": DESCRIPTOR_PROPERTIES}
RESOLVE_BODY = {
    "type": "object",
    "required": ["action", "relation"],
    "properties": {"action": {"enum": list(ACTIONS)}, "relation": {"type": "string"},
                   "newTargetId": {"type": "string"}, "hard": {"type": "boolean"}},
    "additionalProperties": False,
}
RESOLVED = {
    "type": "object",
    "required": ["action", "relation", "affected", "blocking", "dependents"],
    "properties": {"action": {"type": "string"}, "relation": {"type": "string"}, "affected": {"type": "integer"},
                   **DESCRIPTOR_PROPERTIES},
}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


FIELDS_PARAM = _query("fields", {"type": "string"}, "Comma list of top-level fields (`*`: all).")
LIST_PARAMS = [
    FIELDS_PARAM,
    _query("sort", {"type": "string"}, "Comma list; `-` prefix for descending; `id` breaks ties."),
    _query("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}, "Page size (default 25)."),
    _query("offset", {"type": "integer", "minimum": 0}, "Items to skip."),
    _query("page", {"type": "integer", "minimum": 1}, "1-indexed page (when no offset)."),
    _query("meta", {"enum": ["total_count", "none"]}, "`none` skips the count and omits `total`."),
]


def with_params(operations: dict[str, dict[str, Any]], method: str, params: list[dict[str, Any]]) -> dict[str, Any]:
    """``operations`` with query ``params`` on ``method``'s operation."""
    operations[method]["parameters"] = list(params)
    return operations
