"""Hook implementations of the regulated plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import Route, Setting, hookimpl, ops
from kernel.base.settings import parse_int
from kernel.policy.access import AccessAction
from plugins.regulated import envelope, routes, shred

name = "regulated"
requires = ("access", "accounts", "items", "schema")

KEY = {"type": "object", "required": ["id", "status", "algorithm"], "properties": {
    "id": {"type": "string"}, "status": {"type": "string", "enum": ["active", "retired", "provisioned", "missing"]},
    "algorithm": {"type": "string"}, "created": {"type": ["string", "null"]}, "retired": {"type": ["string", "null"]},
    "source": {"type": ["string", "null"]}}}
PROGRESS = {"type": "object", "properties": {
    "enabled": {"type": "boolean"}, "activeKeyId": {"type": ["string", "null"]}, "done": {"type": "boolean"},
    "migration": {"type": "object", "properties": {"state": {"type": "string"}, "migrated": {"type": "integer"},
                                                   "done": {"type": "boolean"}}}}}
REWRAP = {"type": "object", "properties": {
    "activeKeyId": {"type": "string"}, "rewrapped": {"type": "integer"}, "remaining": {"type": "integer"},
    "unavailable": {"type": "integer"}, "done": {"type": "boolean"}}}
BATCH = {"type": "object", "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 1000}}}
LOG_ENTRY = {"type": "object", "properties": {k: {"type": ["string", "null"]} for k in (
    "id", "actorId", "actorKind", "collection", "itemId", "field", "purpose", "requestId", "createdAt")}}


@hookimpl
def register_access_actions(kernel: Any) -> list[AccessAction]:
    # Bound to a collection and its fields like ``read``: the sensitive fields it names are shown
    # in clear (docs/regulated-content.md); without it, masked.
    return [AccessAction("read_decrypted", "Read the collection's sensitive fields in clear.")]


@hookimpl
def register_settings() -> list[Setting]:
    return [Setting("SVC_REGULATED_BATCH", 200, parse_int(1),
                    "Items (migrate) or data keys (rewrap) one envelope batch call handles at most (1-1000).")]


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return {"KEY_NOT_PROVISIONED": (422, "Key rotation to a key whose material is not loaded (SVC_ENCRYPTION_KEYS)."),
            "DECRYPTION_FAILED": (500, "A sensitive value did not decrypt; audited, and never a placeholder.")}


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    bus.on_filter("*.items.create", envelope.on_item_write, envelope.WRITE_PRIORITY)
    bus.on_filter("*.items.update", envelope.on_item_write, envelope.WRITE_PRIORITY)
    bus.on_filter("items.version_write", envelope.on_item_write)
    bus.on_filter("items.read", envelope.on_item_read)
    bus.on_filter("fields.create", envelope.on_field_change)
    bus.on_filter("fields.update", envelope.on_field_change)
    bus.on_filter(shred.EVENT, shred.on_erase)


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    base = "/admin/encryption"
    log = ops(get=("Decrypted reads of sensitive fields, newest first (never values)", None, [LOG_ENTRY], 200))
    log["get"]["parameters"] = [{"name": n, "in": "query", "required": False, "schema": {"type": "string"}}
                                for n in ("collection", "itemId", "actorId", "limit", "offset", "page")]
    return [
        Route(f"{base}/keys", routes.KeysResource(), auth="admin", openapi=ops(
            get=("Key metadata: id, status, algorithm, created, retired", None, [KEY], 200))),
        Route(f"{base}/keys/rotate", routes.RotateResource(), auth="admin", openapi=ops(
            post=("Promote a provisioned key; the previous one is retired", {
                "type": "object", "required": ["keyId"], "properties": {"keyId": {"type": "string"}}}, REWRAP, 200))),
        Route(f"{base}/keys/rewrap", routes.RewrapResource(), auth="admin", openapi=ops(
            post=("Rewrap one batch of data keys onto the active key", BATCH, REWRAP, 200))),
        Route(f"{base}/envelope", routes.EnvelopeResource(), auth="admin", rate_limit={"POST": "auth"},
              openapi=ops(get=("Envelope mode and migration progress", None, PROGRESS, 200),
                          post=("Toggle envelope mode (step-up password)", {
                              "type": "object", "required": ["enabled", "password"], "properties": {
                                  "enabled": {"type": "boolean"}, "password": {"type": "string"}}}, PROGRESS, 200))),
        Route(f"{base}/envelope/migrate", routes.MigrateResource(), auth="admin", openapi=ops(
            post=("Migrate one batch; poll until done", BATCH, PROGRESS, 200))),
        Route("/admin/field-access-log", routes.FieldAccessLogResource(), auth="admin", openapi=log),
        Route("/admin/sar/export", routes.SarExportResource(), auth="admin", openapi=ops(
            post=("Subject access export: records decrypted and their provenance", {
                "type": "object", "required": ["collection", "filter"], "properties": {
                    "collection": {"type": "string"}, "filter": {"type": "object", "additionalProperties": True}}}, {"type": "object", "additionalProperties": True}, 200))),
    ]


@hookimpl
def register_sealed_columns(kernel: Any) -> list[Any]:
    """Where this plugin keeps sealed secrets (the items' wrapped data keys): checked at start (kernel/sealed.py)."""
    from plugins.regulated.tables import data_keys

    return [data_keys.c.wrapped]
