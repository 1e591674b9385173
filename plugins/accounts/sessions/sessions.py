"""Sessions: password login, rotating refresh tokens, logout and the session lists.

A login starts a *family* (its id is the session id); each refresh marks the presented token
rotated and issues the next one in the same family. Presenting a rotated token again means
a copy leaked: the whole family is revoked. Only a SHA-256 of each token is stored.

Rows are reached three ways, each with its own scope: by the token's hash (the credential
itself, unique across sites; its site binding is checked right after), by user (a person's
own sessions span the sites they belong to) and by site through ``SiteDB`` (site admins).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select, update

from kernel import Setting
from kernel.auth.passwords import hash_password_async, needs_rehash, verify_password_async
from kernel.auth.principal import Principal
from kernel.auth.tokens import issue_access_token
from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.base.settings import parse_bool, parse_choice, parse_int
from kernel.db.meta import aware, iso, now_utc
from kernel.policy import audit
from kernel.tenancy.scope import SiteDB
from plugins.access.api import membership, realm
from plugins.accounts import service
from plugins.accounts.sessions.session_live import announce_sessions_changed
from plugins.accounts.tables import refresh_tokens, users

SETTINGS = [
    Setting("SVC_ACCESS_TOKEN_TTL", 900, parse_int(30), "Lifetime of an internal access token, in seconds."),
    Setting("SVC_ADMIN_EMAIL", "admin@example.com", str, "Instance admin created on first start."),
    Setting("SVC_ADMIN_PASSWORD", "", str,
            "Instance admin password on first start. Empty: a random one is printed once."),
    Setting("SVC_RATE_LIMIT_AUTH", 30, parse_int(0), "Auth endpoints, requests per minute per IP (0 disables)."),
    Setting("REFRESH_COOKIE_SAMESITE", "lax", parse_choice("lax", "strict", "none"),
            "SameSite attribute of the `svc_refresh` cookie.", attr="refresh_cookie_samesite"),
    Setting("REFRESH_COOKIE_DOMAIN", "", str, "Domain attribute of the `svc_refresh` cookie.",
            attr="refresh_cookie_domain"),
    Setting("REFRESH_COOKIE_SECURE", True, parse_bool, "Secure attribute of the `svc_refresh` cookie.",
            attr="refresh_cookie_secure"),
    Setting("SVC_REFRESH_TOKEN_TTL", 30 * 86400, parse_int(60),
            "Lifetime of a refresh token in seconds; each refresh starts it again (sliding)."),
]
COOKIE_NAME = "svc_refresh"
COOKIE_PATH = "/api/v1/auth"
T = refresh_tokens.c


@dataclass(frozen=True)
class Client:
    """Where a request came from, for session rows and audit records."""

    user_agent: str | None = None
    ip: str | None = None
    request_id: str | None = None


def hash_token(token: str) -> str:
    """The stored form of a refresh token (SHA-256 hex; 256 random bits need no salt)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def refresh_ttl(kernel: Any) -> int:
    return int(kernel.settings.get("refresh_token_ttl", SETTINGS[0].default))



def _invalid(message: str = "The refresh token is not valid; log in again") -> ApiError:
    return ApiError.unauthenticated(message)


async def execute_scoped(conn: Any, site_id: str | None, stmt: Any) -> Any:
    """Run ``stmt`` on refresh tokens of ``site_id`` only (``None``: instance-wide rows only)."""
    if site_id is None:
        return await conn.execute(stmt.where(T.site_id.is_(None)))
    db = SiteDB(site_id, conn)
    return await db.execute(db.scope(stmt, refresh_tokens))


