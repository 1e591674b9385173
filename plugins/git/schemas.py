"""OpenAPI pieces of the git plugin."""

from __future__ import annotations

from typing import Any

from kernel.http.openapi import ERROR_SCHEMA
from plugins.git.bodies import AUTH_METHODS, STATUSES
from plugins.git.providers import PROVIDERS

_TIME = {"type": "string", "format": "date-time"}
_SYNC = {"type": "object", "additionalProperties": False, "properties": {"preview": {"type": "boolean"}}}
INTEGRATION: dict[str, Any] = {
    "type": "object",
    "required": ["id", "provider", "repoFullName", "displayName", "authMethod", "status", "syncConfig", "hasToken"],
    "properties": {
        "id": {"type": "string"}, "provider": {"enum": list(PROVIDERS)}, "repoFullName": {"type": "string"},
        "displayName": {"type": "string"}, "authMethod": {"enum": list(AUTH_METHODS)},
        "installationId": {"type": ["string", "null"]}, "status": {"enum": list(STATUSES)}, "syncConfig": _SYNC,
        "hasToken": {"type": "boolean"}, "hasSecret": {"type": "boolean"}, "webhookPath": {"type": "string"},
        "webhookSecret": {"type": "string", "description": "Only in the create answer"},
        "createdAt": _TIME, "updatedAt": _TIME,
    },
}
_TOKEN = {"type": ["string", "null"], "maxLength": 1000, "description": "Write-only; sealed; never returned"}
CREATE_BODY: dict[str, Any] = {
    "type": "object", "required": ["provider", "repoFullName", "displayName", "authMethod"],
    "properties": {
        "provider": {"enum": list(PROVIDERS)}, "repoFullName": {"type": "string", "maxLength": 200},
        "displayName": {"type": "string", "maxLength": 100}, "authMethod": {"enum": list(AUTH_METHODS)},
        "token": _TOKEN, "installationId": {"type": ["integer", "string", "null"]}, "syncConfig": _SYNC,
    },
}
PATCH_BODY: dict[str, Any] = {
    "type": "object",
    "properties": {"displayName": {"type": "string", "maxLength": 100}, "token": _TOKEN,
                   "status": {"enum": list(STATUSES)}, "syncConfig": _SYNC,
                   "installationId": {"type": ["integer", "string", "null"]}},
}
SECRET = {"type": "object", "required": ["secret"], "properties": {"secret": {"type": "string"}}}
AUTHORIZE = {"type": "object", "required": ["authorizeUrl"], "properties": {"authorizeUrl": {"type": "string"}}}
PULL = {"type": "object", "properties": {
    "number": {"type": "integer"}, "title": {"type": "string"}, "state": {"type": "string"},
    "headSha": {"type": "string"}, "headRef": {"type": "string"}, "baseRef": {"type": "string"},
    "author": {"type": ["string", "null"]}, "url": {"type": ["string", "null"]}, "fetchedAt": _TIME}}
RUN = {"type": "object", "properties": {
    "runId": {"type": "string"}, "number": {"type": "integer"}, "name": {"type": "string"},
    "status": {"type": "string"}, "conclusion": {"type": ["string", "null"]}, "headSha": {"type": "string"},
    "url": {"type": ["string", "null"]}, "hasLog": {"type": "boolean"}, "fetchedAt": _TIME}}
LOG = {"type": "object", "properties": {"runId": {"type": "string"}, "log": {"type": "string"},
                                        "truncated": {"type": "boolean"}, "cached": {"type": "boolean"}}}
REFRESH = {"type": "object", "properties": {"fetched": {"type": "integer"}}}
VALIDATION = {"type": "object", "properties": {
    "valid": {"type": "boolean"}, "errors": {"type": "array", "items": ERROR_SCHEMA["properties"]["errors"]["items"]},
    "diff": {"type": ["object", "null"], "additionalProperties": True},
    "number": {"type": "integer"}, "sha": {"type": "string"},
    "status": {"type": "object", "required": ["context", "state"], "properties": {
        "context": {"type": "string"}, "state": {"type": "string", "enum": ["success", "failure"]}}}}}
GITOPS_BODY = {"type": "object", "properties": {"ref": {"type": "string", "maxLength": 255}}}
_KEYS = {"type": "array", "items": {"type": "string"}}
GITOPS = {"type": "object", "properties": {
    "ref": {"type": "string"}, "created": _KEYS, "updated": _KEYS, "unchanged": _KEYS, "changedInGit": _KEYS,
    "driftInSvc": _KEYS, "conflicts": _KEYS, "removedInGit": _KEYS, "syncedAt": _TIME}}
PROVENANCE = {"type": "object", "properties": {
    "type": {"type": "string"}, "number": {"type": ["integer", "null"]}, "sha": {"type": ["string", "null"]},
    "siteId": {"type": "string"}, "at": _TIME}}
CALLBACK = {"type": "object", "properties": {"integrationId": {"type": "string"}, "connected": {"type": "boolean"}}}
RECEIVED = {"type": "object", "properties": {"received": {"type": "boolean"}, "duplicate": {"type": "boolean"},
                                             "event": {"type": "string"}, "handled": {"type": "string"}}}
