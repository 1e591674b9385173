"""OpenAPI shapes of /flows."""

from __future__ import annotations

from typing import Any

_OBJ: dict[str, Any] = {"type": "object", "additionalProperties": True}
NODE = {"type": "object", "required": ["id", "operation"], "properties": {
    "id": {"type": "string"}, "operation": {"type": "string"}, "options": _OBJ,
    "position": {"type": "object", "description": "Where the studio draws the node",
                 "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}}}
EDGE = {"type": "object", "required": ["from", "to"], "properties": {
    "from": {"type": "string"}, "to": {"type": "string"}, "when": {"type": "string", "enum": ["true", "false"]}}}
GRAPH = {"type": "object", "properties": {"nodes": {"type": "array", "items": NODE},
                                          "edges": {"type": "array", "items": EDGE}}}
TRIGGER_OPTIONS = {"type": "object", "properties": {
    "cron": {"type": "string"}, "collection": {}, "action": {}, "role": {"type": "string"},
    "token": {"type": "string", "writeOnly": True}}}
FLOW = {"type": "object", "properties": {
    "id": {"type": "string"}, "name": {"type": "string"}, "status": {"type": "string", "enum": ["active", "draft"]},
    "trigger": {"type": "string", "enum": ["manual", "event", "schedule", "webhook"]},
    "triggerOptions": TRIGGER_OPTIONS, "graph": GRAPH, "next_run_at": {"type": ["string", "null"]},
    "hasToken": {"type": "boolean"}, "token": {"type": "string", "description": "Only in the create answer"},
    "createdAt": {"type": "string"}, "updatedAt": {"type": "string"}}}
FLOW_BODY = {"type": "object", "required": ["name", "trigger"], "properties": {
    "name": {"type": "string"}, "status": {"type": "string", "enum": ["active", "draft"]},
    "trigger": {"type": "string", "enum": ["manual", "event", "schedule", "webhook"]},
    "triggerOptions": TRIGGER_OPTIONS, "graph": GRAPH}}
FLOW_PATCH = {**FLOW_BODY, "required": []}
OPTION = {"type": "object", "properties": {
    "type": {"type": "string", "enum": ["string", "number", "boolean", "enum", "json", "template", "collection", "field"]},
    "required": {"type": "boolean"}, "default": {}, "choices": {"type": "array", "items": {}}, "label": {"type": "string"},
    "description": {"type": "string"}, "many": {"type": "boolean"}, "collectionOption": {"type": "string"},
    "also": {"type": "array", "items": {"type": "string"}, "description": "Other types a value may have"},
    "declared": {"type": "boolean", "description": "false: an untyped free-text hint"}}}
OPERATION = {"type": "object", "properties": {
    "key": {"type": "string"}, "options": {**_OBJ, "description": "Each option's description (hints)"},
    "optionSchema": {"type": "object", "additionalProperties": OPTION}, "description": {"type": "string"},
    "retrySafe": {"type": "boolean"}, "branches": {"type": "boolean"}}}
RUN = {"type": "object", "properties": {"runId": {"type": "string"}, "status": {"type": "string"},
                                        "startedAt": {"type": "string"}, "finishedAt": {"type": ["string", "null"]}}}
RUN_DETAIL = {"type": "object", "properties": {
    **RUN["properties"], "input": {}, "error": {"type": ["object", "null"], "additionalProperties": True},
    "steps": {"type": "array", "items": {"type": "object", "properties": {
        "nodeId": {"type": "string"}, "operation": {"type": "string"}, "status": {"type": "string"},
        "input": {}, "output": {}}}}}}

# The input of a run: any JSON value, or none (the run sees null).
ANY_INPUT: dict[str, Any] = {"description": "The run's input: any JSON value; absent, the run sees null"}
