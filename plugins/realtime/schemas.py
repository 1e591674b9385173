"""OpenAPI fragments of the realtime plugin's routes."""

from __future__ import annotations

from typing import Any

from kernel import ops

TICKET = {"type": "object", "required": ["ticket", "expiresAt"],
          "properties": {"ticket": {"type": "string"}, "expiresAt": {"type": "string", "format": "date-time"}}}
EMPTY = {"type": "object", "additionalProperties": False, "properties": {}}
NOTIFICATION = {
    "type": "object", "required": ["id", "kind", "severity", "title", "ts"],
    "properties": {"id": {"type": "string"}, "kind": {"type": "string"},
                   "severity": {"enum": ["info", "success", "warning", "error"]}, "title": {"type": "string"},
                   "body": {"type": ["string", "null"]}, "deepLink": {"type": ["string", "null"]},
                   "entityId": {"type": ["string", "null"]}, "ts": {"type": "string"},
                   "handledAt": {"type": ["string", "null"]}},
}
SUBSCRIPTION_IN = {
    "type": "object", "required": ["endpoint", "keys"], "additionalProperties": False,
    "properties": {"endpoint": {"type": "string", "format": "uri", "maxLength": 2000},
                   "expirationTime": {"type": ["number", "null"]},
                   "keys": {"type": "object", "required": ["p256dh", "auth"], "additionalProperties": False,
                            "properties": {"p256dh": {"type": "string"}, "auth": {"type": "string"}}}},
}
SUBSCRIPTION = {"type": "object", "required": ["id", "endpoint"],
                "properties": {"id": {"type": "string"}, "endpoint": {"type": "string"},
                               "createdAt": {"type": "string"}, "updatedAt": {"type": "string"}}}


def ticket_op(summary: str) -> dict[str, Any]:
    out = ops(post=(summary, None, TICKET, 200))
    out["post"]["requestBody"] = {"required": False, "content": {"application/json": {"schema": EMPTY}}}
    return out


VAPID_OP = ops(get=("The web push application-server public key (404 PUSH_NOT_CONFIGURED when unset)", None,
                    {"type": "object", "required": ["publicKey"], "properties": {"publicKey": {"type": "string"}}},
                    200))
STATUS_OP = ops(get=("Whether push is configured, and the caller's push subscriptions in this site", None,
                     {"type": "object", "required": ["vapidConfigured", "realtimeAvailable", "subscriptions"],
                      "properties": {"vapidConfigured": {"type": "boolean"},
                                     "realtimeAvailable": {"type": "boolean"},
                                     "subscriptions": {"type": "integer"}}}, 200))
TEST_OP = ops(post=("Dispatch a test notification to the site (realtime frame, and web push when configured)",
                    None, {"type": "object", "properties": {"notification": NOTIFICATION,
                                                            "pushQueued": {"type": "boolean"}}}, 202))
TEST_OP["post"]["requestBody"] = {"required": False, "content": {"application/json": {"schema": EMPTY}}}
SUBSCRIPTIONS_OPS = ops(
    post=("Create or update the caller's push subscription for an endpoint", SUBSCRIPTION_IN, SUBSCRIPTION, 201),
    delete=("Delete the caller's push subscription of an endpoint", {
        "type": "object", "required": ["endpoint"], "additionalProperties": False,
        "properties": {"endpoint": {"type": "string", "maxLength": 2000}}}, None, 204),
)
NOTIFICATIONS_OP = ops(get=("The site's notifications and the caller's own, newest first", None, [NOTIFICATION],
                            200))
NOTIFICATIONS_OP["get"]["parameters"] = [
    {"name": "handled", "in": "query", "schema": {"enum": ["true", "false"]}},
    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
    {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0}},
]
NOTIFICATION_OP = ops(patch=("Mark a notification handled or not", {
    "type": "object", "required": ["handled"], "additionalProperties": False,
    "properties": {"handled": {"type": "boolean"}}}, NOTIFICATION, 200))
