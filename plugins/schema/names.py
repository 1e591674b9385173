"""Names of collections and fields: their shape and the names nobody may take.

Collection names appear in URL paths (``/items/:collection``), in GraphQL type and field names
(``X``, ``X_by_id``, ``create_X``) and in event names (``<collection>.items.create``), so a
name must be safe in all three and must not shadow a route segment or a built-in type.
Field names become JSON keys of item data and GraphQL fields beside the structural columns.
"""

from __future__ import annotations

import re
from typing import Any

from kernel.base.errors import ApiError

COLLECTION_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

RESERVED_PREFIXES = ("svc_", "directus_", "pg_", "sqlite_")
# ``X_by_id`` is the detail query of collection ``X`` in GraphQL; a collection of that name
# would collide with it.
RESERVED_SUFFIXES = ("_by_id",)
RESERVED_COLLECTIONS = frozenset({
    # route segments and system resources
    "items", "collections", "fields", "relations", "files", "folders", "assets", "users", "roles",
    "policies", "permissions", "teams", "me", "auth", "sites", "search", "graphql", "schema", "diff",
    "config", "settings", "presets", "revisions", "versions", "activity", "comments", "notifications",
    "shares", "translations", "tm", "releases", "editorial", "flows", "operations", "webhooks",
    "dashboards", "panels", "insights", "extensions", "server", "utils", "openapi", "realtime", "push",
    "deliver", "delivery", "cdc", "pageviews", "email", "mcp", "agents", "ai", "privacy", "admin",
    "regulated", "store_sync", "git", "api_keys", "issuers", "audit", "consents",
    # GraphQL root and scalar type names
    "query", "mutation", "subscription", "string", "int", "float", "boolean", "id", "json", "datetime",
})
# Structural columns of every item; content fields may not shadow them.
STRUCTURAL_FIELDS = ("id", "status", "sort", "createdAt", "updatedAt", "userCreated", "userUpdated",
                     "deletedAt", "_data")
_STRUCTURAL_LOWER = frozenset(f.lower() for f in STRUCTURAL_FIELDS)


def collection_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a collection, or ``None`` when it can."""
    if not isinstance(name, str):
        return "A collection name must be a string"
    if not COLLECTION_NAME.match(name):
        return "A collection name must match ^[A-Za-z][A-Za-z0-9_]{0,63}$"
    lowered = name.lower()
    if lowered in RESERVED_COLLECTIONS or lowered.startswith(RESERVED_PREFIXES) or lowered.endswith(
            RESERVED_SUFFIXES):
        return f"'{name}' is reserved"
    return None


def check_collection_name(name: Any, path: list[Any]) -> str:
    """``name`` if it may name a new collection, else 400 ``VALIDATION_FAILED`` at ``path``."""
    problem = collection_name_problem(name)
    if problem:
        raise ApiError.validation(problem, path=path)
    return name


def field_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a field (or a relation alias), or ``None`` when it can."""
    if not isinstance(name, str):
        return "A field name must be a string"
    if not FIELD_NAME.match(name):
        return "A field name must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$"
    if name.startswith("__"):
        return "Names starting with '__' are reserved by GraphQL"
    if name.lower() in _STRUCTURAL_LOWER:
        return f"'{name}' is a structural column of every item"
    return None


def field_reference_problem(name: Any, structural: frozenset[str] = frozenset()) -> str | None:
    """Why ``name`` cannot refer to a field of an item, or ``None`` when it can: a content field's
    name (which need not exist yet), or one of the ``structural`` columns the reference may name,
    exactly as spelled (a collection's ``status_field`` may be the structural ``status``)."""
    if isinstance(name, str) and name in structural:
        return None
    return field_name_problem(name)


def check_field_name(name: Any, path: list[Any]) -> str:
    """``name`` if it may name a field, else 400 ``VALIDATION_FAILED`` at ``path``."""
    problem = field_name_problem(name)
    if problem:
        raise ApiError.validation(problem, path=path)
    return name


def is_lookup_name(name: str) -> bool:
    """Whether a path segment could name an existing collection or field (else: plain 404)."""
    return bool(FIELD_NAME.match(name))
