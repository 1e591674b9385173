"""Falcon resources of files, uploads, assets and media (the services do the work)."""

from __future__ import annotations

from typing import Any

from kernel import ApiError
from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.tenancy.service import get_site_cached
from plugins.files import permissions, records, service
from plugins.files.assets import assets
from plugins.files.records import META_KEYS_PATCH
from plugins.files.uploads import importer, policy, uploads
from plugins.items import api as items


def _params(req: Any) -> dict[str, Any]:
    return dict(req.params)


def base_url(req: Any) -> str:
    return f"{req.scheme}://{req.netloc}"


class FilesResource:
    """``GET /files`` (media:read; the items query language), ``POST /files`` (register a
    presigned upload)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        query = items.parse_query(req.params)
        data, meta = await records.list_page(ctx, query)
        send_data(resp, data, meta=meta)

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        record, created = await uploads.register(ctx, await read_json(req))
        send_data(resp, record, status=201 if created else 200)


class FileResource:
    """``GET, PATCH, DELETE /files/{id}``."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await records.get(request_context(req), id))

    async def on_patch(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        # The permission first, then the body: a caller without media:update learns nothing more.
        condition = await permissions.require(ctx, "media:update")
        changes = records.check_meta(await read_json(req), allowed=META_KEYS_PATCH)
        send_data(resp, await service.update(ctx, condition, id, changes))

    async def on_delete(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        condition = await permissions.require(ctx, "media:delete")
        await service.delete(ctx, condition, file_id=id)
        send_no_content(resp)


class UploadUrlResource:
    """``POST /files/upload-url { filename, contentType }`` -> ``{ url, key, expiresAt }``."""

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await uploads.upload_url(ctx, await read_json(req), base_url(req)), status=201)


class UploadResource:
    """``PUT /files/upload/{key}``: a raw-body upload named ``key`` (bearer), or the PUT of a
    signed local upload URL (``site``, ``expires``, ``signature`` in the query; no bearer)."""

    async def on_put(self, req: Any, resp: Any, key: str) -> None:
        ctx = request_context(req)
        if req.get_param("signature") is not None:
            site_id = uploads.signed_site(ctx.kernel, key, _params(req))
            if site_id is None or (ctx.site_id is not None and ctx.site_id != site_id):
                raise ApiError.forbidden("The upload URL is not valid (signature, site or expiry)",
                                         reason="upload_url")
            site = await get_site_cached(ctx.kernel, site_id)
            if site is None:
                raise ApiError(404, "SITE_NOT_FOUND", f"Unknown site '{site_id}'")
            ctx.site_id, ctx.site = site_id, site
            await uploads.receive_signed(ctx, key, req.content_type, req.content_length, req.stream)
            send_no_content(resp)
            return
        ctx.require_site()
        record, created = await uploads.direct(ctx, key, req.content_type, req.content_length, req.stream)
        send_data(resp, record, status=201 if created else 200)


class ImportResource:
    """``POST /files/import { url, data? }``."""

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        record, created = await importer.import_url(ctx, await read_json(req))
        send_data(resp, record, status=201 if created else 200)


def send_asset(req: Any, resp: Any, asset: assets.Asset) -> None:
    ctx = request_context(req)
    max_age = ctx.kernel.settings.get("files_asset_max_age")
    resp.set_header("ETag", asset.etag)
    scope = "private" if ctx.principal.is_authenticated else "public"
    resp.set_header("Cache-Control", f"{scope}, max-age={max_age}")
    if asset.not_modified:
        resp.status = 304
        resp.content_type = None
        return
    resp.content_type = asset.mime
    resp.set_header("Content-Disposition", assets.disposition(asset.filename, asset.attachment))
    if asset.mime == "image/svg+xml":
        resp.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
    if asset.span is not None:
        first, last, size = asset.span
        resp.status = 206
        resp.set_header("Content-Range", f"bytes {first}-{last}/{size}")
    if asset.stream is not None:
        resp.stream = asset.stream
        resp.content_length = asset.length
    else:
        resp.data = asset.body


def ranged(req: Any) -> dict[str, str | None]:
    """The request's ``Range`` and ``If-Range`` for ``assets.answer``."""
    return {"range_header": req.get_header("Range"), "if_range": req.get_header("If-Range")}


class AssetResource:
    """``GET /assets/{id}``: the original or a transform (media:read); ``GET
    /assets/{site_id}/{id}`` (``on_get_site``): the same in the site the path names (the
    kernel resolved it and the caller there: docs/files.md#serving-files-to-a-front-end)."""

    async def on_get_site(self, req: Any, resp: Any, id: str, file_id: str) -> None:
        await self.on_get(req, resp, file_id)

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        resp.set_header("X-Content-Type-Options", "nosniff")
        resp.set_header("Accept-Ranges", "bytes")
        ctx = request_context(req)
        row = await records.readable(ctx, file_id=id)
        transform = await assets.transform_of(ctx, _params(req))
        download = req.get_param_as_bool("download", default=False)
        asset = await assets.answer(ctx, row, transform, req.get_header("If-None-Match"), force_attachment=download,
                                    **ranged(req))
        send_asset(req, resp, asset)


class MediaResource:
    """``POST, GET, DELETE /media/{key}``."""

    async def on_post(self, req: Any, resp: Any, key: str) -> None:
        ctx = request_context(req)
        record, created = await uploads.direct(ctx, key, req.content_type, req.content_length, req.stream)
        send_data(resp, record, status=201 if created else 200)

    async def on_get(self, req: Any, resp: Any, key: str) -> None:
        resp.set_header("X-Content-Type-Options", "nosniff")
        resp.set_header("Accept-Ranges", "bytes")
        ctx = request_context(req)
        row = await records.readable(ctx, key=key)
        transform = await assets.transform_of(ctx, _params(req))
        if transform is not None:
            if not assets.is_raster(row):
                raise ApiError.validation("Transforms apply to raster images only", path=["query"])
            resp.status = 302
            resp.set_header("Location", f"/api/v1/assets/{row['id']}?{transform.canonical(row['type'])}")
            return
        asset = await assets.answer(ctx, row, None, req.get_header("If-None-Match"), force_attachment=True,
                                    **ranged(req))
        send_asset(req, resp, asset)

    async def on_delete(self, req: Any, resp: Any, key: str) -> None:
        ctx = request_context(req)
        condition = await permissions.require(ctx, "media:delete")
        await service.delete(ctx, condition, key=key)
        send_no_content(resp)


class UploadConfigResource:
    """``GET /uploads/config`` (any member), ``PUT /uploads/config`` (site admin)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, (await policy.resolve(request_context(req))).to_dict())

    async def on_put(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, (await policy.update(ctx, await read_json(req))).to_dict())
