"""API keys: long-lived server-to-server credentials of one site, acting with one role there.

A key is ``svk_`` + 43 url-safe characters (256 random bits), shown once when created; only
its SHA-256 is stored, with the first 8 characters after ``svk_`` as a ``prefix`` so people
can tell keys apart. Authentication looks the hash up within the request's site, so a key of
site A is simply unknown on site B. Decisions: docs/decisions/api-keys.md.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import secrets
from typing import Any

from sqlalchemy import func, or_
from sqlalchemy.exc import SQLAlchemyError

from kernel import ApiError, Principal
from kernel.base.ids import uuid7
from kernel.db.meta import aware, iso, now_utc
from kernel.policy import audit
from kernel.tenancy.scope import SiteDB
from plugins.access import api as access_api
from plugins.accounts.service import clean_id
from plugins.accounts.tables import api_keys
from plugins.accounts.users.users import role_id_for

log = logging.getLogger("svc.accounts.apikeys")

KEY_PREFIX = "svk_"
PREFIX_CHARS = 8
MAX_KEY_LENGTH = 200
# last_used_at is written at most this often per key: the hot path stays a single indexed read.
TOUCH_EVERY = dt.timedelta(seconds=60)
DEFAULT_ROLE = "public"  # least privilege: more access is an explicit roleId


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()



def key_record(row: Any, role: dict[str, Any] | None) -> dict[str, Any]:
    """What listing shows: never the key or its hash. ``role`` is the role the key acts with."""
    return {"id": row["id"], "name": row["name"], "prefix": row["key_prefix"], "roleId": row["role_id"],
            "role": role, "createdAt": iso(row["created_at"]), "expiresAt": iso(row["expires_at"]),
            "lastUsedAt": iso(row["last_used_at"])}


async def effective_role(db: SiteDB, role_id: str | None) -> dict[str, Any] | None:
    """``{ id, name, systemKey }`` of the role a key acts with (the ``public`` role when it was
    created without ``roleId``); None when that role was deleted since: the key then grants
    nothing (docs/accounts.md#api-keys)."""
    row = await access_api.role_in_site(db.conn, db.site_id, role_id)
    return None if row is None else {"id": row["id"], "name": row["name"], "systemKey": row["system_key"]}


def parse_expires(value: Any) -> dt.datetime | None:
    """``expiresAt``: ISO 8601 in the future (no offset means UTC), or null for no expiry."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 40:
        raise ApiError.validation("'expiresAt' must be an ISO 8601 date-time", path=["expiresAt"])
    try:
        when = aware(dt.datetime.fromisoformat(value.strip())).astimezone(dt.UTC)
    except (ValueError, OverflowError) as exc:  # overflow: year 9999 with a negative offset
        raise ApiError.validation("'expiresAt' must be an ISO 8601 date-time", path=["expiresAt"]) from exc
    if when <= now_utc():
        raise ApiError.validation("'expiresAt' must be in the future", path=["expiresAt"])
    return when


def parse_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 200 or any(c in value for c in "\r\n\x00"):
        raise ApiError.validation("'name' must be a single-line string of 1 to 200 characters", path=["name"])
    return value.strip()


async def create_key(ctx: Any, body: dict[str, Any], owner_id: str | None = None) -> dict[str, Any]:
    """A new key of the request's site; the answer is the only time ``key`` is shown. ``owner_id``
    makes it a personal key, deleted with its owner's role there (plugins/accounts/users/membership.py)."""
    site_id = ctx.require_site()
    name = parse_name(body.get("name"))
    expires = parse_expires(body.get("expiresAt"))
    key = new_key()
    now = now_utc()
    async with ctx.unit_of_work() as uow:
        role_id = await role_id_for(uow.conn, site_id, body.get("roleId"), default=DEFAULT_ROLE)
        key_id = uuid7()
        await uow.db.insert(api_keys, {
            "id": key_id, "name": name, "key_hash": key_hash(key),
            "key_prefix": key[len(KEY_PREFIX):len(KEY_PREFIX) + PREFIX_CHARS], "role_id": role_id,
            "created_by": ctx.principal.user_id or ctx.principal.api_key_id, "created_at": now,
            "expires_at": expires, "last_used_at": None, "owner_id": owner_id,
        })
        await audit.record(uow.conn, action="api_key.create", site_id=site_id, principal=ctx.principal,
                           target_type="api_key", target_id=key_id, details={"name": name, "roleId": role_id},
                           ip=ctx.client_ip or None, request_id=ctx.request_id)
        role = await effective_role(uow.db, role_id)
    return {"id": key_id, "name": name, "key": key, "roleId": role_id, "role": role, "expiresAt": iso(expires),
            "createdAt": iso(now)}


async def list_keys(db: SiteDB, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    """One page of the site's keys, oldest first, and their total."""
    rows = await db.all(db.select(api_keys).order_by(api_keys.c.created_at, api_keys.c.id).limit(limit)
                        .offset(offset))
    total = await db.scalar(db.select(api_keys, func.count()))
    roles = {role_id: await effective_role(db, role_id) for role_id in {r["role_id"] for r in rows}}
    return [key_record(r, roles[r["role_id"]]) for r in rows], int(total or 0)


async def get_key(db: SiteDB, key_id: str) -> dict[str, Any]:
    row = None
    if clean_id(key_id) is not None:
        row = await db.one(db.select(api_keys).where(api_keys.c.id == key_id))
    if row is None:
        raise ApiError.not_found("No such API key in this site", code="RECORD_NOT_FOUND")
    return key_record(row, await effective_role(db, row["role_id"]))


async def delete_key(ctx: Any, key_id: str) -> None:
    """Delete a key of the request's site; it stops working at once (every request reads it)."""
    site_id = ctx.require_site()
    async with ctx.unit_of_work() as uow:
        record = await get_key(uow.db, key_id)
        await uow.db.execute(uow.db.delete(api_keys).where(api_keys.c.id == key_id))
        await audit.record(uow.conn, action="api_key.delete", site_id=site_id, principal=ctx.principal,
                           target_type="api_key", target_id=key_id, details={"name": record["name"]},
                           ip=ctx.client_ip or None, request_id=ctx.request_id)


async def authenticate(kernel: Any, key: str, site: dict[str, Any] | None) -> Principal:
    """The principal of an ``svk_`` key in ``site``; 401 ``UNAUTHENTICATED`` for any bad key."""
    if site is None:
        raise ApiError.unauthenticated("An API key works only within its site: send X-Svc-Site")
    if len(key) > MAX_KEY_LENGTH:
        raise ApiError.unauthenticated("The API key is not valid")
    async with kernel.db.connect() as conn:
        db = SiteDB(site["id"], conn)
        row = await db.one(db.select(api_keys).where(api_keys.c.key_hash == key_hash(key)))
    if row is None:
        raise ApiError.unauthenticated("The API key is not valid")
    now = now_utc()
    expires = aware(row["expires_at"])
    if expires is not None and expires <= now:
        # Not TOKEN_EXPIRED: that code tells clients to refresh, and a key cannot be refreshed.
        raise ApiError.unauthenticated("The API key has expired")
    last = aware(row["last_used_at"])
    if last is None or now - last >= TOUCH_EVERY:
        await _touch(kernel, site["id"], row["id"], now)
    return Principal(kind="api_key", api_key_id=row["id"], role_id=row["role_id"], site_id=site["id"])


async def _touch(kernel: Any, site_id: str, key_id: str, now: dt.datetime) -> None:
    # Conditional, so several workers seeing the same stale value write once; a failure here
    # (a busy SQLite writer) must not fail the request it rides on.
    try:
        async with kernel.db.begin() as conn:
            db = SiteDB(site_id, conn)
            await db.execute(db.update(api_keys).where(
                api_keys.c.id == key_id,
                or_(api_keys.c.last_used_at.is_(None), api_keys.c.last_used_at < now - TOUCH_EVERY),
            ).values(last_used_at=now))
    except SQLAlchemyError as exc:
        log.debug("last_used_at of API key %s not updated: %s", key_id, exc)
