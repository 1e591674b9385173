"""OpenAPI pieces of the releases plugin."""

from __future__ import annotations

from typing import Any

from plugins.releases.bodies import MAX_ITEMS, MAX_WINDOWS, MODES, STATUSES

WINDOW: dict[str, Any] = {
    "type": ["object", "null"], "required": ["windows"], "additionalProperties": False,
    "properties": {"windows": {"type": "array", "minItems": 1, "maxItems": MAX_WINDOWS, "items": {
        "type": "object", "required": ["dow", "start", "end"], "additionalProperties": False,
        "properties": {"dow": {"type": "integer", "minimum": 0, "maximum": 6, "description": "0 is Sunday"},
                       "start": {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"},
                       "end": {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$"}}}}},
    "description": "Local times in the site's time zone (setting `releases.timezone`, default UTC).",
}
ENTRY: dict[str, Any] = {
    "type": "object", "required": ["collection", "itemId", "targetStatus"],
    "properties": {"collection": {"type": "string"}, "itemId": {"type": "string"},
                   "targetStatus": {"type": "string"}, "revisionId": {"type": ["string", "null"]},
                   "versionKey": {"type": ["string", "null"]}},
}
ENTRY_RECORD: dict[str, Any] = {
    "type": "object", "properties": {**ENTRY["properties"], "outcome": {"type": ["string", "null"]},
                                     "reason": {"type": ["string", "null"]},
                                     "previousRevisionId": {"type": ["string", "null"]}},
}
REMOVAL: dict[str, Any] = {"type": "object", "required": ["collection", "itemId"],
                           "properties": {"collection": {"type": "string"}, "itemId": {"type": "string"}}}
_BODY_PROPS: dict[str, Any] = {
    "name": {"type": "string", "maxLength": 200},
    "atomicityMode": {"type": "string", "enum": list(MODES)},
    "publishAt": {"type": ["string", "null"], "format": "date-time", "description": "Not in the past"},
    "maintenanceWindow": WINDOW,
    "addItems": {"type": "array", "maxItems": MAX_ITEMS, "items": ENTRY},
}
CREATE_BODY: dict[str, Any] = {"type": "object", "required": ["name"], "properties": _BODY_PROPS}
PATCH_BODY: dict[str, Any] = {"type": "object", "properties": {
    **_BODY_PROPS, "removeItems": {"type": "array", "maxItems": MAX_ITEMS, "items": REMOVAL}}}
RELEASE: dict[str, Any] = {
    "type": "object", "required": ["id", "name", "atomicityMode", "status"],
    "properties": {
        "id": {"type": "string"}, "name": {"type": "string"}, "atomicityMode": {"type": "string", "enum": list(MODES)},
        "status": {"type": "string", "enum": list(STATUSES)}, "publishAt": {"type": ["string", "null"]},
        "maintenanceWindow": {"type": ["object", "null"], "additionalProperties": True}, "createdBy": {"type": ["string", "null"]},
        "createdAt": {"type": "string"}, "updatedAt": {"type": "string"},
        "publishedAt": {"type": ["string", "null"]}, "nextRunAt": {"type": ["string", "null"]},
        "lastError": {"type": ["string", "null"]}, "itemCount": {"type": "integer"},
        "rolledBackAt": {"type": ["string", "null"]},
    },
}
RELEASE_DETAIL: dict[str, Any] = {**RELEASE, "properties": {**RELEASE["properties"],
                                                            "items": {"type": "array", "items": ENTRY_RECORD}}}
OUTCOME: dict[str, Any] = {"type": "object", "required": ["collection", "itemId", "outcome"], "properties": {
    "collection": {"type": "string"}, "itemId": {"type": "string"},
    "outcome": {"type": "string", "enum": ["published", "skipped", "failed", "rolled_back"]},
    "reason": {"type": "string"}, "revisionId": {"type": ["string", "null"]}}}
ROLLBACK_BODY: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": {
    "force": {"type": "boolean", "description": "Also return items edited after the publish (default: they block "
                                                "the rollback with CHANGED_SINCE_PUBLISH)"}}}

PUBLISH_RESULT: dict[str, Any] = {"type": "object", "required": ["release", "status", "outcomes"], "properties": {
    "release": RELEASE_DETAIL, "status": {"type": "string", "enum": list(STATUSES)},
    "outcomes": {"type": "array", "items": OUTCOME}}}
LIST_PARAMS = [
    {"name": "status", "in": "query", "required": False, "schema": {"type": "string", "enum": list(STATUSES)}},
    {"name": "page", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1}},
    {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
]
