"""Shared pieces of the access services: input checks and the record of a change.

The services take a ``RequestContext`` (kernel, site, principal, request id, client IP) so
REST, GraphQL, flows and MCP reach the same functions with the same checks.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Table, func

from kernel import ApiError
from kernel.policy.audit import record
from plugins.access import api

# A display name: 1..200 characters, no control characters (C0, DEL, C1: PostgreSQL refuses
# NUL and the rest only break logs and UIs) and no lone surrogates (they cannot be encoded),
# with at least one character that is not a space. The same text is the OpenAPI pattern, so
# the schema and the server agree on what is valid.
NAME_PATTERN = (r"^[^\x00-\x1f\x7f-\x9f\ud800-\udfff]*[^\x00-\x20\x7f-\x9f\ud800-\udfff]"
                r"[^\x00-\x1f\x7f-\x9f\ud800-\udfff]*$")
NAME_MAX = 200
_NAME = re.compile(NAME_PATTERN)

# Identifiers of roles, policies, teams, rules and users are UUIDs; anything else cannot name
# a row, and refusing it early keeps odd bytes (NUL, megabyte strings) away from the database.
ID_PATTERN = r"^[A-Za-z0-9-]{1,36}$"
_ID = re.compile(ID_PATTERN)

COLLECTION_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
_COLLECTION = re.compile(COLLECTION_PATTERN)

MAX_KEYS = 100  # ids in one Directus-style bulk PATCH or DELETE


def check_body(body: Any, allowed: set[str] | frozenset[str]) -> dict[str, Any]:
    """The body as a dict with only ``allowed`` keys (400 with ``path`` otherwise)."""
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    for key in body:
        if key not in allowed:
            raise ApiError.validation(f"Unknown field '{key}'", path=[key])
    return body


def name_value(value: Any, path: str = "name") -> str:
    """A valid display name, outer spaces trimmed."""
    if not isinstance(value, str) or len(value) > NAME_MAX or not _NAME.fullmatch(value):
        raise ApiError.validation(
            f"'{path}' must be 1 to {NAME_MAX} characters, not blank, without control characters",
            path=[path])
    return value.strip(" ")


def bool_value(body: dict[str, Any], key: str, default: bool | None = None) -> bool | None:
    """An optional boolean field; ``null`` counts as absent."""
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ApiError.validation(f"'{key}' must be a boolean", path=[key])
    return value


def ref_id(value: Any, path: str | list[Any]) -> str:
    """An id given in a body: a string shaped like an id (400 with ``path`` otherwise)."""
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise ApiError.validation(f"'{path if isinstance(path, str) else path[-1]}' must be an id",
                                  path=[path] if isinstance(path, str) else path)
    return value


def path_id(value: str, what: str) -> str:
    """An id from the URL; a malformed one cannot exist, so it is simply not found."""
    if not _ID.fullmatch(value):
        raise not_found(what)
    return value


def collection_value(value: Any, path: str = "collection", *, wildcard: bool = True) -> str:
    """A collection name, or ``*`` (every collection) when ``wildcard``."""
    if wildcard and value == "*":
        return value
    if not isinstance(value, str) or not _COLLECTION.fullmatch(value):
        extra = " or '*'" if wildcard else ""
        raise ApiError.validation(f"'{path}' must be a collection name ({COLLECTION_PATTERN}){extra}",
                                  path=[path])
    return value


def is_collection_name(value: Any) -> bool:
    return isinstance(value, str) and _COLLECTION.fullmatch(value) is not None


def keys_value(body: Any) -> list[str]:
    """The ids of a Directus-style bulk request: ``[ids]`` or ``{ keys: [ids] }``."""
    keys = body.get("keys") if isinstance(body, dict) else body
    path: list[Any] = ["keys"] if isinstance(body, dict) else ["body"]
    if not isinstance(keys, list) or not 1 <= len(keys) <= MAX_KEYS:
        raise ApiError.validation(f"Send 1 to {MAX_KEYS} ids as 'keys'", path=path)
    return list(dict.fromkeys(ref_id(k, [*path, i]) for i, k in enumerate(keys)))


def not_found(what: str) -> ApiError:
    return ApiError(404, "RECORD_NOT_FOUND", f"No such {what} in this site")


async def row_by_id(db: Any, table: Table, row_id: str, what: str) -> Any:
    """The site's row of ``table`` with ``row_id``, or 404 naming ``what`` (role, policy, team)."""
    row = await db.one(db.select(table).where(table.c.id == row_id))
    if row is None:
        raise not_found(what)
    return row


async def page_of(db: Any, table: Table, limit: int, offset: int) -> tuple[list[Any], int]:
    """A page of the site's rows of ``table`` in creation order (ties by id), and the total."""
    rows = await db.all(db.select(table).order_by(table.c.created_at, table.c.id).limit(limit).offset(offset))
    return rows, await db.scalar(db.select(table, func.count()))


async def check_name_free(db: Any, table: Table, what: str, name: str, exclude: str | None = None) -> None:
    """409 ``CONFLICT`` at ``name`` when another row of ``table`` in the site has this name."""
    stmt = db.select(table, table.c.id).where(table.c.name == name)
    if exclude:
        stmt = stmt.where(table.c.id != exclude)
    if await db.one(stmt) is not None:
        raise ApiError(409, "CONFLICT", f"A {what} named '{name}' already exists in this site", path=["name"])


async def record_change(ctx: Any, uow: Any, action: str, target_type: str, target_id: str,
                        details: dict[str, Any] | None = None) -> None:
    """Everything one access change owes: ``access.changed`` after commit (every worker drops
    its cached decisions for the site) and an audit record in the same transaction.

    ``details`` carries ids and names only, never a rule's conditions.
    """
    api.changed(uow)
    await record(uow.conn, action=action, site_id=uow.site_id, principal=ctx.principal,
                 target_type=target_type, target_id=target_id, details=details,
                 ip=getattr(ctx, "client_ip", None) or None, request_id=getattr(ctx, "request_id", None))
