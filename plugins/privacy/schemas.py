"""OpenAPI schemas of the privacy routes."""

from __future__ import annotations

from kernel.policy.privacy import CONSENT_TYPES

TS = {"type": ["string", "null"], "format": "date-time"}
OBJ = {"type": "object", "additionalProperties": True}
CONSENT = {"type": "object", "required": ["consentType", "granted", "grantedAt", "withdrawnAt", "updatedAt"],
           "properties": {"consentType": {"type": "string", "enum": list(CONSENT_TYPES)}, "granted": {"type": "boolean"},
                          "grantedAt": TS, "withdrawnAt": TS, "source": {"type": ["string", "null"]},
                          "version": {"type": ["string", "null"]}, "updatedAt": TS}}
CONSENT_BODY = {"type": "object", "required": ["granted", "source", "version"], "additionalProperties": False,
                "properties": {"granted": {"type": "boolean"}, "source": {"type": "string", "minLength": 1, "maxLength": 200},
                               "version": {"type": "string", "minLength": 1, "maxLength": 100}}}
RESTRICTION = {"type": "object", "required": ["restricted"],
               "properties": {"restricted": {"type": "boolean"}, "reason": {"type": "string"}}}
RESTRICTION_BODY = {"type": "object", "required": ["restricted"], "additionalProperties": False,
                    "properties": {"restricted": {"type": "boolean"}, "reason": {"type": "string", "maxLength": 500}}}
DECISION = {"type": "object", "properties": {
    "id": {"type": "string"}, "collection": {"type": "string"}, "item": {"type": "string"},
    "kind": {"type": "string"}, "causedBy": {"type": "string"}, "fields": {"type": "array", "items": {"type": "string"}},
    "createdAt": TS}}
HORIZON = {"type": "object", "required": ["target", "days", "default", "source"], "properties": {
    "target": {"type": "string"}, "days": {"type": "integer"}, "default": {"type": "integer"},
    "source": {"type": "string", "enum": ["site", "default"]}, "before": TS, "description": {"type": "string"}}}
RUN = {"type": "object", "required": ["deleted", "total"], "properties": {
    "deleted": {"type": "object", "additionalProperties": {"type": "integer"}}, "total": {"type": "integer"},
    "ranAt": TS}}
ERASURE = {"type": "object", "required": ["id", "collection", "subjectHash", "status"], "properties": {
    "id": {"type": "string"}, "collection": {"type": "string"}, "subjectHash": {"type": "string"},
    "filterFields": {"type": "array", "items": {"type": "string"}}, "reason": {"type": "string"},
    "status": {"type": "string", "enum": ["awaiting_confirmation", "confirmed", "executed"]},
    "dualControl": {"type": "boolean"}, "matched": {"type": "integer"},
    "recordCount": {"type": ["integer", "null"]}, "createdAt": TS, "confirmedAt": TS, "executedAt": TS}}
# The execution's answer adds what each erasure target reached outside items (docs/privacy.md).
ERASURE_EXECUTED = {**ERASURE, "properties": {**ERASURE["properties"], "reached": {
    "type": "object", "additionalProperties": {"type": "integer"},
    "description": "Records each erasure target reached, by target name (only those that found one)"}}}
ERASURE_BODY = {"type": "object", "required": ["collection", "filter", "reason"], "additionalProperties": False,
                "properties": {"collection": {"type": "string", "maxLength": 64}, "filter": {"type": "object", "additionalProperties": True, "minProperties": 1},
                               "reason": {"type": "string", "minLength": 1, "maxLength": 500}}}
