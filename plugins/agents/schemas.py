"""OpenAPI shapes of ``/agent/...``: the bodies as the services parse them (goals.parse,
roles.create, intents.parse, constitution._problem...), and the records they answer."""

from __future__ import annotations

from typing import Any

from plugins.agents.common import BUDGET_CAPS, BUDGET_PARTS, LEVELS
from plugins.agents.goals.goals import EXECUTIONS, MAX_CHILDREN
from plugins.agents.governance.constitution import KEYS, MAX_RULES, OPERATIONS, PERIODS
from plugins.agents.governance.killswitch import SCOPES
from plugins.ai.api import APPROVAL  # the approval's answer schema, which agent-decide returns too

_STR = {"type": "string"}
_NSTR = {"type": ["string", "null"]}
_TIME = {"type": ["string", "null"], "format": "date-time"}
_NAME = {"type": "string", "pattern": "^[a-z][a-z0-9_-]{0,63}$"}
_LEVEL = {"type": "string", "enum": list(LEVELS)}
_DECISION = {"type": "string", "enum": ["approved", "rejected"]}


def _text(max_len: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_len}


def _body(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A body the service reads with ``reject_unknown``: no other keys."""
    return {"type": "object", "required": list(required), "additionalProperties": False, "properties": properties}


BUDGET = {"type": "object", "additionalProperties": False, "description": "Any of steps, tokens, writes",
          "properties": {k: {"type": "integer", "minimum": 0, "maximum": BUDGET_CAPS[k]} for k in BUDGET_PARTS}}
_COUNTS = {"type": "object", "additionalProperties": False,
           "properties": {k: {"type": "integer"} for k in BUDGET_PARTS}}

GOAL_BODY = _body({"title": _text(200), "description": {"type": "string", "maxLength": 20000},
                   "role": {"type": ["string", "null"], "maxLength": 64},
                   "execution": {"type": "string", "enum": list(EXECUTIONS)}, "budget": BUDGET}, ("title",))
DECOMPOSE_BODY = _body({"goals": {"type": "array", "minItems": 1, "maxItems": MAX_CHILDREN, "items": GOAL_BODY}},
                       ("goals",))
_NAMES = {"type": "array", "maxItems": 100, "items": _NAME}
ROLE_BODY = _body({"name": _NAME, "description": {"type": "string", "maxLength": 2000}, "skills": _NAMES,
                   "collections": _NAMES, "autonomy": _LEVEL, "budget": BUDGET}, ("name",))
ROLE_PATCH = _body({k: v for k, v in ROLE_BODY["properties"].items() if k != "name"})
PROMOTION_BODY = _body({"role": {"type": "string", "maxLength": 64}, "level": _LEVEL,
                        "reason": {"type": ["string", "null"], "maxLength": 2000}}, ("role", "level"))
DECIDE_BODY = _body({"decision": _DECISION}, ("decision",))
AGENT_DECIDE_BODY = _body({"decision": _DECISION, "goalId": _NSTR}, ("decision",))

_RULE_KEY = {"collection": {"type": "string", "minLength": 1, "maxLength": 64},
             "field": {"type": "string", "minLength": 1, "maxLength": 64},
             "role": {"type": "string", "minLength": 1, "maxLength": 64},
             "operation": {"type": "string", "enum": list(OPERATIONS)},
             "per": {"type": "string", "enum": list(PERIODS)},
             "limit": {"type": "integer", "minimum": 0, "maximum": 100000},
             "max": {"type": "integer", "minimum": 1, "maximum": 1_000_000}}


def _rule(kind: str) -> dict[str, Any]:
    needed, optional = KEYS[kind]
    return _body({"rule": {"const": kind}, "id": {"type": "string", "maxLength": 200},
                  "message": {"type": "string", "maxLength": 200},
                  **{k: _RULE_KEY[k] for k in sorted(needed | optional)}}, ("rule", *sorted(needed)))


RULE = {"oneOf": [_rule(kind) for kind in KEYS]}
_RULES = {"type": "array", "maxItems": MAX_RULES, "items": RULE}
CONSTITUTION_BODY = _body({"rules": _RULES, "note": {"type": ["string", "null"], "maxLength": 500}}, ("rules",))
COMPILE_BODY = {**_body({"id": _STR, "rules": _RULES}),
                "description": "{ id } compiles a stored version; { rules } only checks rules"}
FREEZE_BODY = _body({"scope": {"type": "string", "enum": list(SCOPES)},
                     "target": {"type": ["string", "null"], "maxLength": 64,
                                "description": "The goal id (run), intent or role; none for the site"},
                     "reason": {"type": ["string", "null"], "maxLength": 500}}, ("scope",))
LIFT_BODY = _body({"id": _STR}, ("id",))
VETO_BODY = _body({"reason": {"type": ["string", "null"], "maxLength": 500}})
RESOLVE_BODY = _body({"note": {"type": ["string", "null"], "maxLength": 2000}})
COMPILE_ONE_BODY = {**_body({"rules": _RULES}),
                    "description": "Nothing needed: the stored version's rules are compiled ('rules' is accepted "
                                   "and not used)"}
TRIGGER = {"oneOf": [
    _body({"type": {"const": "schedule"}, "everySeconds": {"type": "integer", "minimum": 60, "maximum": 366 * 86400}},
          ("type", "everySeconds")),
    _body({"type": {"const": "event"}, "collection": {"type": "string", "minLength": 1, "maxLength": 64},
           "events": {"type": "array", "minItems": 1,
                      "items": {"type": "string", "enum": ["create", "update", "delete"]}}}, ("type", "collection")),
]}
INTENT_BODY = _body({"key": {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,63}$"}, "title": _text(200),
                     "description": _text(20000), "role": {"type": ["string", "null"], "maxLength": 64},
                     "trigger": TRIGGER, "budget": {"oneOf": [BUDGET, {"type": "null"}]},
                     "status": {"type": "string", "enum": ["active", "paused"]}},
                    ("key", "title", "description", "trigger"))
INTENT_PATCH = _body({k: v for k, v in INTENT_BODY["properties"].items() if k != "key"})


def _record(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": sorted(properties), "properties": properties}


GOAL = _record({"id": _STR, "title": _STR, "description": _STR, "role": _NSTR, "status": _STR, "execution": _STR,
                "budget": _COUNTS, "used": _COUNTS, "remaining": _COUNTS, "parentId": _NSTR, "rootId": _STR,
                "intentId": _NSTR, "steps": {"type": "array", "items": {"type": "object", "additionalProperties": True}},
                "error": {"type": ["object", "null"], "properties": {"code": _STR, "message": _STR}}, "createdBy": _STR, "createdAt": _TIME, "updatedAt": _TIME})
GOAL_TREE = {**GOAL, "properties": {**GOAL["properties"], "children": {"type": "array", "items": _record(
    {"id": _STR, "status": _STR})}}}
ROLE = _record({"name": _STR, "description": _STR, "skills": {"type": "array", "items": _STR},
                "collections": {"type": "array", "items": _STR}, "autonomy": _LEVEL, "budget": _COUNTS,
                "autonomySince": _TIME, "createdAt": _TIME, "updatedAt": _TIME})
PROMOTION = _record({"id": _STR, "role": _STR, "fromLevel": _LEVEL, "level": _LEVEL, "reason": _NSTR,
                     "status": _STR, "proposedBy": _STR, "decidedBy": _NSTR, "createdAt": _TIME, "decidedAt": _TIME})
INCIDENT = _record({"id": _STR, "role": _STR, "kind": _STR, "weight": {"type": "number"},
                    "detail": {"type": "object", "additionalProperties": True}, "status": _STR,
                    "resolution": {"type": ["object", "null"], "additionalProperties": True}, "createdAt": _TIME})
LEDGER = _record({"grants": {"type": "array", "items": _record({"role": _STR, "level": _LEVEL, "since": _TIME})},
                  "incidents": {"type": "array", "items": INCIDENT},
                  "levels": {"type": "array", "items": _LEVEL}})
_ROW = {"type": ["object", "null"], "additionalProperties": True}
STAGING = _record({"id": _STR, "goalId": _NSTR, "role": _NSTR, "operation": _STR, "collection": _STR,
                   "itemId": _NSTR, "status": _STR, "level": _STR,
                   "diff": _record({"before": _ROW, "after": _ROW}), "applyAt": _TIME, "reason": _NSTR,
                   "decidedBy": _NSTR, "createdAt": _TIME, "updatedAt": _TIME})
CONSTITUTION = _record({"id": _STR, "version": {"type": "integer"}, "note": _NSTR,
                        "rules": {"type": "array", "items": {"type": "object", "additionalProperties": True}},
                        "status": _STR, "createdBy": _STR, "createdAt": _TIME, "compiledAt": _TIME,
                        "activatedAt": _TIME})
_CHECKS = {"type": "array", "items": _STR, "description": "The compiled checks, by label"}
COMPILED = {"type": "object", "required": ["checks"], "additionalProperties": True,
            "description": "The checks; with the version's record when a stored version was compiled",
            "properties": {**CONSTITUTION["properties"], "checks": _CHECKS}}
DRY_RUN = _record({"version": {"type": "integer"}, "examined": {"type": "integer"},
                   "wouldBlock": {"type": "array", "items": {"type": "object", "additionalProperties": True}}})
FREEZE = _record({"id": _STR, "scope": {"type": "string", "enum": list(SCOPES)}, "target": _NSTR, "reason": _NSTR,
                  "active": {"type": "boolean"}, "createdBy": _STR, "createdAt": _TIME, "liftedBy": _NSTR,
                  "liftedAt": _TIME})
INTENT = _record({"id": _STR, "key": _STR, "title": _STR, "description": _STR, "role": _NSTR,
                  "trigger": {"type": "object", "additionalProperties": True},
                  "budget": {"oneOf": [_COUNTS, {"type": "null"}]}, "status": _STR, "source": _STR,
                  "nextRunAt": _TIME, "lastGoalId": _NSTR, "createdAt": _TIME, "updatedAt": _TIME})
AGENT_DECISION = APPROVAL