async def insert_token(conn: Any, *, user_id: str, site_id: str | None, family_id: str, ttl: int,
                       client: Client) -> str:
    """Store a new refresh token of ``family_id``; returns the token (shown once, never stored)."""
    token = secrets.token_urlsafe(32)  # 256 random bits
    now = now_utc()
    row = {"id": uuid7(), "user_id": user_id, "family_id": family_id, "token_hash": hash_token(token),
           "created_at": now, "expires_at": now + dt.timedelta(seconds=ttl), "last_used_at": None,
           "user_agent": (client.user_agent or "")[:300] or None, "ip": (client.ip or "")[:64] or None}
    if site_id is None:
        await conn.execute(insert(refresh_tokens).values(site_id=None, **row))
    else:
        await SiteDB(site_id, conn).insert(refresh_tokens, row)
    return token


def access_token(kernel: Any, user: Any, site_id: str | None, family_id: str, realm: str) -> str:
    """An access token carrying the session id (``sid``), so ``/me/sessions`` can mark the current one,
    and the ``realm`` (``frontend`` for a subscriber, else ``studio``; ``access.api.realm``)."""
    return issue_access_token(kernel.settings.resolved_jwt_secret(), user_id=user["id"], site_id=site_id,
                              token_version=user["token_version"], ttl=kernel.settings.access_token_ttl,
                              extra={"sid": family_id, "realm": realm})


async def start_session(kernel: Any, conn: Any, user: Any, site_id: str | None, client: Client, *,
                        family_id: str | None = None) -> dict[str, Any]:
    """A new family for ``user`` bound like its access token (``family_id``: the session moving
    to ``site_id``, ``site_switch``); the login answer's data."""
    binding = None if user["is_instance_admin"] else site_id
    family_id = family_id or uuid7()
    refresh = await insert_token(conn, user_id=user["id"], site_id=binding, family_id=family_id,
                                 ttl=refresh_ttl(kernel), client=client)
    token = access_token(kernel, user, binding, family_id, await realm(conn, binding, user["id"]))
    return {"token": token, "refreshToken": refresh,
            "expiresIn": kernel.settings.access_token_ttl, "user": service.public_user(user)}


async def login(kernel: Any, email: Any, password: Any, site_id: str | None, client: Client) -> dict[str, Any]:
    """Check the credentials (and site membership), start a session, audit either way."""
    if not isinstance(password, str) or not password or len(password) > service.MAX_PASSWORD:
        raise ApiError.validation("'password' must be a non-empty string", path=["password"])
    email = service.normalise_email(email)
    user = await service.find_user_by_email(kernel, email)
    # Verify even when the user is unknown, so every failure takes the same time.
    ok = await verify_password_async(user["password_hash"] if user else None, password)
    reason = None if ok and user is not None else ("unknown_email" if user is None else "wrong_password")
    if reason is None and user["status"] != "active":
        reason = "inactive"
    if reason is None and site_id is not None and not user["is_instance_admin"]:
        async with kernel.db.connect() as conn:
            if await membership(conn, site_id, user["id"]) is None:
                reason = "not_member"
    if reason is None and site_id is None and not user["is_instance_admin"]:
        # Tokens of site members are always bound to one site; only the instance admin (an admin
        # of every site) logs in instance-wide. Said only after the password matched.
        raise ApiError.validation("Name the site to log in to: send X-Svc-Site", path=["headers", "X-Svc-Site"])
    if reason is not None:
        await _audit_login_failure(kernel, site_id, user, email, reason, client)
        # One message for every reason: no account or membership enumeration.
        raise ApiError(401, "INVALID_CREDENTIALS", "Wrong email or password")
    principal = Principal(kind="user", user_id=user["id"], site_id=site_id, email=user["email"])
    # The hashing parameters changed since this hash was made: the plain password is at hand
    # only now, so upgrade it (hashed before the transaction, which must not wait on argon2).
    rehashed = await hash_password_async(password) if needs_rehash(user["password_hash"]) else None
    async with kernel.unit_of_work(site_id, principal, client.request_id) as uow:
        if rehashed is not None:
            # Only if the hash is still the one verified: a password changed meanwhile wins.
            await uow.conn.execute(update(users).where(
                users.c.id == user["id"], users.c.password_hash == user["password_hash"]).values(password_hash=rehashed))
        data = await start_session(kernel, uow.conn, user, site_id, client)
        await audit.record(uow.conn, action="auth.login", site_id=site_id, principal=principal, target_type="user",
                           target_id=user["id"], ip=client.ip, request_id=client.request_id)
        uow.action("auth.login", {"userId": user["id"]})
    return data


