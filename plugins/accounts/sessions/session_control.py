"""Listing and revoking sessions: a user's own (``/me/sessions``) and a site admin's view.

A user's own sessions span every site they belong to, so those queries are scoped by user.
An admin sees and revokes only sessions bound to the site the request names, of members of that
site (through ``SiteDB``). The instance admin too: it is an admin of every site, each through
that site's routes, and nothing of one site is visible or writable from another (contract,
"Tenancy"); the spec lists these routes among the site-admin ones, not the instance-level ones.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from kernel.auth.principal import Principal
from kernel.base.errors import ApiError
from kernel.db.meta import now_utc
from kernel.policy import audit
from plugins.access.api import membership
from plugins.accounts import service
from plugins.accounts.sessions.session_live import sessions_changed
from plugins.accounts.sessions.sessions import (
    Client,
    execute_scoped,
    live_sessions,
    mark_current,
    revoke_family,
)
from plugins.accounts.tables import refresh_tokens

T = refresh_tokens.c


def _session_not_found() -> ApiError:
    return ApiError(404, "RECORD_NOT_FOUND", "No such session")


def require_user(principal: Principal) -> str:
    """The user id of a person's principal; API keys and external tokens have no sessions here."""
    if principal.kind != "user" or not principal.user_id:
        raise ApiError.forbidden("Only a logged-in user has sessions")
    return principal.user_id


def _live_family(family_id: str) -> Any:
    # The family's newest token: neither rotated nor revoked.
    return select(refresh_tokens).where(T.family_id == family_id, T.revoked_at.is_(None), T.rotated_at.is_(None))


async def my_sessions(kernel: Any, principal: Principal) -> list[dict[str, Any]]:
    """The caller's live sessions, the current one marked. An impersonation session sees those
    bound to its site only, as the impersonating admin would through ``sessions_for_admin``."""
    user_id = require_user(principal)
    async with kernel.db.connect() as conn:
        if principal.impersonator_id:
            return mark_current(await live_sessions(conn, user_id, principal.site_id, every_site=False), principal)
        return mark_current(await live_sessions(conn, user_id), principal)


async def _record_revoked(conn: Any, site_id: str | None, principal: Principal, target_type: str,
                          target_id: str, details: dict[str, Any], client: Client) -> None:
    await audit.record(conn, action="session.revoked", site_id=site_id, principal=principal,
                       target_type=target_type, target_id=target_id, details=details, ip=client.ip,
                       request_id=client.request_id)


async def revoke_my_session(kernel: Any, principal: Principal, session_id: str, site_id: str | None,
                            client: Client) -> None:
    """Revoke one of the caller's sessions; another user's session is 404, never revoked."""
    user_id = require_user(principal)
    if service.clean_id(session_id) is None:  # cannot name a session (a NUL would be a 500 on PostgreSQL)
        raise _session_not_found()
    async with kernel.unit_of_work(site_id, principal, client.request_id) as uow:
        row = (await uow.conn.execute(_live_family(session_id).where(T.user_id == user_id))).mappings().first()
        if row is None:
            raise _session_not_found()
        await revoke_family(uow.conn, row["site_id"], session_id)
        sessions_changed(uow)  # its access tokens end with it (session_live.py)
        await _record_revoked(uow.conn, row["site_id"] or site_id, principal, "session", session_id,
                              {"userId": user_id}, client)


async def revoke_all_mine(kernel: Any, principal: Principal, site_id: str | None, client: Client) -> int:
    """Revoke every session of the caller (the current one too); returns how many tokens."""
    user_id = require_user(principal)
    async with kernel.unit_of_work(site_id, principal, client.request_id) as uow:
        count = await revoke_all_of_user(uow.conn, user_id)
        sessions_changed(uow)  # its access tokens end with it (session_live.py)
        await _record_revoked(uow.conn, site_id, principal, "user", user_id, {"count": count, "all": True}, client)
    return count


async def revoke_all_of_user(conn: Any, user_id: str) -> int:
    """Revoke every refresh token of ``user_id`` in every site (password change, sign-out everywhere)."""
    stmt = update(refresh_tokens).where(T.user_id == user_id, T.revoked_at.is_(None)).values(revoked_at=now_utc())
    return (await conn.execute(stmt)).rowcount


async def sessions_for_admin(kernel: Any, principal: Principal, site_id: str, user_id: str) -> list[dict[str, Any]]:
    """A user's sessions as an admin of ``site_id`` (the instance admin too) may see them:
    members of the site, sessions bound to it."""
    if service.clean_id(user_id) is None:
        raise ApiError(404, "RECORD_NOT_FOUND", "No such user")
    async with kernel.db.connect() as conn:
        if await membership(conn, site_id, user_id) is None:
            raise ApiError(404, "RECORD_NOT_FOUND", "No such user in this site")
        items = await live_sessions(conn, user_id, site_id, every_site=False)
    return mark_current(items, principal)


async def admin_revoke_session(kernel: Any, principal: Principal, site_id: str, session_id: str,
                               client: Client) -> None:
    """Revoke a session as an admin of ``site_id`` (the instance admin too); a session not bound
    to that site, or of a user who is no member of it, does not exist there (404)."""
    if service.clean_id(session_id) is None:
        raise _session_not_found()
    async with kernel.unit_of_work(site_id, principal, client.request_id) as uow:
        row = (await execute_scoped(uow.conn, site_id, _live_family(session_id))).mappings().first()
        if row is not None and await membership(uow.conn, site_id, row["user_id"]) is None:
            row = None
        if row is None:
            raise _session_not_found()
        await revoke_family(uow.conn, row["site_id"], session_id)
        sessions_changed(uow)  # its access tokens end with it (session_live.py)
        await _record_revoked(uow.conn, row["site_id"] or site_id, principal, "session", session_id,
                              {"userId": row["user_id"]}, client)
