"""Auth routes: login and the current user."""

from __future__ import annotations

from typing import Any

from kernel.bus import EventContext
from kernel.errors import ApiError
from kernel.http.media import read_json, send_data
from kernel.http.middleware import request_context
from plugins.accounts import service


class LoginResource:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        body = await read_json(req)
        data = await service.login(self.kernel, body.get("email"), body.get("password"), ctx.site_id)
        event_ctx = EventContext(site_id=ctx.site_id, kernel=self.kernel, request_id=ctx.request_id)
        await self.kernel.bus.action("auth.login", {"userId": data["user"]["id"]}, event_ctx)
        send_data(resp, data)


class MeResource:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        principal = request_context(req).principal
        if principal.user_id is None:
            raise ApiError.forbidden("This principal is not a user")
        row = await service.find_user(self.kernel, principal.user_id)
        if row is None:
            raise ApiError.unauthenticated()
        send_data(resp, service.public_user(row))
