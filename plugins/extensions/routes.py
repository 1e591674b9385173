"""Falcon resources of ``/extensions`` (``service.py`` does the work)."""

from __future__ import annotations

from typing import Any

from kernel.http.media import flag_param, read_body, read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from plugins.extensions import service


class ExtensionsResource:
    """``GET /extensions``: installed extensions (with the state in the site named, if any)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await service.list_extensions(request_context(req)))


class UploadResource:
    """``POST /extensions/upload``: multipart ``bundle`` and ``signature``; ``?replace=true``
    upgrades an installed extension of the same name in place (200)."""

    async def on_post(self, req: Any, resp: Any) -> None:
        replace = flag_param(req, "replace")
        raw = await read_body(req, service.MAX_UPLOAD_BYTES)
        bundle, signature = service.parse_upload(raw, req.content_type)
        data, created = await service.install(request_context(req), bundle, signature, replace=replace)
        send_data(resp, data, status=201 if created else 200)


class ExtensionResource:
    """``GET, DELETE /extensions/{id}``."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await service.get(request_context(req), id))

    async def on_delete(self, req: Any, resp: Any, id: str) -> None:
        await service.uninstall(request_context(req), id)
        send_no_content(resp)


class EnableResource:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await service.enable(request_context(req), id))


class DisableResource:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await service.disable(request_context(req), id))


class CapabilitiesResource:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await service.grant(ctx, id, await read_json(req)))


class AvailabilityResource:
    """-- govern43: ``PUT /extensions/{id}/availability``: what the instance admin offers the site."""

    async def on_put(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await service.set_availability(ctx, id, await read_json(req)))


class UiManifestResource:
    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await service.ui_manifest(request_context(req)))


class KeysResource:
    """``GET, POST /extensions/publisher-keys``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await service.list_keys(request_context(req)))

    async def on_post(self, req: Any, resp: Any) -> None:
        data, created = await service.put_key(request_context(req), await read_json(req))
        send_data(resp, data, status=201 if created else 200)
