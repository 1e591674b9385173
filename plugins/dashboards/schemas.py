"""OpenAPI pieces of the dashboards plugin."""

from __future__ import annotations

from typing import Any

from plugins.dashboards.bodies import (
    AGGREGATES,
    GRID_MAX,
    GRID_SPAN,
    INTERVALS,
    LIMITS,
    MAX_GROUPS,
    MAX_LIMIT,
    PANEL_TYPES,
)

_TEXT = {key: {"type": "string", "minLength": 1, "maxLength": n} for key, n in LIMITS.items()}
_NULLABLE = {key: {**schema, "type": ["string", "null"]} for key, schema in _TEXT.items()}
DASHBOARD_BODY: dict[str, Any] = {
    "type": "object", "required": ["name"], "additionalProperties": False,
    "properties": {"name": _TEXT["name"], "icon": _NULLABLE["icon"], "color": _NULLABLE["color"],
                   "note": _NULLABLE["note"]}}
DASHBOARD_PATCH: dict[str, Any] = {**DASHBOARD_BODY, "required": []}
POSITION: dict[str, Any] = {
    "type": "object", "required": ["x", "y", "w", "h"], "additionalProperties": False,
    "properties": {"x": {"type": "integer", "minimum": 0, "maximum": GRID_MAX},
                   "y": {"type": "integer", "minimum": 0, "maximum": GRID_MAX},
                   "w": {"type": "integer", "minimum": 1, "maximum": GRID_SPAN},
                   "h": {"type": "integer", "minimum": 1, "maximum": GRID_SPAN}}}
_NAME = {"type": "string", "pattern": "^[A-Za-z0-9_]{1,64}$"}
PANEL_QUERY: dict[str, Any] = {
    "type": "object", "required": ["collection", "aggregate"], "additionalProperties": False,
    "properties": {
        "collection": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$"},
        "aggregate": {"type": "string", "enum": list(AGGREGATES)},
        "field": {**_NAME, "description": "Required except for count"},
        "groupBy": {"type": "array", "maxItems": MAX_GROUPS, "items": {"type": "string"}},
        "filter": {"type": "object", "additionalProperties": True, "description": "A filter as /items takes it"},
        "dateRange": {"type": "object", "required": ["field", "interval"], "additionalProperties": False,
                      "properties": {"field": _NAME, "interval": {"type": "string", "enum": list(INTERVALS)},
                                     "from": {"type": "string", "description": "ISO 8601, inclusive"},
                                     "to": {"type": "string", "description": "ISO 8601, exclusive"}}},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
    }}
PANEL_BODY: dict[str, Any] = {
    "type": "object", "required": ["name", "type", "position", "query"], "additionalProperties": False,
    "properties": {"name": _TEXT["name"], "type": {"type": "string", "enum": list(PANEL_TYPES)},
                   "position": POSITION,
                   "query": {**PANEL_QUERY, "type": ["object", "null"], "description": "null for a label"}}}
PANEL_PATCH: dict[str, Any] = {**PANEL_BODY, "required": []}
PANEL: dict[str, Any] = {"type": "object", "required": ["id", "dashboardId", "name", "type", "position"],
                         "properties": {"id": {"type": "string"}, "dashboardId": {"type": "string"},
                                        "name": {"type": "string"}, "type": {"type": "string"},
                                        "position": POSITION, "query": {"type": ["object", "null"], "additionalProperties": True},
                                        "createdAt": {"type": "string"}, "updatedAt": {"type": "string"}}}
DASHBOARD: dict[str, Any] = {"type": "object", "required": ["id", "name"], "properties": {
    "id": {"type": "string"}, "name": {"type": "string"}, "icon": {"type": ["string", "null"]},
    "color": {"type": ["string", "null"]}, "note": {"type": ["string", "null"]},
    "createdBy": {"type": ["string", "null"]}, "createdAt": {"type": "string"}, "updatedAt": {"type": "string"},
    "panelCount": {"type": "integer"}}}
DASHBOARD_DETAIL: dict[str, Any] = {**DASHBOARD, "properties": {**DASHBOARD["properties"],
                                                                "panels": {"type": "array", "items": PANEL}}}
ROW: dict[str, Any] = {"type": "object", "required": ["value"], "properties": {
    "bucket": {"type": ["string", "null"], "description": "YYYY-MM-DD, the first day of the bucket"},
    "group": {"type": "object", "additionalProperties": True}, "value": {}}}
LIST_PARAMS = [
    {"name": "page", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1}},
    {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
]
