"""Falcon resources: the caller's effective permissions, the check debugger, subscriber access."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from plugins.access import subscriber
from plugins.access.permissions import effective


class PermissionsMeResource:
    """``GET /permissions/me``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await effective.my_permissions(request_context(req)))


class PermissionsCheckResource:
    """``POST /permissions/check`` ``{ collection, action, userId? }``."""

    async def on_post(self, req: Any, resp: Any) -> None:
        body = await read_json(req)
        send_data(resp, await effective.check(request_context(req), body))


class SubscriberAccessResource:
    """``/users/subscriber-access``: GET the grants, POST a grant (201 new, 200 already there)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await subscriber.list_grants(request_context(req)))

    async def on_post(self, req: Any, resp: Any) -> None:
        body = await read_json(req)
        data, created = await subscriber.grant(request_context(req), body)
        send_data(resp, data, status=201 if created else 200)


class SubscriberGrantResource:
    """``DELETE /users/subscriber-access/{collection}``: revoke; 204."""

    async def on_delete(self, req: Any, resp: Any, collection: str) -> None:
        await subscriber.revoke(request_context(req), collection)
        send_no_content(resp)
