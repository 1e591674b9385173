"""JSON schemas of schema bundles and the config manifest, for the OpenAPI document."""

from __future__ import annotations

from typing import Any

from plugins.schema.bundles.bundles import MAX_BUNDLE_FIELDS, MAX_BUNDLE_RELATIONS
from plugins.schema.collections.collection_meta import DIRECTUS_META_KEYS
from plugins.schema.config.manifest import CAPS, EXPORT_SCOPES, VERSION
from plugins.schema.config.manifest_apply import MODES
from plugins.schema.fieldtypes.types import FIELD_TYPES
from plugins.schema.openapi_schemas import (
    COLLECTION_META,
    FIELD_CREATE,
    FIELD_EDITABLE,
    META_PROPERTIES,
    NAME,
    NULLABLE_STRING,
    RELATION_BODY,
    RELATION_PROPERTIES,
)

RISK = {"enum": ["low", "medium", "high"]}
COUNTS = {"type": "object", "required": ["create", "update", "delete", "unchanged"],
          "properties": {k: {"type": "integer"} for k in ("create", "update", "delete", "unchanged")}}

FIELD_ENTRY: dict[str, Any] = {
    "type": "object", "required": ["field", "type", *FIELD_EDITABLE],
    "properties": {"field": {"type": "string"}, "type": {"enum": list(FIELD_TYPES)}, **FIELD_EDITABLE},
}
RELATION_ENTRY = {"type": "object", "required": list(RELATION_PROPERTIES), "properties": RELATION_PROPERTIES}
BUNDLE = {
    "type": "object", "required": ["collection", "fields", "relations"],
    "properties": {
        "collection": {"type": "object", "required": ["name", "meta"],
                       "properties": {"name": {"type": "string"}, "meta": COLLECTION_META}},
        "fields": {"type": "array", "items": FIELD_ENTRY},
        "relations": {"type": "array", "items": RELATION_ENTRY},
    },
}
BUNDLE_BODY = {
    "type": "object",
    "description": "A bundle as GET /collections/{name}/schema gives it. Fields and relations are complete: "
                   "the collection's other fields and the other relations touching it are deleted.",
    "properties": {
        "collection": {"type": "object", "properties": {"name": NAME, "collection": NAME, **META_PROPERTIES,
                                                        "meta": {"type": ["object", "null"], "additionalProperties": True}},
                       "additionalProperties": False},
        "fields": {"type": "array", "maxItems": MAX_BUNDLE_FIELDS, "items": FIELD_CREATE},
        "relations": {"type": "array", "maxItems": MAX_BUNDLE_RELATIONS, "items": RELATION_BODY},
    },
    "additionalProperties": False,
}

CHANGE = {"type": "object", "required": ["collection"], "properties": {
    "collection": {"type": "string"}, "field": {"type": "string"},
    "changes": {"type": "object", "description": "{ key: { from, to } }",
                "additionalProperties": {"type": "object", "required": ["from", "to"], "properties": {"from": {}, "to": {}}}},
}}
CHANGE_LIST = {"type": "array", "items": CHANGE}
CHANGE_LISTS = {"type": "object", "required": ["create", "update", "delete", "unchanged"],
                "properties": {k: CHANGE_LIST for k in ("create", "update", "delete", "unchanged")}}
BUNDLE_DIFF = {"type": "object", "required": ["collections", "fields", "relations", "risk"],
               "properties": {"collections": CHANGE_LISTS, "fields": CHANGE_LISTS, "relations": CHANGE_LISTS,
                              "risk": RISK}}
BUNDLE_APPLIED = {
    "type": "object", "required": ["collection", "applied", "diff"],
    "properties": {"collection": {"type": "string"}, "diff": BUNDLE_DIFF, "applied": {
        "type": "object", "required": ["created", "updated", "deleted", "unchanged"],
        "properties": {k: {"type": "integer"} for k in ("created", "updated", "deleted", "unchanged")}}},
}

_FLAT_META = {k: v for k, v in META_PROPERTIES.items() if k not in ("displayName", "versioning")}
COLLECTION_ENTRY = {
    "type": "object", "required": ["name", "label", "versioning"],
    "properties": {"name": NAME, "label": NULLABLE_STRING, "versioning": {"type": "boolean"}, **_FLAT_META,
                   **{k: {"description": "Directus UI meta, kept as given"} for k in sorted(DIRECTUS_META_KEYS)}},
    "additionalProperties": False,
}
MANIFEST_FIELD = {**FIELD_ENTRY, "required": ["collection", "field", "type"],
                  "properties": {**FIELD_CREATE["properties"], "collection": NAME}, "additionalProperties": False}
SETTING = {"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}, "value": {}}}
WEBHOOK = {"type": "object", "additionalProperties": True,
           "description": "A change-feed webhook subscription, without its secret"}


def _manifest(body: bool) -> dict[str, Any]:
    def listed(name: str, items: dict[str, Any]) -> dict[str, Any]:
        return {"type": "array", "items": items, **({"maxItems": CAPS[name]} if body else {})}

    return {
        "type": "object",
        "required": ["version"] if body else ["version", "exportedAt", "collections", "fields", "relations",
                                               "webhooks", "settings", "managedScopes"],
        "properties": {
            "version": {"enum": [VERSION]} if body else {"type": "string"},
            "exportedAt": {"type": ["string", "null"], "format": "date-time"},
            "collections": listed("collections", COLLECTION_ENTRY if body else {"type": "object", "additionalProperties": True}),
            "fields": listed("fields", MANIFEST_FIELD if body else {"type": "object", "additionalProperties": True}),
            "relations": listed("relations", RELATION_BODY if body else RELATION_ENTRY),
            "webhooks": listed("webhooks", WEBHOOK), "settings": listed("settings", SETTING),
            "managedScopes": listed("managedScopes", {"type": "string", "description":
                                    "schema, settings, webhooks or collection:<name>"}),
        },
        **({"additionalProperties": False} if body else {}),
    }


MANIFEST = _manifest(body=False)
MANIFEST_BODY = _manifest(body=True)
PROBLEM = {"type": "object", "required": ["code", "message", "path"], "properties": {
    "code": {"type": "string"}, "message": {"type": "string"},
    "path": {"type": "array", "items": {"type": ["string", "integer"]}}}}
IMPORT_DIFF = {
    "type": ["object", "null"],
    "required": ["collections", "fields", "relations", "settings", "webhooks", "risk", "destructive", "changes"],
    "properties": {**{k: COUNTS for k in ("collections", "fields", "relations", "settings", "webhooks")},
                   "risk": RISK, "destructive": {"type": "array", "items": {"type": "object", "additionalProperties": True}},
                   "changes": {"type": "object", "additionalProperties": True}},
}
IMPORT_RESULT = {
    "type": "object", "required": ["valid", "errors", "diff"],
    "properties": {"valid": {"type": "boolean"}, "errors": {"type": "array", "items": PROBLEM},
                   "diff": IMPORT_DIFF, "applied": {
                       "type": "object", "required": ["created", "updated", "deleted"],
                       "properties": {k: {"type": "integer"} for k in ("created", "updated", "deleted")}}},
}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


SCOPE_PARAM = _query("scope", {"enum": list(EXPORT_SCOPES)}, "What to export (default all).")
IMPORT_PARAMS = [
    _query("mode", {"enum": list(MODES)}, "What happens to what the manifest leaves out (default merge)."),
    _query("dryRun", {"type": "boolean"}, "Validate and diff only; write nothing."),
    _query("allowDestructive", {"type": "boolean"}, "Apply type changes, onDelete widening and drops of "
           "collections or fields that hold data."),
]
