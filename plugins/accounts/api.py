"""What other plugins may import from accounts (declare ``requires = ("accounts",)``).

``principal_current``: is a principal seen earlier (when a realtime ticket was minted) still
allowed now? A suspended or deleted user, a bumped token version, a revoked or expired
session, a deleted or expired API key all answer ``None``.

``verify_password``: a step-up check (regulated content's envelope toggle): does ``password``
match the caller's own password? An API key, an impersonation session or a user without a
password never passes. The route that asks declares the ``auth`` rate bucket, so every try
counts against the auth limit like a login.

``members_by_email`` and ``active_members``: the members of a site behind addresses (privacy's
consent and erasure), and its active members (editorial's reviewers). The tables stay accounts':
no other plugin's SQL names them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from kernel.auth.passwords import verify_password_async
from kernel.auth.principal import Principal
from kernel.db.meta import aware, iso, now_utc
from kernel.tenancy.scope import SiteDB
from plugins.access import api as access_api
from plugins.accounts import tables as _t
from plugins.accounts.sessions.sessions import live_sessions
from plugins.accounts.users.users import active_members as active_members
from plugins.accounts.users.users import members_by_email as members_by_email


def principal_record(principal: Principal) -> dict[str, Any]:
    """The JSON-safe parts of ``principal`` that ``principal_current`` re-checks (no secret)."""
    claims = principal.claims or {}
    return {
        "kind": principal.kind, "userId": principal.user_id, "apiKeyId": principal.api_key_id,
        "roleId": principal.role_id if principal.kind == "external" else None,
        "sessionId": claims.get("sid") if principal.kind == "user" else None,
        "tokenVersion": claims.get("ver") if principal.kind == "user" else None,
        "impersonatorId": principal.impersonator_id, "realm": claims.get("realm"),
    }


async def principal_current(kernel: Any, site_id: str, record: dict[str, Any]) -> Principal | None:
    """The principal ``record`` (from ``principal_record``) stands for, read again now, or None."""
    kind = record.get("kind")
    now = now_utc()
    async with kernel.db.connect() as conn:
        if kind == "api_key":
            db = SiteDB(site_id, conn)
            row = await db.one(db.select(_t.api_keys).where(_t.api_keys.c.id == record.get("apiKeyId")))
            if row is None or (row["expires_at"] is not None and aware(row["expires_at"]) <= now):
                return None
            return Principal(kind="api_key", api_key_id=row["id"], role_id=row["role_id"], site_id=site_id)
        if kind not in ("user", "external") or (kind == "user" and not record.get("userId")):
            return None
        user = None
        if record.get("userId"):
            u = _t.users.c
            user = (await conn.execute(select(u.id, u.email, u.status, u.token_version, u.is_instance_admin)
                                       .where(u.id == record["userId"]))).mappings().first()
            if user is None or user["status"] != "active":
                return None
        if kind == "external":
            return Principal(kind="external", user_id=record.get("userId"), site_id=site_id,
                             role_id=record.get("roleId"), email=user["email"] if user else None,
                             claims={"realm": record.get("realm")} if record.get("realm") else {})
        assert user is not None
        version = record.get("tokenVersion")
        if version is not None and version != user["token_version"]:
            return None
        session = record.get("sessionId")
        if session is not None:
            T = _t.refresh_tokens.c  # noqa: N806 - a table's columns
            live = (await conn.execute(select(T.id).where(
                T.family_id == session, T.user_id == user["id"], T.revoked_at.is_(None), T.rotated_at.is_(None),
                T.expires_at > now).limit(1))).first()
            if live is None:
                return None
        claims = {k: v for k, v in (("sid", session), ("ver", version), ("realm", record.get("realm")),
                                    ("sub", user["id"])) if v is not None}
        return Principal(kind="user", user_id=user["id"], site_id=site_id,
                         is_instance_admin=bool(user["is_instance_admin"]), email=user["email"],
                         impersonator_id=record.get("impersonatorId"), claims=claims)


async def profile_of(conn: Any, user_id: str) -> dict[str, Any] | None:
    """The spec's profile of a user ``{ id, email, firstName, lastName, avatar }`` plus ``status``
    and ``createdAt`` (never the password hash), or None (for the privacy plugin's data export)."""
    row = (await conn.execute(select(_t.users).where(_t.users.c.id == user_id))).mappings().first()
    if row is None:
        return None
    return {"id": row["id"], "email": row["email"], "firstName": row["first_name"], "lastName": row["last_name"],
            "avatar": row["avatar"], "status": row["status"], "createdAt": iso(row["created_at"])}


async def sessions_of(conn: Any, user_id: str) -> list[dict[str, Any]]:
    """The user's live sessions, redacted as ``GET /me/sessions`` shows them (no token, no hash)."""
    return await live_sessions(conn, user_id)


async def verify_password(kernel: Any, principal: Principal, password: Any) -> bool:
    """Whether ``password`` is ``principal``'s own current password (see the module's note)."""
    if principal.kind != "user" or not principal.user_id or principal.impersonator_id or not isinstance(password, str):
        return False
    async with kernel.db.connect() as conn:
        stored = (await conn.execute(select(_t.users.c.password_hash, _t.users.c.status).where(
            _t.users.c.id == principal.user_id))).mappings().first()
    if stored is None or stored["status"] != "active" or not stored["password_hash"]:
        return False
    return bool(await verify_password_async(stored["password_hash"], password))


# -- notifications: the people a notification for a site's admins reaches
async def active_users(conn: Any, user_ids: list[str]) -> list[str]:
    """Those of ``user_ids`` whose account is active, in the given order."""
    if not user_ids:
        return []
    found = {r[0] for r in (await conn.execute(select(_t.users.c.id).where(
        _t.users.c.id.in_(user_ids), _t.users.c.status == "active"))).all()}
    return [u for u in dict.fromkeys(user_ids) if u in found]


async def site_admins(conn: Any, site_id: str) -> list[str]:
    """The active users who administer ``site_id``: its members with admin access
    (``access.api.admin_members``), then the instance admins, who administer every site."""
    instance = [r[0] for r in (await conn.execute(select(_t.users.c.id).where(
        _t.users.c.is_instance_admin.is_(True), _t.users.c.status == "active").order_by(_t.users.c.id))).all()]
    return await active_users(conn, await access_api.admin_members(conn, site_id) + instance)