async def _audit_login_failure(kernel: Any, site_id: str | None, user: Any, email: str, reason: str,
                               client: Client) -> None:
    # Committed on its own: the login fails, its record must not roll back with it. An unknown
    # address is kept (it passed the email check, so it is not a mistyped password).
    details: dict[str, Any] = {"reason": reason}
    if user is None:
        details["email"] = email
    async with kernel.db.begin() as conn:
        await audit.record(conn, action="auth.login_failed", site_id=site_id,
                           target_type="user" if user else "email", target_id=user["id"] if user else None,
                           details=details, ip=client.ip, request_id=client.request_id)


async def find_token(kernel: Any, presented: str) -> Any:
    """The row of a presented refresh token, by its hash (the credential is the scope here)."""
    async with kernel.db.connect() as conn:
        stmt = select(refresh_tokens).where(T.token_hash == hash_token(presented))
        return (await conn.execute(stmt)).mappings().first()


def _check_binding(row: Any, site_id: str | None) -> None:
    if row["site_id"] is not None and site_id is not None and row["site_id"] != site_id:
        raise _invalid("The refresh token belongs to another site")


async def revoke_family(conn: Any, site_id: str | None, family_id: str) -> int:
    """Revoke every live token of a family; returns how many rows changed."""
    stmt = update(refresh_tokens).where(T.family_id == family_id, T.revoked_at.is_(None))
    return (await execute_scoped(conn, site_id, stmt.values(revoked_at=now_utc()))).rowcount


async def reuse_detected(kernel: Any, row: Any, site_id: str | None, client: Client) -> ApiError:
    async with kernel.db.begin() as conn:
        await revoke_family(conn, row["site_id"], row["family_id"])
        # A session moved to another site (site_switch) keeps its family id there: end it too.
        # By the family id alone, like find_token by the hash: the credential is the scope.
        await conn.execute(update(refresh_tokens).where(T.family_id == row["family_id"], T.revoked_at.is_(None))
                           .values(revoked_at=now_utc()))
        await audit.record(conn, action="auth.refresh_reuse", site_id=row["site_id"] or site_id,
                           actor_id=row["user_id"], target_type="session", target_id=row["family_id"],
                           ip=client.ip, request_id=client.request_id)
    await announce_sessions_changed(kernel)  # its access tokens end too
    return _invalid("The refresh token was already used; every session of this login is revoked")


async def live_token(kernel: Any, presented: str, site_id: str | None, client: Client, *,
                      same_site: bool) -> tuple[Any, Any]:
    """The row of ``presented`` and its user, when it may be rotated now: live, never rotated
    (a second use revokes the family), its user active and still a member of its site.
    ``site_id`` is the request's site (``same_site``: the token must be bound to it)."""
    row = await find_token(kernel, presented)
    if row is not None and same_site:
        _check_binding(row, site_id)
    if row is None or row["revoked_at"] is not None:
        raise _invalid()
    if row["rotated_at"] is not None:
        raise await reuse_detected(kernel, row, site_id, client)
    if aware(row["expires_at"]) <= now_utc():
        raise _invalid("The refresh token has expired; log in again")
    user = await service.find_user(kernel, row["user_id"])
    if user is None or user["status"] != "active":
        raise _invalid()
    binding = row["site_id"]
    if binding is not None and not user["is_instance_admin"]:
        async with kernel.db.connect() as conn:
            if await membership(conn, binding, user["id"]) is None:
                raise _invalid("The user is no longer a member of the site")
    return row, user


async def spend(conn: Any, row: Any) -> bool:
    """Mark ``row`` rotated; False when another request spent it first (exactly one wins)."""
    stmt = update(refresh_tokens).where(T.id == row["id"], T.rotated_at.is_(None), T.revoked_at.is_(None))
    now = now_utc()
    return (await execute_scoped(conn, row["site_id"], stmt.values(rotated_at=now, last_used_at=now))).rowcount == 1


