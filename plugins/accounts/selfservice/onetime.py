"""One-time tokens mailed to people: email verification, password reset, invitation.

A token is 256 random bits, url-safe; only its SHA-256 is stored (``svc_one_time_tokens``), so
a copy of the database cannot be replayed. Each token is bound to one purpose and one site, is
consumed by a conditional UPDATE (two concurrent uses: exactly one wins) and expires after the
purpose's lifetime (``SVC_VERIFY_TOKEN_TTL``, ``SVC_RESET_TOKEN_TTL``, ``SVC_INVITE_TOKEN_TTL``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from typing import Any

from kernel import ApiError, Setting
from kernel.base.ids import uuid7
from kernel.base.settings import parse_int
from kernel.db.meta import aware, now_utc
from kernel.tenancy.scope import SiteDB
from plugins.accounts.tables import one_time_tokens

VERIFY_EMAIL = "verify_email"
RESET_PASSWORD = "reset_password"
INVITE = "invite"

SETTINGS = [
    Setting("SVC_VERIFY_TOKEN_TTL", 48 * 3600, parse_int(60),
            "Lifetime of an emailed verification link, in seconds (default 48 hours)."),
    Setting("SVC_RESET_TOKEN_TTL", 3600, parse_int(60),
            "Lifetime of an emailed password-reset link, in seconds (default 1 hour)."),
    Setting("SVC_INVITE_TOKEN_TTL", 7 * 24 * 3600, parse_int(60),
            "Lifetime of an emailed invitation link, in seconds (default 7 days)."),
]
_TTL = {VERIFY_EMAIL: "verify_token_ttl", RESET_PASSWORD: "reset_token_ttl", INVITE: "invite_token_ttl"}
_DEFAULT_TTL = {s.name: s.default for s in SETTINGS}

# One message for every failure (unknown, used, expired, other purpose, other site): the
# caller learns nothing about which tokens exist.
INVALID_MESSAGE = "The link is invalid or has expired"


def invalid() -> ApiError:
    """The one error for every unusable token."""
    return ApiError.validation(INVALID_MESSAGE, path=["token"])


def token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def ttl_seconds(kernel: Any, purpose: str) -> int:
    name = _TTL[purpose]
    return int(kernel.settings.get(name, _DEFAULT_TTL[name]))



async def issue(kernel: Any, db: SiteDB, user_id: str, purpose: str) -> str:
    """A fresh token for ``user_id`` in the site of ``db``; returns the raw token (never stored).

    Older unused tokens of the same user and purpose in this site are dropped: only the latest
    email's link works, so a leaked older mail is worth nothing.
    """
    await db.execute(db.delete(one_time_tokens).where(
        one_time_tokens.c.user_id == user_id, one_time_tokens.c.purpose == purpose,
        one_time_tokens.c.used_at.is_(None)))
    raw = secrets.token_urlsafe(32)
    now = now_utc()
    await db.insert(one_time_tokens, {
        "id": uuid7(), "user_id": user_id, "purpose": purpose, "token_hash": token_hash(raw),
        "created_at": now, "expires_at": now + dt.timedelta(seconds=ttl_seconds(kernel, purpose)),
        "used_at": None,
    })
    return raw


async def consume(db: SiteDB, raw: Any, purpose: str) -> str:
    """Mark the token used and return its user id; 400 ``VALIDATION_FAILED`` for any bad token."""
    if not isinstance(raw, str) or not 16 <= len(raw) <= 256:
        raise invalid()
    row = await db.one(db.select(one_time_tokens).where(
        one_time_tokens.c.token_hash == token_hash(raw), one_time_tokens.c.purpose == purpose))
    now = now_utc()
    if row is None or row["used_at"] is not None or aware(row["expires_at"]) <= now:
        raise invalid()
    result = await db.execute(db.update(one_time_tokens).where(
        one_time_tokens.c.id == row["id"], one_time_tokens.c.used_at.is_(None)).values(used_at=now))
    if result.rowcount != 1:  # a concurrent request used it first
        raise invalid()
    return str(row["user_id"])
