"""OpenAPI schemas of the utils routes (request bodies and the ``data`` of answers)."""

from __future__ import annotations

from typing import Any

from plugins.utils.jsonata_runner import MAX_EXPRESSION_CHARS
from plugins.utils.templates import MAX_TEMPLATE_CHARS

HEALTH: dict[str, Any] = {
    "type": "object",
    "required": ["status", "checks", "version", "runtime"],
    "properties": {
        "status": {"type": "string", "enum": ["ok", "error"]},
        "checks": {
            "type": "object",
            "required": ["database", "cache", "storage", "search", "queue"],
            "additionalProperties": {"type": "string"},
            "description": '"ok", or "error: <short reason>" (only in the 503 answer\'s extensions.health).',
        },
        "version": {"type": "string"},
        "runtime": {
            "type": "object",
            "required": ["python", "platform", "pid", "uptimeSeconds", "plugins", "checkMs"],
            "properties": {
                "python": {"type": "string"},
                "platform": {"type": "string"},
                "pid": {"type": "integer"},
                "uptimeSeconds": {"type": "number", "minimum": 0},
                "plugins": {"type": "array", "items": {"type": "string"}},
                "checkMs": {"type": "object", "additionalProperties": {"type": "number"}},
                "checkDetails": {"type": "object", "additionalProperties": {"type": "string"},
                                 "description": "What a check said beyond ok, e.g. the queue's pending count."},
            },
        },
    },
}

VERSION: dict[str, Any] = {
    "type": "object",
    "required": ["name", "version", "apiVersion", "python"],
    "properties": {"name": {"type": "string", "const": "svc"}, "version": {"type": "string"},
                   "apiVersion": {"type": "string"}, "python": {"type": "string"}},
}

RENDER_BODY: dict[str, Any] = {
    "type": "object",
    "required": ["template", "data"],
    "additionalProperties": False,
    "properties": {
        "template": {"type": "string", "maxLength": MAX_TEMPLATE_CHARS,
                     "description": "Text with {{ expression }} output: variables, a.b, a[0], constants and "
                                    "the filters upper, lower, title, capitalize, trim, default, join, "
                                    "length, count, truncate, first, last. No {% statements %} or calls."},
        "data": {"type": "object", "additionalProperties": True, "description": "The variables of the template."},
        "escape": {"type": "boolean", "default": True, "description": "HTML-escape the output expressions."},
    },
}
RENDER_DATA: dict[str, Any] = {"type": "object", "required": ["output"],
                               "properties": {"output": {"type": "string"}}}

JSONATA_BODY: dict[str, Any] = {
    "type": "object",
    "required": ["expression"],
    "additionalProperties": False,
    "properties": {
        "expression": {"type": "string", "maxLength": MAX_EXPRESSION_CHARS},
        "data": {"description": "The input document (any JSON value)."},
    },
}
JSONATA_DATA: dict[str, Any] = {"type": "object", "required": ["result"],
                                "properties": {"result": {"description": "Any JSON value; null for undefined."}}}

METRICS_OPERATION: dict[str, Any] = {
    "summary": "Prometheus metrics in the text exposition format",
    "description": ("With SVC_METRICS_TOKEN set, `Authorization: Bearer <token>` is needed (401 otherwise). "
                    "Without it, anonymous scrapes are served only where SVC_METRICS_PUBLIC is on or "
                    "SVC_ENV=development; in production otherwise the route is off (404 NOT_FOUND)."),
    "responses": {"200": {"description": "Metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}},
    "security": [{}, {"metricsToken": []}],
}

METRICS_TOKEN_SCHEME: dict[str, Any] = {
    "type": "http", "scheme": "bearer",
    "description": "The value of SVC_METRICS_TOKEN (only when it is set).",
}
