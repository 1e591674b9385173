"""``POST /users/{user_id}/impersonate``: an admin acts as a member of the site, on the record.

The token is an ordinary access token for the target, bound to the site, with an ``imp``
claim naming the admin (``principal_from_token`` maps it to ``Principal.impersonator_id``,
so every audit record written with it names both). It is short-lived and has no refresh
token: an impersonation ends by itself.
"""

from __future__ import annotations

from typing import Any

from kernel.auth.principal import Principal
from kernel.auth.tokens import issue_access_token
from kernel.base.errors import ApiError
from kernel.policy import audit
from plugins.access.api import membership
from plugins.access.api import realm as access_realm
from plugins.accounts import service

IMPERSONATION_TTL = 900  # seconds; capped further by SVC_ACCESS_TOKEN_TTL


async def impersonate(kernel: Any, principal: Principal, site_id: str, user_id: str, *, ip: str | None = None,
                      request_id: str | None = None) -> dict[str, Any]:
    """An access token for ``user_id`` in ``site_id`` that records ``principal`` as impersonator."""
    if principal.kind != "user" or not principal.user_id or not principal.is_admin:
        raise ApiError.forbidden("Only an admin user may impersonate")
    if principal.impersonator_id:
        raise ApiError.forbidden("An impersonation session cannot impersonate again")
    if user_id == principal.user_id:
        raise ApiError.validation("You cannot impersonate yourself", path=["user_id"])
    target = await service.find_user(kernel, user_id)
    if target is not None and target["is_instance_admin"]:
        raise ApiError.forbidden("The instance admin cannot be impersonated")
    async with kernel.unit_of_work(site_id, principal, request_id) as uow:
        # Not a member of this site: as far as this site is concerned the user does not exist.
        if target is None or await membership(uow.conn, site_id, user_id) is None:
            raise ApiError(404, "RECORD_NOT_FOUND", "No such user in this site")
        if target["status"] != "active":
            raise ApiError.conflict("Only an active user can be impersonated")
        ttl = min(IMPERSONATION_TTL, kernel.settings.access_token_ttl)
        token = issue_access_token(kernel.settings.resolved_jwt_secret(), user_id=user_id, site_id=site_id,
                                   token_version=target["token_version"], ttl=ttl,
                                   extra={"imp": principal.user_id,
                                          "realm": await access_realm(uow.conn, site_id, user_id)})
        await audit.record(uow.conn, action="user.impersonate", site_id=site_id, principal=principal,
                           target_type="user", target_id=user_id, details={"expiresIn": ttl}, ip=ip,
                           request_id=request_id)
    return {"token": token, "expiresIn": ttl, "user": service.public_user(target)}
