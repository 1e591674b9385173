"""Falcon resources of ``/site``, ``/me/preferences`` and ``/presets``."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from plugins.settings.site import preferences, presets, site_config


class SiteResource:
    """``GET, PATCH /site``: the current site's configuration."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await site_config.get_site_config(ctx.kernel, ctx.require_site()))

    async def on_patch(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await site_config.patch_site_config(ctx, await read_json(req)))


class PreferencesResource:
    """``GET, PATCH /me/preferences``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        data, meta = await preferences.get_preferences(request_context(req))
        send_data(resp, data, meta=meta)

    async def on_patch(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        data, meta = await preferences.patch_preferences(ctx, await read_json(req))
        send_data(resp, data, meta=meta)


class PresetsResource:
    """``GET, POST /presets``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await presets.list_presets(request_context(req), req.get_param("collection")))

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await presets.create(ctx, await read_json(req)), status=201)


class EffectivePresetResource:
    """``GET /presets/effective?collection=``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await presets.effective(request_context(req), req.get_param("collection")))


class BookmarksResource:
    """``GET /presets/bookmarks?collection=``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await presets.list_presets(ctx, req.get_param("collection"), bookmarks_only=True))


class PresetResource:
    """``PATCH, DELETE /presets/{id}``."""

    async def on_get(self, req: Any, resp: Any, preset_id: str) -> None:
        send_data(resp, await presets.get_one(request_context(req), preset_id))

    async def on_patch(self, req: Any, resp: Any, preset_id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await presets.update_preset(ctx, preset_id, await read_json(req)))

    async def on_delete(self, req: Any, resp: Any, preset_id: str) -> None:
        await presets.delete_preset(request_context(req), preset_id)
        send_no_content(resp)