async def refresh(kernel: Any, presented: str, site_id: str | None, client: Client) -> dict[str, Any]:
    """Rotate ``presented``: a new access token and refresh token in the same family."""
    row, user = await live_token(kernel, presented, site_id, client, same_site=True)
    binding = row["site_id"]
    async with kernel.db.begin() as conn:
        # Conditional: of two refreshes racing with one token, exactly one wins the rotation.
        won = await spend(conn, row)
        new_token = None
        if won:
            new_token = await insert_token(conn, user_id=user["id"], site_id=binding, family_id=row["family_id"],
                                           ttl=refresh_ttl(kernel), client=client)
        user_realm = await realm(conn, binding, user["id"])
    if new_token is None:
        raise await reuse_detected(kernel, row, site_id, client)
    return {"token": access_token(kernel, user, binding, row["family_id"], user_realm), "refreshToken": new_token,
            "expiresIn": kernel.settings.access_token_ttl, "user": service.public_user(user)}


async def logout(kernel: Any, presented: str | None, site_id: str | None, client: Client) -> None:
    """Revoke the family of ``presented``; an unknown or spent token is already logged out."""
    row = await find_token(kernel, presented) if presented else None
    if row is None:
        return
    _check_binding(row, site_id)
    async with kernel.db.begin() as conn:
        revoked = await revoke_family(conn, row["site_id"], row["family_id"])
        if revoked:
            await audit.record(conn, action="auth.logout", site_id=row["site_id"] or site_id,
                               actor_id=row["user_id"], target_type="session", target_id=row["family_id"],
                               ip=client.ip, request_id=client.request_id)
    if revoked:
        await announce_sessions_changed(kernel)  # the session's access tokens end with it


async def live_sessions(conn: Any, user_id: str, site_id: str | None = None, *,
                        every_site: bool = True) -> list[dict[str, Any]]:
    """The user's live sessions (newest use first), redacted: never a token or hash.

    ``every_site``: all of the user's sessions; otherwise only those bound to ``site_id``.
    """
    stmt = select(refresh_tokens).where(T.user_id == user_id, T.revoked_at.is_(None), T.rotated_at.is_(None),
                                        T.expires_at > now_utc())
    if every_site:
        rows = (await conn.execute(stmt)).mappings().all()
    else:
        rows = (await execute_scoped(conn, site_id, stmt)).mappings().all()
    if not rows:
        return []
    families = [r["family_id"] for r in rows]
    started = dict((await conn.execute(
        select(T.family_id, func.min(T.created_at)).where(T.family_id.in_(families)).group_by(T.family_id)
    )).all())
    out = [{
        "id": r["family_id"], "userId": r["user_id"], "siteId": r["site_id"],
        "createdAt": iso(started.get(r["family_id"], r["created_at"])),
        # The live token was issued by the family's latest login or refresh: its last use.
        "lastUsedAt": iso(r["created_at"]), "expiresAt": iso(r["expires_at"]),
        "userAgent": r["user_agent"], "ip": r["ip"],
    } for r in rows]
    return sorted(out, key=lambda s: s["lastUsedAt"] or "", reverse=True)


def mark_current(items: list[dict[str, Any]], principal: Principal) -> list[dict[str, Any]]:
    """Add ``current``: the session the request's access token came from."""
    sid = principal.claims.get("sid") if principal.kind == "user" else None
    return [{**s, "current": sid is not None and s["id"] == sid} for s in items]


async def delete_site_rows(conn: Any, site_id: str) -> None:
    """Remove a deleted site's refresh and one-time tokens (no foreign key cascades them)."""
    from plugins.accounts.tables import one_time_tokens

    db = SiteDB(site_id, conn)
    await db.execute(db.delete(refresh_tokens))
    await db.execute(db.delete(one_time_tokens))
