"""Instance-admin endpoints for sites: ``/sites`` and ``/sites/{site_id}``."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, reject_unknown, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from kernel.tenancy import service


class SitesResource:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        limit, offset = pagination(req, default_limit=100)
        data, total = await service.list_sites(self.kernel, limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))

    async def on_post(self, req: Any, resp: Any) -> None:
        body = await read_json(req)
        reject_unknown(body, {"id", "name"})
        site = await service.create_site(self.kernel, body.get("id"), body.get("name"),
                                         request_context(req).principal)
        send_data(resp, site, status=201)


class SiteResource:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def _load(self, site_id: str) -> dict[str, Any]:
        site = await service.get_site(self.kernel, site_id)
        if site is None:
            from kernel.base.errors import ApiError

            raise ApiError(404, "SITE_NOT_FOUND", f"Unknown site '{site_id}'")
        return site

    async def on_get(self, req: Any, resp: Any, site_id: str) -> None:
        send_data(resp, await self._load(site_id))

    async def on_patch(self, req: Any, resp: Any, site_id: str) -> None:
        body = await read_json(req)
        reject_unknown(body, {"name"})
        await self._load(site_id)
        if "name" in body:
            site = await service.rename_site(self.kernel, site_id, body["name"], request_context(req).principal)
        else:
            site = await self._load(site_id)
        send_data(resp, site)

    async def on_delete(self, req: Any, resp: Any, site_id: str) -> None:
        await service.delete_site(self.kernel, site_id, request_context(req).principal)
        send_no_content(resp)
