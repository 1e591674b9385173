"""Falcon resources of transform presets and folders (``presets.py`` and ``folders.py`` do the work)."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from plugins.files import folders
from plugins.files.assets import presets


class PresetsResource:
    """``GET, POST /transform-presets``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        data = await presets.list_presets(request_context(req))
        send_data(resp, data, meta={"total": len(data)})

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await presets.create(ctx, await read_json(req)), status=201)


class PresetResource:
    """``PATCH, DELETE /transform-presets/{id}``."""

    async def on_patch(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await presets.update(ctx, id, await read_json(req)))

    async def on_delete(self, req: Any, resp: Any, id: str) -> None:
        await presets.delete(request_context(req), id)
        send_no_content(resp)


class FoldersResource:
    """``GET /folders`` (``?parent=<id>``, or ``?parent=null`` for the top), ``POST /folders``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        parent = req.get_param("parent")
        data = await folders.list_folders(request_context(req), None if parent == "null" else parent,
                                          top=parent == "null")
        send_data(resp, data, meta={"total": len(data)})

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await folders.create(ctx, await read_json(req)), status=201)
