"""Falcon resources of the realtime plugin: tickets, push, notifications."""

from __future__ import annotations

from typing import Any

from kernel import ApiError
from kernel.http.media import read_json, reject_unknown, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.access import api as access_api
from plugins.realtime import notifications, push, tickets

FRONTEND = "frontend"


async def realm_of(ctx: Any) -> str:
    """``frontend`` for a subscriber (its token's claim, or its role now), else ``studio``."""
    principal = ctx.principal
    if principal.claims.get("realm") == FRONTEND:
        return FRONTEND
    if principal.kind != "user" or not principal.user_id or principal.is_admin:
        return "studio"
    async with ctx.kernel.db.connect() as conn:
        return await access_api.realm(conn, ctx.require_site(), principal.user_id)


async def require_studio(ctx: Any) -> str:
    site_id = ctx.require_site()
    if await realm_of(ctx) == FRONTEND:
        raise ApiError.forbidden("Frontend-realm tokens take an audience ticket (POST /realtime/audience-ticket)")
    return site_id


def require_user(ctx: Any) -> str:
    if not ctx.principal.user_id:
        raise ApiError.forbidden("Push subscriptions belong to users; API keys have none")
    return str(ctx.principal.user_id)


class TicketResource:
    """``POST /realtime/ticket`` (studio) and ``/realtime/audience-ticket`` (end users)."""

    def __init__(self, kernel: Any, audience: str) -> None:
        self.kernel = kernel
        self.audience = audience

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        # The caller before the body.
        site_id = await require_studio(ctx) if self.audience == tickets.STUDIO else ctx.require_site()
        reject_unknown(await read_json(req, required=False), set())
        resp.set_header("Cache-Control", "no-store")
        send_data(resp, await tickets.mint(self.kernel, site_id, ctx.principal, self.audience))


class VapidKeyResource:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, {"publicKey": push.public_key(self.kernel)})


class PushStatusResource:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        site_id = ctx.require_site()
        send_data(resp, {"vapidConfigured": push.configured(self.kernel), "realtimeAvailable": True,
                         "subscriptions": await push.count_mine(self.kernel, site_id, ctx.principal.user_id)})


class PushTestResource:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        site_id = await require_studio(ctx)  # the caller before the body
        reject_unknown(await read_json(req, required=False), set())
        note = await notifications.create(
            self.kernel, site_id, kind="push.test", severity="info", title="Test notification",
            body="Web push and the realtime channel work for this site.")
        send_data(resp, {"notification": note, "pushQueued": push.configured(self.kernel)}, status=202)


class PushSubscriptionsResource:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        site_id = ctx.require_site()
        user_id = require_user(ctx)
        body = await read_json(req)
        record, created = await push.upsert(self.kernel, site_id, user_id, await realm_of(ctx), body)
        send_data(resp, record, status=201 if created else 200)

    async def on_delete(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        site_id = ctx.require_site()
        user_id = require_user(ctx)
        await push.remove(self.kernel, site_id, user_id, await read_json(req))
        send_no_content(resp)


class NotificationsResource:
    """``GET /notifications``: the site's notifications and the caller's own, newest first
    (``?handled=true|false``), for any member of the site."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        # Any member: the same notifications reach every session of the site as frames, audience
        # tickets included (docs/realtime.md); marking one handled stays the studio's.
        site_id = ctx.require_site()
        limit, offset = pagination(req)
        raw = req.get_param("handled")
        if raw not in (None, "true", "false"):
            raise ApiError.validation("'handled' is true or false", path=["query", "handled"])
        handled = None if raw is None else raw == "true"
        items, total = await notifications.list_page(self.kernel, site_id, ctx.principal.user_id, limit=limit,
                                                     offset=offset, handled=handled)
        send_data(resp, items, meta=page_meta(total, limit, offset))


class NotificationResource:
    """``PATCH /notifications/{id}`` ``{ handled: boolean }``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_patch(self, req: Any, resp: Any, notification_id: str) -> None:
        ctx = request_context(req)
        site_id = await require_studio(ctx)
        body = await read_json(req)
        reject_unknown(body, {"handled"})
        handled = body.get("handled")
        if not isinstance(handled, bool):
            raise ApiError.validation("'handled' is true or false", path=["handled"])
        if len(notification_id) > 36:
            raise ApiError(404, "RECORD_NOT_FOUND", "No such notification")
        send_data(resp, await notifications.mark_handled(self.kernel, site_id, notification_id, handled,
                                                         user_id=ctx.principal.user_id))
