"""Auth routes: the current user (login lives in routes_sessions)."""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.http.media import send_data
from kernel.http.middleware import request_context
from plugins.accounts import service


def user_principal(req: Any) -> Any:
    """The caller's principal, which must be a user (an API key is 403)."""
    principal = request_context(req).principal
    if principal.user_id is None:
        raise ApiError.forbidden("This principal is not a user")
    return principal


class MeResource:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        row = await service.find_user(self.kernel, user_principal(req).user_id)
        if row is None:
            raise ApiError.unauthenticated()
        send_data(resp, service.public_user(row))


class MySitesResource(MeResource):
    """``GET /me/sites``: the sites the caller may sign in to, for a site switcher
    (docs/accounts.md#my-sites)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await service.my_sites(self.kernel, user_principal(req)))
