"""Identity-level helpers shared by self-service, user admin and invitations.

Users are global identities (``svc_users`` has no ``site_id``): these helpers touch one
identity by id or email and never list identities, so they cannot leak one site's people to
another. Callers establish that the identity is visible in their site (a membership) first.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import insert, select, update

from kernel.auth import passwords
from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from kernel.mailer import check_address
from plugins.accounts import service
from plugins.accounts.service import normalise_email
from plugins.accounts.sessions import password_change
from plugins.accounts.sessions.password_change import check_password_policy
from plugins.accounts.sessions.session_control import revoke_all_of_user
from plugins.accounts.tables import users

STATUSES = ("active", "invited", "suspended", "unverified")
MIN_PASSWORD = password_change.MIN_PASSWORD
MAX_PASSWORD = service.MAX_PASSWORD
MAX_NAME = 200
MAX_AVATAR = 500
_PLAIN_ADDRESS = re.compile(r"^[^@\s<>()\[\],;:\"\\\x00]+@[^@\s<>()\[\],;:\"\\\x00]+$")


def check_email(value: Any, path: str = "email") -> str:
    """A normalised (lower-case) address that the mailer can also send to, else 400."""
    email = normalise_email(value)
    try:
        check_address(email)
    except ValueError as exc:
        raise ApiError.validation(f"'{path}' must be an email address", path=[path]) from exc
    if not _PLAIN_ADDRESS.match(email):  # a bare address: no display name, brackets or NUL
        raise ApiError.validation(f"'{path}' must be an email address", path=[path])
    return email


def check_password(value: Any, path: str = "password") -> str:
    """The password if it meets the policy (a string of 8 to 1024 characters), else 400."""
    return check_password_policy(value, path)


def check_text(body: dict[str, Any], key: str, max_length: int = MAX_NAME) -> str | None:
    """An optional, nullable short text field (names, avatar), stripped; 400 with its path."""
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > max_length or any(c in value for c in "\r\n\x00"):
        raise ApiError.validation(f"'{key}' must be a single-line string of at most {max_length} characters",
                                  path=[key])
    return value.strip() or None


def check_status(value: Any) -> str:
    if value not in STATUSES:
        raise ApiError.validation(f"'status' must be one of {', '.join(STATUSES)}", path=["status"])
    return value


async def hash_password(password: str) -> str:
    """argon2id off the event loop. Looked up on the module each call so tests can spy on it."""
    return await passwords.hash_password_async(password)


async def identity_by_email(conn: Any, email: str) -> Any:
    return (await conn.execute(select(users).where(users.c.email == email))).mappings().first()


async def identity_by_id(conn: Any, user_id: str) -> Any:
    return (await conn.execute(select(users).where(users.c.id == user_id))).mappings().first()


async def insert_identity(conn: Any, *, email: str, password_hash: str | None, status: str,
                          first_name: str | None = None, last_name: str | None = None) -> str:
    """A new global identity; the caller has hashed the password (so timing stays its choice)."""
    user_id = uuid7()
    now = now_utc()
    await conn.execute(insert(users).values(
        id=user_id, email=email, password_hash=password_hash, first_name=first_name, last_name=last_name,
        avatar=None, status=status, is_instance_admin=False, token_version=1, created_at=now, updated_at=now,
    ))
    return user_id


async def update_identity(conn: Any, user_id: str, **values: Any) -> None:
    await conn.execute(update(users).where(users.c.id == user_id).values(**values, updated_at=now_utc()))


async def end_sessions(conn: Any, user_id: str) -> None:
    """Revoke every refresh token of the user (all sites) and bump the token version, so
    access tokens already issued stop working at their next request too."""
    await revoke_all_of_user(conn, user_id)
    await conn.execute(update(users).where(users.c.id == user_id)
                       .values(token_version=users.c.token_version + 1, updated_at=now_utc()))


async def set_password(conn: Any, user_id: str, password_hash: str, **values: Any) -> None:
    """Store a new password hash (plus other identity ``values``) and end every session."""
    await update_identity(conn, user_id, password_hash=password_hash, **values)
    await end_sessions(conn, user_id)
