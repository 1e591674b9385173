"""JSON schemas of the history routes: revisions, revert, versions, compare, promote, pins."""

from __future__ import annotations

from typing import Any

from plugins.items.history.versions import MAX_PROMOTE_FIELDS
from plugins.items.http.openapi import ITEM, NULLABLE_STRING

OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}
CONTENT = {**OBJECT, "description": "Content fields (those the caller may read)."}

ACTOR = {
    "type": "object",
    "required": ["kind", "userId", "apiKeyId", "impersonatorId"],
    "properties": {"kind": NULLABLE_STRING, "userId": NULLABLE_STRING, "apiKeyId": NULLABLE_STRING,
                   "impersonatorId": NULLABLE_STRING},
}
CHANGE = {"type": "object", "required": ["from", "to"], "properties": {"from": {}, "to": {}}}
REVISION = {
    "type": "object",
    "required": ["id", "collection", "item", "kind", "staged", "createdAt", "committedAt", "actor", "delta", "data",
                 "origin", "causedBy"],
    "properties": {
        "id": {"type": "string"}, "collection": {"type": "string"}, "item": {"type": "string"},
        "kind": {"enum": ["create", "update", "revert", "promote", "prepared"]},
        "staged": {"type": "boolean"}, "createdAt": {"type": "string"}, "committedAt": NULLABLE_STRING,
        "actor": ACTOR,
        "delta": {"type": "object", "additionalProperties": CHANGE, "description": "field -> { from, to }"},
        "data": {**ITEM, "description": "The whole item after the change (masked by the read policy)."},
        "origin": {"type": ["object", "null"], "additionalProperties": True, "description": "{ revisionId } (revert), { version } (promote), "
                                                              "{ cause } (onDelete)"},
        "causedBy": {**NULLABLE_STRING, "description": "The write's cause, '<kind>:<id>' (release:<id>, "
                     "flow-run:<id>, revert:<revisionId>, promote:<version>); null for plain REST writes."},
    },
}
STAGE_BODY = {
    "type": "object",
    "required": ["data"],
    "properties": {"data": {**OBJECT, "description": "Content fields to change, checked like a PATCH."},
                   "staged": {"type": "boolean", "default": True}},
    "additionalProperties": False,
}
REVERT_BODY = {
    "type": "object", "required": ["revisionId"], "properties": {"revisionId": {"type": "string", "minLength": 1}},
    "additionalProperties": False,
}
VERSION = {
    "type": "object",
    "required": ["key", "name", "data", "mainChanged", "createdAt", "updatedAt", "userCreated", "userUpdated"],
    "properties": {
        "key": {"type": "string"}, "name": {"type": "string"}, "data": CONTENT, "mainChanged": {"type": "boolean"},
        "createdAt": {"type": "string"}, "updatedAt": {"type": "string"}, "userCreated": NULLABLE_STRING,
        "userUpdated": NULLABLE_STRING,
    },
}
NAME = {"type": "string", "minLength": 1, "maxLength": 200}
VERSION_CREATE = {
    "type": "object", "required": ["key"],
    "properties": {"key": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]{0,62}$"}, "name": NAME},
    "additionalProperties": False,
}
VERSION_PATCH = {
    "type": "object",
    "properties": {"data": {**OBJECT, "description": "Content fields, checked like a PATCH; main is untouched."},
                   "name": NAME},
    "additionalProperties": False,
}
COMPARE = {
    "type": "object", "required": ["main", "version", "changes"],
    "properties": {"main": ITEM, "version": CONTENT,
                   "changes": {"type": "array", "items": {"type": "string"},
                               "description": "Fields whose values differ between main and the version."}},
}
PROMOTE_BODY = {
    "type": "object",
    "properties": {"fields": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_PROMOTE_FIELDS,
                              "description": "Only these of the version's changes (default: all)."}},
    "additionalProperties": False,
}
PIN = {
    "type": "object", "required": ["field", "pinnedBy", "reason", "createdAt", "expiresAt"],
    "properties": {
        "field": {"type": "string"},
        "pinnedBy": {"type": "object", "required": ["kind", "id"],
                     "properties": {"kind": {"enum": ["user", "api_key", "release", "version"]},
                                    "id": {"type": "string"}}},
        "reason": NULLABLE_STRING, "createdAt": {"type": "string"}, "expiresAt": NULLABLE_STRING,
    },
}
PIN_BODY = {
    "type": "object", "required": ["field"],
    "properties": {"field": {"type": "string"}, "reason": {"type": ["string", "null"], "maxLength": 500},
                   "expiresAt": {"type": ["string", "null"], "format": "date-time"}},
    "additionalProperties": False,
}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


REVISION_PARAMS = [
    _query("limit", {"type": "integer", "minimum": 1, "maximum": 200}, "Page size (default 25)."),
    _query("offset", {"type": "integer", "minimum": 0}, "Revisions to skip."),
    _query("page", {"type": "integer", "minimum": 1}, "1-indexed page (when no offset)."),
    _query("staged", {"enum": ["true", "false"]}, "Only staged (true) or committed (false) revisions."),
]


def optional_body(operations: dict[str, dict[str, Any]], method: str) -> dict[str, dict[str, Any]]:
    """``operations`` with ``method``'s request body marked optional (an empty POST is fine)."""
    operations[method]["requestBody"]["required"] = False
    return operations
