"""JSON schemas of the schema plugin's bodies and records, for the OpenAPI document."""

from __future__ import annotations

from typing import Any

from plugins.schema.fieldtypes.types import FIELD_TYPES
from plugins.schema.relations.relation_rules import ON_DELETE, RELATION_TYPES

NULLABLE_STRING = {"type": ["string", "null"]}
NAME = {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_]{0,63}$"}
FIELD_NAME = {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$"}
TIMESTAMP = {"type": "string", "format": "date-time"}

META_PROPERTIES: dict[str, Any] = {
    "displayName": NULLABLE_STRING, "icon": NULLABLE_STRING, "note": NULLABLE_STRING,
    "singleton": {"type": "boolean"}, "status_field": NULLABLE_STRING, "sort_field": NULLABLE_STRING,
    "editorialWorkflow": {"type": "boolean"}, "requireSeparateReviewer": {"type": "boolean"},
    "versioning": {"type": "boolean"},
    "personalData": {"type": "boolean"},
    "editorialPublish": {"type": "string", "enum": ["release", "approval"],
                         "description": "What an editorial approval does: wait for a release, or publish"},
}
COLLECTION_META = {"type": "object", "required": list(META_PROPERTIES), "properties": META_PROPERTIES,
                   "additionalProperties": True}

COLLECTION = {
    "type": "object",
    "required": ["name", "collection", *META_PROPERTIES, "meta", "createdAt", "updatedAt", "deletedAt"],
    "properties": {
        "name": {"type": "string"}, "collection": {"type": "string"}, **META_PROPERTIES,
        "meta": COLLECTION_META, "createdAt": TIMESTAMP, "updatedAt": TIMESTAMP,
        "deletedAt": {"type": ["string", "null"], "format": "date-time"},
    },
}

FIELD_EDITABLE: dict[str, Any] = {
    "interface": NULLABLE_STRING, "display": NULLABLE_STRING,
    "options": {"type": "object", "additionalProperties": True, "description": "Widget options plus default, unique, indexed, "
                "maxLength, minLength, pattern, min, max, choices, precision, scale, geometryType, algorithm"},
    "required": {"type": "boolean"}, "sort": {"type": "integer"},
}
FIELD = {
    "type": "object",
    "required": ["collection", "field", "type", *FIELD_EDITABLE, "meta", "createdAt", "updatedAt"],
    "properties": {
        "collection": {"type": "string"}, "field": {"type": "string"}, "type": {"enum": list(FIELD_TYPES)},
        **FIELD_EDITABLE,
        "meta": {"type": "object", "required": list(FIELD_EDITABLE), "properties": FIELD_EDITABLE},
        "createdAt": TIMESTAMP, "updatedAt": TIMESTAMP,
    },
}
FIELD_BODY = {
    "type": "object",
    "properties": {
        "field": FIELD_NAME, "collection": {"type": "string"}, "type": {"enum": list(FIELD_TYPES)},
        "interface": NULLABLE_STRING, "display": NULLABLE_STRING, "options": {"type": ["object", "null"], "additionalProperties": True},
        "required": {"type": "boolean"}, "sort": {"type": ["integer", "null"]},
        "meta": {"type": ["object", "null"], "additionalProperties": True},
        "schema": {"type": ["object", "null"], "additionalProperties": True, "description": "Directus-style: default_value, is_unique, "
                   "is_indexed, max_length"},
    },
    "additionalProperties": False,
}
FIELD_CREATE = {**FIELD_BODY, "required": ["field", "type"]}

COLLECTION_BODY: dict[str, Any] = {
    "type": "object",
    "description": "Give `name` (or Directus's `collection`); meta keys flat or under `meta`.",
    "properties": {
        "name": NAME, "collection": NAME, **META_PROPERTIES,
        "meta": {"type": ["object", "null"], "additionalProperties": True}, "schema": {"type": ["object", "null"], "additionalProperties": True},
        "fields": {"type": "array", "items": FIELD_CREATE},
    },
    "additionalProperties": False,
}
COLLECTION_PATCH = {
    "type": "object",
    "properties": {k: v for k, v in COLLECTION_BODY["properties"].items() if k != "fields"},
    "additionalProperties": False,
}

RELATION_PROPERTIES: dict[str, Any] = {
    "type": {"enum": list(RELATION_TYPES)}, "collection": {"type": "string"}, "field": {"type": "string"},
    "relatedCollection": NULLABLE_STRING,
    "relatedCollections": {"type": ["array", "null"], "items": {"type": "string"}},
    "relatedField": NULLABLE_STRING, "onDelete": {"enum": list(ON_DELETE)},
}
RELATION = {
    "type": "object",
    "required": ["id", *RELATION_PROPERTIES, "createdAt", "updatedAt"],
    "properties": {"id": {"type": "string"}, **RELATION_PROPERTIES, "createdAt": TIMESTAMP,
                   "updatedAt": TIMESTAMP},
}
RELATION_BODY: dict[str, Any] = {
    "type": "object",
    "required": ["type", "collection", "field"],
    "properties": {**RELATION_PROPERTIES,
                   "onDelete": {"type": "string", "description": "restrict, set null or cascade"}},
    "additionalProperties": False,
}
RELATION_PATCH = {"type": "object", "properties": RELATION_BODY["properties"], "additionalProperties": False}

DELETED_PARAM = {"name": "deleted", "in": "query", "required": False, "schema": {"type": "boolean"},
                 "description": "Include soft-deleted collections (admin only)."}
COLLECTION_PARAM = {"name": "collection", "in": "query", "required": False, "schema": {"type": "string"},
                    "description": "Only relations with this collection at either end."}


def with_params(operations: dict[str, dict[str, Any]], method: str, *params: dict[str, Any]) -> dict[str, Any]:
    """``operations`` with query ``params`` added to ``method``'s operation."""
    operations[method]["parameters"] = list(params)
    return operations
