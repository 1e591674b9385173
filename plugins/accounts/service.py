"""Identity logic: users, the instance admin, access-token verification (login is ``sessions.login``)."""

from __future__ import annotations

import logging
import secrets
from typing import Any

from sqlalchemy import func, insert, select

from kernel.auth.passwords import hash_password_async
from kernel.auth.principal import Principal
from kernel.auth.tokens import decode_access_token
from kernel.auth.usercache import cached_user
from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from kernel.tenancy.service import list_sites
from plugins.access.api import sites_of_user
from plugins.accounts.sessions.session_live import session_live
from plugins.accounts.tables import users

log = logging.getLogger("svc.accounts")
MAX_PASSWORD = 1024  # argon2 hashes any length; a cap stops megabyte "passwords" burning CPU


def normalise_email(email: Any) -> str:
    if not isinstance(email, str) or "@" not in email or len(email) > 320 or any(c in email for c in "\r\n "):
        raise ApiError.validation("'email' must be an email address", path=["email"])
    return email.strip().lower()


MAX_LISTED_SITES = 1000


async def my_sites(kernel: Any, principal: Principal) -> list[dict[str, Any]]:
    """The sites ``principal`` (a user) may sign in to, by id: its memberships with its role in
    each; for the instance admin every site (no membership, so no role: ``roleId`` null), the
    first ``MAX_LISTED_SITES``; for an impersonation session only the site it is bound to."""
    if principal.is_instance_admin and not principal.impersonator_id:
        rows, _total = await list_sites(kernel, limit=MAX_LISTED_SITES)
        return [{"id": r["id"], "name": r["name"], "roleId": None, "roleName": None} for r in rows]
    async with kernel.db.connect() as conn:
        found = await sites_of_user(conn, principal.user_id)
    if principal.impersonator_id:
        found = [s for s in found if s["id"] == principal.site_id]
    return found


def public_user(row: Any) -> dict[str, Any]:
    """The profile a client may see: never the password hash or the token version."""
    return {
        "id": row["id"],
        "email": row["email"],
        "firstName": row["first_name"],
        "lastName": row["last_name"],
        "avatar": row["avatar"],
    }


async def find_user_by_email(kernel: Any, email: str) -> Any:
    """The user row of ``email``, or None. No stored address holds a NUL, and PostgreSQL cannot
    compare one (a login's 500): such an address finds nobody, without a query."""
    if "\x00" in email:
        return None
    async with kernel.db.connect() as conn:
        return (await conn.execute(select(users).where(users.c.email == email))).mappings().first()


async def find_user(kernel: Any, user_id: str) -> Any:
    async with kernel.db.connect() as conn:
        return (await conn.execute(select(users).where(users.c.id == user_id))).mappings().first()


async def create_user(kernel: Any, conn: Any, *, email: str, password: str | None, first_name: str | None = None,
                      last_name: str | None = None, status: str = "active", instance_admin: bool = False) -> str:
    user_id = uuid7()
    now = now_utc()
    await conn.execute(insert(users).values(
        id=user_id, email=normalise_email(email),
        password_hash=await hash_password_async(password) if password else None,
        first_name=first_name, last_name=last_name, avatar=None, status=status,
        is_instance_admin=instance_admin, token_version=1, created_at=now, updated_at=now,
    ))
    return user_id


async def provision_user(kernel: Any, conn: Any, *, email: str, password: str | None,
                         roles: dict[str, str]) -> str:
    """A user and its memberships (site id -> built-in role key or role id), written in ``conn``
    without audit or events (the ``provision_user`` hook, used by the test harness)."""
    from plugins.access import api as access_api

    user_id = await create_user(kernel, conn, email=email, password=password)
    for site_id, role in roles.items():
        builtin = await access_api.role_by_system_key(conn, site_id, role)
        await access_api.set_membership(conn, site_id, user_id, builtin["id"] if builtin else role)
    return user_id


async def bootstrap_instance_admin(kernel: Any) -> None:
    """First start on an empty database: the instance admin from SVC_ADMIN_EMAIL/PASSWORD.

    Without a configured password a random one is generated and printed once.
    """
    async with kernel.db.connect() as conn:
        count = (await conn.execute(select(func.count()).select_from(users))).scalar_one()
    if count:
        return
    settings = kernel.settings
    password = settings.admin_password
    generated = not password
    if generated:
        password = secrets.token_urlsafe(18)
    try:
        async with kernel.db.begin() as conn:
            await create_user(kernel, conn, email=settings.admin_email, password=password, first_name="Admin",
                              instance_admin=True)
    except Exception:  # noqa: BLE001 - another worker bootstrapped first (unique email)
        if await find_user_by_email(kernel, normalise_email(settings.admin_email)) is None:
            raise
        return
    if generated:
        # Printed, not logged at a level that might be shipped elsewhere, and only this once.
        print(f"svc: created instance admin {settings.admin_email} with password {password}", flush=True)
    log.info("created the instance admin %s", settings.admin_email)


def clean_id(value: Any) -> str | None:
    """An identifier from a path or body, or None when it cannot name anything (wrong type, too
    long, a NUL that PostgreSQL would refuse): callers answer 404 or 400 instead of a 500."""
    if not isinstance(value, str) or not value or len(value) > 64 or "\x00" in value:
        return None
    return value


async def _token_identity(kernel: Any, user_id: Any) -> dict[str, Any] | None:
    """What a token check needs of a user (no password hash), cached per process by
    ``kernel.auth.usercache`` until ``users.changed``."""
    async with kernel.db.connect() as conn:
        row = (await conn.execute(select(users.c.id, users.c.email, users.c.status, users.c.token_version,
                                         users.c.is_instance_admin).where(users.c.id == user_id))).mappings().first()
    return dict(row) if row is not None else None


async def principal_from_token(kernel: Any, token: str, site: dict[str, Any] | None) -> Principal:
    """Verify an internal access token; the user must be active and the token version current."""
    claims = decode_access_token(kernel.settings.resolved_jwt_secret(), token)
    row = await cached_user(kernel, claims["sub"], claims.get("ver"), lambda: _token_identity(kernel, claims["sub"]))
    if row is None or row["status"] != "active" or claims.get("ver") != row["token_version"]:
        raise ApiError.unauthenticated("The access token is no longer valid")
    session = claims.get("sid")
    if isinstance(session, str) and not await session_live(kernel, row["id"], session):
        raise ApiError.unauthenticated("The access token's session has ended (logged out or revoked)")
    site_id = site["id"] if site else None
    token_site = claims.get("site")
    if token_site is not None and site_id is not None and token_site != site_id:
        raise ApiError.unauthenticated("The access token belongs to another site")
    return Principal(
        kind="user", user_id=row["id"], site_id=site_id, is_instance_admin=bool(row["is_instance_admin"]),
        email=row["email"], impersonator_id=claims.get("imp"), claims=claims,
    )
