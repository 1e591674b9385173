"""Falcon resources of ``/releases`` (``service.py`` and ``publisher.py`` do the work)."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.releases import api, service
from plugins.releases.rollback import parse_body as parse_rollback_body


class ReleasesResource:
    """``GET, POST /releases``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        limit, offset = pagination(req, default_limit=25, max_limit=200)
        data, total = await service.list_page(ctx, req.get_param("status"), limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await service.create(ctx, await read_json(req)), status=201)


class ReleaseResource:
    """``GET, PATCH, DELETE /releases/{id}``."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await service.get(request_context(req), id))

    async def on_patch(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await service.update(ctx, id, await read_json(req)))

    async def on_delete(self, req: Any, resp: Any, id: str) -> None:
        await service.delete(request_context(req), id)
        send_no_content(resp)


class RollbackResource:
    """``POST /releases/{id}/rollback`` (body ``{ force? }``): every published item back to its
    revision before the release."""

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        force = parse_rollback_body(await read_json(req, required=False))
        send_data(resp, await api.rollback(request_context(req), id, force=force))


class PublishResource:
    """``POST /releases/{id}/publish``: ``{ release, status, outcomes }``, 200 even when blocked."""

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await api.publish(request_context(req), id))
