"""Falcon resources of ``/admin/encryption``, ``/admin/field-access-log`` and ``/admin/sar``
(``service.py`` does the work; every route is ``auth="admin"``)."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, send_data
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.regulated import service


class KeysResource:
    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await service.list_keys(request_context(req)))


class RotateResource:
    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await service.rotate(request_context(req), await read_json(req)))


class RewrapResource:
    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await service.rewrap(request_context(req), await read_json(req, required=False)))


class EnvelopeResource:
    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await service.envelope_state(request_context(req)))

    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await service.toggle(request_context(req), await read_json(req)))


class MigrateResource:
    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await service.migrate(request_context(req), await read_json(req, required=False)))


class FieldAccessLogResource:
    async def on_get(self, req: Any, resp: Any) -> None:
        limit, offset = pagination(req, default_limit=50, max_limit=200)
        params = {k: req.get_param(k) for k in ("collection", "itemId", "actorId")}
        data, total = await service.field_access_log(request_context(req), params, limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))


class SarExportResource:
    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await service.sar_export(request_context(req), await read_json(req)))
