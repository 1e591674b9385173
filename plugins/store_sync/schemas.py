"""OpenAPI pieces of store sync."""

from __future__ import annotations

from typing import Any

from plugins.store_sync.bodies import MAX_COLLECTIONS, STATUSES, TARGETS

_NAMES = {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_COLLECTIONS}
_CREDENTIALS = {
    "oneOf": [
        {"type": "object", "description": "docstore: a service-account key (extra keys allowed)",
         "required": ["project_id", "client_email", "private_key"],
         "properties": {"project_id": {"type": "string"}, "client_email": {"type": "string"},
                        "private_key": {"type": "string"}, "private_key_id": {"type": "string"},
                        "token_uri": {"type": "string"}}},
        {"type": "object", "description": "rtdb", "required": ["databaseUrl", "secret"], "additionalProperties": False,
         "properties": {"databaseUrl": {"type": "string"}, "secret": {"type": "string"}}},
    ],
    "description": "Write-only; sealed at rest; never returned",
}
PIPELINE: dict[str, Any] = {
    "type": "object",
    "required": ["id", "name", "target", "status", "collections", "targetPath", "syncOnCreate", "syncOnUpdate",
                 "syncOnDelete", "lastSyncAt", "lastSyncItemCount"],
    "properties": {
        "id": {"type": "string"}, "name": {"type": "string"}, "target": {"enum": list(TARGETS)},
        "status": {"enum": list(STATUSES)}, "projectId": {"type": ["string", "null"]}, "collections": _NAMES,
        "targetPath": {"type": "string"}, "syncOnCreate": {"type": "boolean"}, "syncOnUpdate": {"type": "boolean"},
        "syncOnDelete": {"type": "boolean"}, "role": {"type": "string", "description": "The role items are read as"},
        "hasCredentials": {"type": "boolean"}, "lastSyncAt": {"type": ["string", "null"], "format": "date-time"},
        "lastSyncItemCount": {"type": ["integer", "null"]}, "lastError": {"type": ["string", "null"]},
        "backfillPending": {"type": "boolean"},
        "createdAt": {"type": "string", "format": "date-time"}, "updatedAt": {"type": "string", "format": "date-time"},
    },
}
_WRITABLE = {
    "name": {"type": "string", "maxLength": 100}, "credentials": _CREDENTIALS,
    "projectId": {"type": ["string", "null"]}, "collections": _NAMES,
    "targetPath": {"type": "string", "description": "'/'-separated; placeholders {collection} and {id}"},
    "syncOnCreate": {"type": "boolean"}, "syncOnUpdate": {"type": "boolean"}, "syncOnDelete": {"type": "boolean"},
    "role": {"type": "string", "description": "A role id, or public (default), subscriber, admin"},
}
PIPELINE_BODY: dict[str, Any] = {
    "type": "object", "required": ["name", "target", "credentials", "collections"], "additionalProperties": False,
    "properties": {**_WRITABLE, "target": {"enum": list(TARGETS)}},
}
PIPELINE_PATCH: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {**_WRITABLE, "status": {"enum": list(STATUSES)}},
}
BACKFILL_BODY: dict[str, Any] = {"type": "object", "properties": {"restart": {"type": "boolean"}}}
BACKFILL: dict[str, Any] = {
    "type": "object", "required": ["scanned", "pushed", "failed", "truncated"],
    "properties": {"scanned": {"type": "integer"}, "pushed": {"type": "integer"}, "failed": {"type": "integer"},
                   "truncated": {"type": "boolean", "description": "Call again to go on where it stopped"}},
}
LOG_ENTRY: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "kind": {"enum": ["sync", "backfill"]}, "status": {"enum": ["ok", "failed"]},
                   "attempt": {"type": "integer"}, "pushed": {"type": "integer"}, "failed": {"type": "integer"},
                   "skipped": {"type": "integer"}, "error": {"type": ["string", "null"]},
                   "durationMs": {"type": "integer"}, "firstEventId": {"type": ["string", "null"]},
                   "lastEventId": {"type": ["string", "null"]}, "attemptedAt": {"type": "string", "format": "date-time"}},
}

DEAD_LETTER: dict[str, Any] = {"type": "object", "properties": {
    "id": {"type": "string"}, "pipelineId": {"type": "string"},
    "status": {"type": "string", "enum": ["pending", "replayed"]},
    "items": {"type": "array", "items": {"type": "object", "properties": {
        "collection": {"type": "string"}, "itemId": {"type": "string"}, "event": {"type": "string"}}}},
    "eventCount": {"type": "integer"}, "firstEventId": {"type": ["string", "null"]},
    "lastEventId": {"type": ["string", "null"]}, "attempts": {"type": "integer"}, "error": {"type": ["string", "null"]},
    "createdAt": {"type": "string"}, "updatedAt": {"type": "string"}, "replayedAt": {"type": ["string", "null"]}}}
