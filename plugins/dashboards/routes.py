"""Falcon resources of ``/dashboards`` (``service.py`` does the work)."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from plugins.dashboards import service

CACHE_HEADER = "X-Svc-Panel-Cache"


class PanelsResource:
    """``GET, POST /dashboards/{id}/panels``."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await service.list_panels(request_context(req), id))

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await service.create_panel(ctx, id, await read_json(req)), status=201)


class PanelResource:
    """``PATCH, DELETE /dashboards/{id}/panels/{panel_id}``."""

    async def on_patch(self, req: Any, resp: Any, id: str, panel_id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await service.update_panel(ctx, id, panel_id, await read_json(req)))

    async def on_delete(self, req: Any, resp: Any, id: str, panel_id: str) -> None:
        await service.delete_panel(request_context(req), id, panel_id)
        send_no_content(resp)


class PanelDataResource:
    """``POST /dashboards/{id}/panels/{panel_id}/data``: the panel run as the caller."""

    async def on_post(self, req: Any, resp: Any, id: str, panel_id: str) -> None:
        result, cached = await service.run_panel(request_context(req), id, panel_id)
        resp.set_header(CACHE_HEADER, "hit" if cached else "miss")
        send_data(resp, result["data"], meta=result["meta"])


class PreviewResource:
    """``POST /dashboards/{id}/panels/preview``: dry-run the PanelQuery of the body."""

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        result = await service.preview(ctx, id, await read_json(req))
        send_data(resp, result["data"], meta=result["meta"])
