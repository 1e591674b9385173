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
