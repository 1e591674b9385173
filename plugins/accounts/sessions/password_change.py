"""``POST /me/change-password``: verify the current password, store a new hash, end every session.

Bumping ``token_version`` makes every access token issued before the change fail at once
(``principal_from_token`` compares ``ver``); every refresh token is revoked. The device that
made the change gets a fresh session so it stays signed in (docs/decisions/change-password.md).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from kernel.auth.passwords import hash_password_async, verify_password_async
from kernel.auth.principal import Principal
from kernel.auth.usercache import users_changed
from kernel.base.errors import ApiError
from kernel.db.meta import now_utc
from kernel.policy import audit
from plugins.accounts import service
from plugins.accounts.sessions.session_control import require_user, revoke_all_of_user
from plugins.accounts.sessions.sessions import Client, start_session
from plugins.accounts.tables import users

MIN_PASSWORD = 8


def check_password_policy(password: Any, path: str = "newPassword") -> str:
    """The password if it meets the policy (8 to 1024 characters), else 400 with ``path``."""
    if not isinstance(password, str):
        raise ApiError.validation(f"'{path}' must be a string", path=[path])
    if len(password) < MIN_PASSWORD:
        raise ApiError.validation(f"'{path}' must be at least {MIN_PASSWORD} characters", path=[path])
    if len(password) > service.MAX_PASSWORD:
        raise ApiError.validation(f"'{path}' must be at most {service.MAX_PASSWORD} characters", path=[path])
    return password


async def store_password(uow: Any, user_id: str, new_hash: str) -> int:
    """Store ``new_hash`` as the user's password in ``uow``: tokens issued before fail at once
    (``token_version``), every refresh token is revoked, every process drops the cached identity.
    Returns how many sessions were ended."""
    await uow.conn.execute(update(users).where(users.c.id == user_id).values(
        password_hash=new_hash, token_version=users.c.token_version + 1, updated_at=now_utc()))
    revoked = await revoke_all_of_user(uow.conn, user_id)
    users_changed(uow, user_id)
    return revoked


async def change_password(kernel: Any, principal: Principal, current: str, new: str, site_id: str | None,
                          client: Client) -> dict[str, Any]:
    """Change the caller's password; returns a new session for the calling device."""
    user_id = require_user(principal)
    if principal.impersonator_id:
        # Whoever impersonates may act as the user, never take over the account.
        raise ApiError.forbidden("An impersonation session cannot change the password")
    check_password_policy(new)
    user = await service.find_user(kernel, user_id)
    if user is None:
        raise ApiError.unauthenticated()
    if not await verify_password_async(user["password_hash"], current):
        raise ApiError(401, "INVALID_CREDENTIALS", "The current password is wrong")
    new_hash = await hash_password_async(new)
    async with kernel.unit_of_work(site_id, principal, client.request_id) as uow:
        revoked = await store_password(uow, user_id, new_hash)
        fresh = (await uow.conn.execute(select(users).where(users.c.id == user_id))).mappings().one()
        # Same site binding as the token that asked, so the new session works where the old did.
        data = await start_session(kernel, uow.conn, fresh, principal.claims.get("site"), client)
        await audit.record(uow.conn, action="user.password_changed", site_id=site_id, principal=principal,
                           target_type="user", target_id=user_id, details={"sessionsRevoked": revoked},
                           ip=client.ip, request_id=client.request_id)
    return data
