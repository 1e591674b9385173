"""The upload surfaces, each through the one guard (``guard.py``) and into ``service.store``.

- ``direct``: ``PUT /files/upload/{key}`` and ``POST /media/{key}``: the raw body, the declared
  type as ``Content-Type``, ``key`` the file name.
- ``upload_url`` + ``receive_signed`` + ``register``: ``POST /files/upload-url`` reserves a
  pending upload and answers a presigned PUT URL (S3's own presigning on S3; on local storage
  a signed, expiring URL to ``PUT /files/upload/{token}``); ``POST /files { key }`` then reads
  the stored object back and runs the whole guard on it (the bytes may never have passed
  svc), deleting it when refused.
- ``import_url``: ``POST /files/import`` (``importer.py`` fetches; the bytes then pass here).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import aware, iso, now_utc
from kernel.http.media import reject_unknown
from plugins.files.errors import not_found
from plugins.files.records import check_filename, check_meta
from plugins.files.service import store
from plugins.files.tables import uploads
from plugins.files.uploads import guard, policy
from plugins.files.uploads.staging import stage

META_KEYS = frozenset({"title", "description", "tags", "folder"})


async def _guarded(
    ctx: Any,
    filename: str,
    content_type: str | None,
    length: int | None,
    chunks: AsyncIterator[bytes],
    meta: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], bool]:
    await guard.admit(ctx)  # the caller before the name or a byte
    check_filename(filename)
    effective = await policy.resolve(ctx)
    filetype = guard.declared(effective, filename, content_type, length)
    staged = await stage(ctx.kernel, chunks, effective.max_bytes)
    try:
        info = await guard.inspect(staged, filetype)
        return await store(ctx, filename, filetype, staged, info, meta)
    finally:
        staged.discard()


async def direct(
    ctx: Any, filename: str, content_type: str | None, length: int | None, chunks: AsyncIterator[bytes]
) -> tuple[dict[str, Any], bool]:
    """A raw-body upload named ``filename``: ``(record, created)``."""
    return await _guarded(ctx, filename, content_type, length, chunks)


# ------------------------------------------------------------------------------ presigned


def _signature(kernel: Any, site_id: str, token: str, expires: int) -> str:
    key = hmac.new(
        kernel.settings.resolved_jwt_secret().encode(), b"svc.files.presign", hashlib.sha256
    ).digest()
    return hmac.new(key, f"{site_id}\n{token}\n{expires}".encode(), hashlib.sha256).hexdigest()


def pending_key(site_id: str, token: str) -> str:
    return f"{site_id}/uploads/{token}"


async def upload_url(ctx: Any, body: dict[str, Any], base_url: str) -> dict[str, Any]:
    """``POST /files/upload-url { filename, contentType }`` -> ``{ url, key, expiresAt }``."""
    await guard.admit(ctx)  # the caller before the body
    reject_unknown(body, {"filename", "contentType"})
    filename = check_filename(body.get("filename"), ["filename"])
    if not isinstance(body.get("contentType"), str):
        raise ApiError.validation(
            "'contentType' is the MIME type the upload will declare", path=["contentType"]
        )
    filetype = guard.declared(await policy.resolve(ctx), filename, body["contentType"], None)
    site_id = ctx.require_site()
    token = uuid7()
    ttl = ctx.kernel.settings.get("files_upload_url_ttl")
    expires = int(time.time()) + ttl
    storage_key = pending_key(site_id, token)
    url = await ctx.kernel.storage.presigned_put_url(storage_key, ttl, filetype.mime)
    if url is None:  # local storage: a signed URL to this service's own upload route
        query = urlencode(
            {
                "site": site_id,
                "expires": expires,
                "signature": _signature(ctx.kernel, site_id, token, expires),
            }
        )
        url = f"{base_url}/api/v1/files/upload/{token}?{query}"
    expires_at = dt.datetime.fromtimestamp(expires, dt.UTC)
    async with ctx.unit_of_work() as uow:
        await uow.db.insert(
            uploads,
            {
                "id": token,
                "filename": filename,
                "type": filetype.mime,
                "storage_key": storage_key,
                "created_by": _who(ctx),
                "expires_at": expires_at,
                "created_at": now_utc(),
            },
        )
    return {"url": url, "key": token, "expiresAt": iso(expires_at)}


_DECIMAL = re.compile(r"[0-9]{1,12}")  # str.isdigit is true for "²", which int() refuses


def signed_site(kernel: Any, token: str, params: dict[str, Any]) -> str | None:
    """The site a signed local upload URL was issued for, or None when unsigned or invalid."""
    site_id, expires, signature = params.get("site"), params.get("expires"), params.get("signature")
    if not all(isinstance(v, str) for v in (site_id, expires, signature)) or not _DECIMAL.fullmatch(expires):
        return None
    if int(expires) < time.time():
        return None
    expected = _signature(kernel, site_id, token, int(expires))
    return site_id if hmac.compare_digest(expected, signature) else None


def _who(ctx: Any) -> str | None:
    principal = ctx.principal
    return principal.user_id or principal.api_key_id


async def _pending(db: Any, token: str, owner: str | None = None) -> Any:
    """A pending upload of the site; with ``owner``, only one that principal reserved."""
    row = await db.one(db.select(uploads).where(uploads.c.id == token))
    if (
        row is None
        or aware(row["expires_at"]) < now_utc()
        or (owner is not None and row["created_by"] != owner)
    ):
        raise not_found("pending upload")
    return row


async def receive_signed(
    ctx: Any, token: str, content_type: str | None, length: int | None, chunks: AsyncIterator[bytes]
) -> None:
    """The PUT of a signed local upload URL: the bytes pass the guard's size, type and content
    checks and wait in the pending object for ``POST /files``."""
    async with ctx.reader() as db:
        row = await _pending(db, token)
    effective = await policy.resolve(ctx)
    if (content_type or "").split(";")[0].strip().lower() != row["type"]:
        raise ApiError.validation(
            f"The upload URL was issued for {row['type']}", path=["headers", "Content-Type"]
        )
    filetype = guard.declared(effective, row["filename"], row["type"], length)
    staged = await stage(ctx.kernel, chunks, effective.max_bytes)
    try:
        await guard.inspect(staged, filetype)
        await ctx.kernel.storage.put_file(row["storage_key"], staged.path, filetype.mime, move=True)
    finally:
        staged.discard()


async def register(ctx: Any, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``POST /files { key, title?, description?, tags?, folder? }`` after a presigned upload: the whole guard
    on the stored object, then the file record (201)."""
    await guard.admit(ctx)  # the caller before the body
    token = body.get("key")
    if not isinstance(token, str) or not 1 <= len(token) <= 36:
        raise ApiError.validation("'key' is the key answered by POST /files/upload-url", path=["key"])
    meta = check_meta({k: v for k, v in body.items() if k != "key"}, allowed=META_KEYS)
    async with ctx.reader() as db:  # only who reserved the upload registers it
        row = await _pending(db, token, owner=_who(ctx))
    storage = ctx.kernel.storage
    effective = await policy.resolve(ctx)
    if not await storage.exists(row["storage_key"]):
        raise ApiError.validation("Nothing was uploaded to this key yet", path=["key"])
    try:
        filetype = guard.declared(effective, row["filename"], row["type"], None)
        guard.declared(effective, row["filename"], row["type"], await storage.size(row["storage_key"]))
        staged = await stage(ctx.kernel, storage.iter_chunks(row["storage_key"]), effective.max_bytes)
        try:
            info = await guard.inspect(staged, filetype)
            result = await store(ctx, row["filename"], filetype, staged, info, meta)
        finally:
            staged.discard()
    except ApiError:  # refused bytes never stay in storage
        await storage.delete(row["storage_key"])
        await _forget(ctx, token)
        raise
    # The checked bytes now live under the file's own key; the pending object goes.
    await storage.delete(row["storage_key"])
    await _forget(ctx, token)
    return result


async def _forget(ctx: Any, token: str) -> None:
    async with ctx.unit_of_work() as uow:
        await uow.db.execute(uow.db.delete(uploads).where(uploads.c.id == token))


async def imported(
    ctx: Any,
    filename: str,
    content_type: str | None,
    length: int | None,
    chunks: AsyncIterator[bytes],
    meta: dict[str, Any],
) -> tuple[dict[str, Any], bool]:
    """The bytes of ``POST /files/import``, through the same guard as every upload."""
    return await _guarded(ctx, filename, content_type, length, chunks, meta)
