"""OpenAPI schemas of the access routes, as strict as the services (schemathesis holds us to
both directions: what the schema allows must not 500, what it forbids must be refused)."""

from __future__ import annotations

from typing import Any

from kernel.policy.access import KERNEL_ACTIONS
from plugins.access.common import COLLECTION_PATTERN, ID_PATTERN, MAX_KEYS, NAME_MAX, NAME_PATTERN
from plugins.access.crud.teams import MAX_MEMBERS
from plugins.access.rules.conditions import MAX_FIELDS

# The kernel's actions; ``with_actions`` gives a schema the enabled plugins' too (routes.py).
ACTIONS = [a.name for a in KERNEL_ACTIONS]
NULLABLE_STRING = {"type": ["string", "null"]}
ID = {"type": "string", "pattern": ID_PATTERN}
NAME = {"type": "string", "minLength": 1, "maxLength": NAME_MAX, "pattern": NAME_PATTERN}
IDS = {"type": "array", "minItems": 1, "maxItems": MAX_KEYS, "items": ID}


def _obj(properties: dict[str, Any], required: list[str] | None = None, *, strict: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    if strict:
        out["additionalProperties"] = False
    return out


# ---------------------------------------------------------------------------- records

ROLE = _obj({"id": {"type": "string"}, "name": {"type": "string"}, "parentId": NULLABLE_STRING,
             "adminAccess": {"type": "boolean"}, "systemKey": NULLABLE_STRING},
            ["id", "name", "parentId", "adminAccess", "systemKey"], strict=False)
ATTACHMENT = _obj({"id": {"type": "string"}, "policyId": {"type": "string"}, "roleId": NULLABLE_STRING,
                   "userId": NULLABLE_STRING, "teamId": NULLABLE_STRING},
                  ["id", "policyId", "roleId", "userId", "teamId"], strict=False)
POLICY = _obj({"id": {"type": "string"}, "name": {"type": "string"}, "adminAccess": {"type": "boolean"},
               "systemKey": NULLABLE_STRING, "attachments": {"type": "array", "items": ATTACHMENT}},
              ["id", "name", "adminAccess", "systemKey", "attachments"], strict=False)
TEAM = _obj({"id": {"type": "string"}, "name": {"type": "string"},
             "members": {"type": "array", "items": {"type": "string"}}}, ["id", "name", "members"], strict=False)
RULE = _obj({"id": {"type": "string"}, "policyId": {"type": "string"}, "collection": {"type": "string"},
             "action": {"type": "string", "enum": ACTIONS},
             "fields": {"type": "array", "items": {"type": "string"}},
             "conditions": {"type": ["object", "null"], "additionalProperties": True}},
            ["id", "policyId", "collection", "action", "fields", "conditions"], strict=False)
DECISION = _obj({"allowed": {"type": "boolean"}, "fields": {"type": "array", "items": {"type": "string"}},
                 "conditions": {"type": ["object", "null"], "additionalProperties": True}}, ["allowed", "fields", "conditions"], strict=False)
EFFECTIVE = _obj({
    "admin": {"type": "boolean"}, "roleId": NULLABLE_STRING,
    "roles": {"type": "array", "items": {"type": "string"}},
    "teams": {"type": "array", "items": {"type": "string"}},
    "policies": {"type": "array", "items": {"type": "string"}},
    "permissions": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": DECISION}},
}, ["admin", "roleId", "roles", "teams", "policies", "permissions"], strict=False)
GRANT = _obj({"collection": {"type": "string"}}, ["collection"], strict=False)
# -- people: POST /permissions/check with `explain: true` also answers what decided
EXPLAINED_RULE = _obj({"id": NULLABLE_STRING, "policyId": NULLABLE_STRING, "collection": {"type": "string"},
                       "action": {"type": "string"}, "fields": {"type": "array", "items": {"type": "string"}},
                       "conditions": {"type": ["object", "null"], "additionalProperties": True}},
                      ["id", "policyId", "collection", "action", "fields", "conditions"], strict=False)
EXPLAINED = _obj({**DECISION["properties"], "explain": _obj({
    "admin": {"type": "boolean"}, "roleId": NULLABLE_STRING,
    "roles": {"type": "array", "items": {"type": "string"}}, "teams": {"type": "array", "items": {"type": "string"}},
    "policies": {"type": "array", "items": {"type": "string"}},
    "rules": {"type": "array", "items": EXPLAINED_RULE}},
    ["admin", "roleId", "roles", "teams", "policies", "rules"], strict=False)}, ["allowed", "fields", "conditions"],
    strict=False)

# ---------------------------------------------------------------------------- bodies

COLLECTION = {"type": "string", "pattern": COLLECTION_PATTERN}
ROLE_CREATE = _obj({"name": NAME, "parentId": {"type": ["string", "null"], "pattern": ID_PATTERN},
                    "adminAccess": {"type": ["boolean", "null"]}}, ["name"])
ROLE_PATCH = _obj({"name": NAME, "parentId": {"type": ["string", "null"], "pattern": ID_PATTERN},
                   "adminAccess": {"type": "boolean"}})
POLICY_CREATE = _obj({"name": NAME, "adminAccess": {"type": ["boolean", "null"]}}, ["name"])
POLICY_PATCH = _obj({"name": NAME, "adminAccess": {"type": "boolean"}})
TEAM_MEMBERS = {"type": "array", "maxItems": MAX_MEMBERS, "items": ID}
TEAM_CREATE = _obj({"name": NAME, "members": {**TEAM_MEMBERS, "type": ["array", "null"]}}, ["name"])
TEAM_PATCH = _obj({"name": NAME, "members": TEAM_MEMBERS})
RULE_CREATE = _obj({
    "collection": {"type": "string", "anyOf": [{"pattern": COLLECTION_PATTERN}, {"const": "*"}]},
    "action": {"type": "string", "enum": ACTIONS},
    "fields": {"type": ["array", "null"], "maxItems": MAX_FIELDS,
               "items": {"type": "string", "pattern": r"^(\*|[A-Za-z_][A-Za-z0-9_]{0,63})$"}},
    "conditions": {"type": ["object", "null"], "additionalProperties": True, "description": (
        "A filter tree: field names or dotted JSON paths mapping to operator objects "
        "(_eq _neq _lt _lte _gt _gte _in _nin _null _nnull _contains _icontains _starts_with _ends_with "
        "_between _json_contains _has_key _has_any_keys _has_all_keys), combined with _and/_or lists; "
        "values may be $CURRENT_USER, $CURRENT_ROLE, $NOW, or $CURRENT_ROLES for _in/_nin.")},
}, ["collection", "action"])
ROLE_RULE_CREATE = _obj(dict(RULE_CREATE["properties"]), ["collection"])  # action: read when absent
ATTACH = {"oneOf": [_obj({"roleId": ID}, ["roleId"]), _obj({"userId": ID}, ["userId"]),
                    _obj({"teamId": ID}, ["teamId"])]}
CHECK = _obj({"collection": COLLECTION, "action": {"type": "string", "enum": ACTIONS},
              "userId": {"type": ["string", "null"], "pattern": ID_PATTERN},
              # -- people: the answer's `explain` (EXPLAINED)
              "explain": {"type": "boolean"}}, ["collection", "action"])
GRANT_BODY = _obj({"collection": COLLECTION}, ["collection"])


def with_actions(schema: dict[str, Any], actions: tuple[str, ...]) -> dict[str, Any]:
    """``schema`` (a rule, its body, a check) with ``action`` one of ``actions``: the kernel's and
    those the enabled plugins register (``kernel.access.actions``)."""
    properties = dict(schema["properties"])
    properties["action"] = {**properties["action"], "enum": list(actions)}
    return {**schema, "properties": properties}


def bulk_patch(data: dict[str, Any]) -> dict[str, Any]:
    """Directus's bulk update: ``{ keys: [ids], data: {...} }``."""
    return _obj({"keys": IDS, "data": data}, ["keys", "data"])


BULK_DELETE = {"anyOf": [IDS, _obj({"keys": IDS}, ["keys"])]}

PAGE_PARAMS = [
    {"name": "limit", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
    {"name": "offset", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 0, "maximum": 2**31}},
    {"name": "page", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": 10_000_000}},
]
