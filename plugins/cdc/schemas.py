"""OpenAPI pieces of the change feed."""

from __future__ import annotations

from typing import Any

from plugins.cdc.feed import DEFAULT_LIMIT, MAX_LIMIT, MAX_WAIT, OPERATIONS

EVENT: dict[str, Any] = {
    "type": "object",
    "required": ["id", "type", "collection", "occurredAt"],
    "description": "A thin event: identifiers, the operation and the changed field names; never a value.",
    "properties": {
        "id": {"type": "string"},
        "type": {"type": "string", "description": "`<resource>.<operation>`, e.g. `items.update`"},
        "collection": {"type": ["string", "null"]},
        "itemId": {"type": "string"},
        "fields": {"type": "array", "items": {"type": "string"}},
        "occurredAt": {"type": "string", "format": "date-time"},
    },
}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


EVENTS_PARAMS = [
    _query("cursor", {"type": "string"}, "Read after this position (a `meta.nextCursor`); without it, from the "
           "oldest retained event. Malformed: 400; past retention: 410 CURSOR_EXPIRED with "
           "`extensions.earliestCursor`."),
    _query("collections", {"type": "string"}, "Comma list of collections whose events to return."),
    _query("operations", {"type": "string"}, f"Comma list of {', '.join(OPERATIONS)}: `create` returns "
           "`items.create`, `collections.create`, `fields.create` and `relations.create`, and so on."),
    _query("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
           "Events per page."),
    _query("wait", {"type": "number", "minimum": 0, "maximum": MAX_WAIT, "default": 0},
           "Long poll: seconds to wait for a first event; the answer comes as soon as one is committed, "
           "or empty when the wait ends."),
]

EVENTS_META = {
    "type": "object", "required": ["nextCursor", "hasMore"],
    "properties": {"nextCursor": {"type": "string", "description": "Never null: the tail when the page is empty"},
                   "hasMore": {"type": "boolean"}},
}

_NAMES = {"type": "array", "items": {"type": "string"}}
SUBSCRIPTION: dict[str, Any] = {
    "type": "object",
    "required": ["id", "name", "kind", "status", "collections", "operations", "cursor", "lag"],
    "properties": {
        "id": {"type": "string"}, "name": {"type": "string"}, "kind": {"enum": ["pull", "webhook"]},
        "status": {"enum": ["active", "paused", "dead", "stale"]}, "statusReason": {"type": ["string", "null"]},
        "collections": _NAMES, "operations": _NAMES,
        "cursor": {"type": "string", "description": "Its position: a pull's last ack, a webhook's last delivery"},
        "lag": {"type": "object", "properties": {
            "events": {"type": "integer", "description": "Events (matching the filters) after the position"},
            "oldestAgeSeconds": {"type": ["number", "null"], "description": "Age of the oldest of them"}}},
        "url": {"type": "string"}, "hasSecret": {"type": "boolean"},
        "attempts": {"type": "integer"}, "lastError": {"type": ["string", "null"]},
        "nextRetryAt": {"type": ["string", "null"], "format": "date-time"},
        "createdAt": {"type": "string", "format": "date-time"}, "updatedAt": {"type": "string", "format": "date-time"},
    },
}
SUBSCRIPTION_BODY: dict[str, Any] = {
    "type": "object", "required": ["name", "kind"], "additionalProperties": False,
    "properties": {"name": {"type": "string", "maxLength": 100}, "kind": {"enum": ["pull", "webhook"]},
                   "url": {"type": "string", "description": "webhook: http(s), never the unspecified address"},
                   "secret": {"type": "string", "minLength": 16, "maxLength": 512,
                              "description": "webhook: signs deliveries; write-only"},
                   "collections": _NAMES, "operations": {"type": "array", "items": {"enum": list(OPERATIONS)}}},
}
SUBSCRIPTION_PATCH: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {**{k: v for k, v in SUBSCRIPTION_BODY["properties"].items() if k != "kind"},
                   "status": {"enum": ["active", "paused"], "description": "pause or resume"}},
}
ACK_BODY: dict[str, Any] = {"type": "object", "required": ["cursor"], "properties": {"cursor": {"type": "string"}}}
REPLAY_BODY: dict[str, Any] = {
    "type": "object", "description": "Exactly one of the two",
    "properties": {"cursor": {"type": "string"}, "occurred_after": {"type": "string", "format": "date-time"}},
}
DISPATCH: dict[str, Any] = {"type": "object", "properties": {"id": {"type": "string"}, "dispatched": {"type": "boolean"}}}
DELIVERY: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string", "description": "The X-Svc-Delivery of the attempt"},
                   "attempt": {"type": "integer"}, "statusCode": {"type": ["integer", "null"]},
                   "durationMs": {"type": "integer"}, "error": {"type": ["string", "null"]},
                   "events": {"type": "integer"}, "firstEventId": {"type": "string"},
                   "lastEventId": {"type": "string"}, "attemptedAt": {"type": "string", "format": "date-time"}},
}
