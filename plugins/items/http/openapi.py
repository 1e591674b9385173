"""JSON schemas of item bodies and answers, and the query parameters of item reads."""

from __future__ import annotations

from typing import Any

from plugins.items.read.listing import MAX_LIMIT
from plugins.items.write.dependents import ACTIONS

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


FIELDS_PARAM = _query("fields", {"type": "string"}, (
    "Comma list (or `fields[]=`, or a JSON array); `*` for every readable field. Dotted names read "
    "relations nested: `author.name`, `author.*` (m2o: the related item, null when missing or not "
    "visible), `comments.body` (o2m: a list; `comments` alone: the ids), `*.*` every m2o/o2m relation "
    "one level; at most 3 relations deep."))
DEEP_PARAM = _query("deep", {"type": "string"}, (
    "Per nested relation: `deep[rel][_filter][f][_op]=v`, `_sort`, `_limit` (o2m, per parent; default "
    "100), `_offset`, `_page`, `_fields`; nested relations as `deep[rel][sub][...]`; or the same as a "
    "JSON object (`deep={\"rel\": {\"_limit\": 5}}`), which wins over the bracket keys."))
LIST_PARAMS = [
    FIELDS_PARAM,
    _query("filter", {"type": "string"}, (
        "A JSON object (`{\"views\": {\"_gt\": 10}}`), or bracket keys `filter[field][_op]=value` "
        "(`filter[_and][0][f][_op]=v` for groups; values coerced). Dotted paths into JSON fields and "
        "through relations (`author.name`). The JSON form wins when both are given; malformed JSON is "
        "400 VALIDATION.")),
    _query("sort", {"type": "string"}, (
        "Comma list (or `sort[]=`, or a JSON array); `-` prefix for descending; m2o paths like "
        "`author.name`; nulls first ascending; `id` breaks ties.")),
    _query("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}, "Page size (default 25)."),
    _query("offset", {"type": "integer", "minimum": 0}, "Items to skip."),
    _query("page", {"type": "integer", "minimum": 1}, "1-indexed page; wins over offset."),
    _query("meta", {"enum": ["total_count", "filter_count", "none"]},
           "`total_count` (default): `meta.total` is the filtered count; `none` skips the count."),
    _query("aggregate", {"type": "string"}, (
        "`aggregate[fn]=field,...` or JSON `{\"fn\": \"*\" | \"a,b\" | [\"a\"]}`; fn one of count, "
        "countDistinct, sum, avg, min, max (`count` takes `*`). Answers `[{ \"count\": N }]`, or "
        "`[{ fn: { field: value } }]`; no `meta`.")),
    _query("groupBy", {"type": "string"}, (
        "Comma list (or `groupBy[]=`, or a JSON array) of fields or JSON paths: "
        "`[{ \"category\": \"a\", \"sum\": { \"views\": N } }]`, groups ordered by their keys and "
        "paged by limit/offset.")),
    DEEP_PARAM,
]
ITEM_PARAMS = [FIELDS_PARAM, DEEP_PARAM]


def with_params(operations: dict[str, dict[str, Any]], method: str, params: list[dict[str, Any]]) -> dict[str, Any]:
    """``operations`` with query ``params`` on ``method``'s operation."""
    operations[method]["parameters"] = list(params)
    return operations


# Conditional updates (docs/items.md, "Conditional updates", core/etags.py).
_ETAG_HEADER = {"ETag": {"description": "The item's version: send it back as If-Match to update only while "
                                        "it is current.", "schema": {"type": "string"}}}
IF_MATCH_PARAM = {"name": "If-Match", "in": "header", "required": False, "schema": {"type": "string"},
                  "description": ("Apply the write only while the item's ETag is one of these (`\"...\"`, "
                                  "comma-separated; `*` any). Else 412 PRECONDITION_FAILED with the current "
                                  "tag in `extensions.etag`; a malformed value is 400 VALIDATION_FAILED.")}


def conditional(operations: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``operations`` of ``/items/{collection}/{item_id}`` with the ETag answer of GET and the
    If-Match parameter (and its 412) of PATCH and PUT."""
    operations["get"]["responses"]["200"]["headers"] = _ETAG_HEADER
    for method in ("patch", "put"):
        op = operations[method]
        op["parameters"] = [*op.get("parameters", []), IF_MATCH_PARAM]
        op["responses"]["200"]["headers"] = {"ETag": {**_ETAG_HEADER["ETag"], "description": (
            "The item's new version (answered when If-Match was sent).")}}
        op["responses"]["412"] = {"description": "If-Match names none of the item's current ETag "
                                                  "(PRECONDITION_FAILED): it changed since it was read."}
    return operations
