"""Falcon resources of ``/settings`` (``service.py`` does the work)."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, reject_unknown, send_data
from kernel.http.middleware import request_context
from plugins.settings import keys, service


class SettingsResource:
    """``GET, PATCH /settings``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await service.list_settings(request_context(req)))

    async def on_patch(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await service.patch_settings(ctx, await read_json(req)))


class SettingResource:
    """``GET, PUT /settings/{key}``."""

    async def on_get(self, req: Any, resp: Any, key: str) -> None:
        send_data(resp, await service.get_one(request_context(req), key))

    async def on_put(self, req: Any, resp: Any, key: str) -> None:
        body = await read_json(req)
        reject_unknown(body, {"value"})
        if "value" not in body:
            from kernel import ApiError

            raise ApiError.validation("'value' is required (null unsets the setting)", path=["value"])
        send_data(resp, await service.put_one(request_context(req), key, body["value"]))


class KeysResource:
    """``GET /settings/keys``: the keys plugins declare, with their types (admin)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, keys.described(keys.registry(request_context(req).kernel)))


class ExportResource:
    """``POST /settings/export``."""

    async def on_post(self, req: Any, resp: Any) -> None:
        await read_json(req, required=False)
        send_data(resp, await service.export_bundle(request_context(req)))


class ApplyResource:
    """``POST /settings/apply`` (``?mode=replace`` also unsets settings absent from the bundle)."""

    async def on_post(self, req: Any, resp: Any) -> None:
        mode = req.get_param("mode") or "merge"
        if mode not in ("merge", "replace"):
            from kernel import ApiError

            raise ApiError.validation("mode must be merge or replace", path=["mode"])
        body = await read_json(req)
        send_data(resp, await service.apply_bundle(request_context(req), body, replace=mode == "replace"))
