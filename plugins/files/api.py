"""What other plugins may use of files (declare ``requires = ("files",)``).

``await import_url(ctx, url, data=None)``: fetch a remote file and store it as ``ctx.principal``
exactly as ``POST /files/import { url, data? }`` does: the outbound-URL rule (``http(s)``, no
credentials, no loopback, private, link-local or reserved address in any spelling, IPv4-mapped
IPv6 included, checked on the address connected to), no redirects, the upload guard and the
policy's cap. Returns ``(record, created)``; 400 ``VALIDATION_FAILED`` for a refused URL, 502
``IMPORT_FAILED`` when the remote server fails.

The calls an extension's runner makes through its channel (docs/extensions.md), each as
``ctx.principal`` in ``ctx``'s site, with the same checks as the REST routes:

- ``await get_file(ctx, file_id)``: the record (``GET /files/:id``);
- ``await list_files(ctx, limit=100, offset=0)``: ``(records, meta)`` (``GET /files``);
- ``await read_file(ctx, file_id, max_bytes)``: ``(record, bytes)`` of the original, 400 past
  ``max_bytes``;
- ``await upload_file(ctx, filename, content, content_type)``: ``(record, created)`` through
  the upload guard, as ``PUT /files/upload/:key`` (the name is a label, never a path).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from kernel import ApiError
from plugins.files import records
from plugins.files.uploads import importer, uploads
from plugins.items import api as items


async def import_url(ctx: Any, url: Any, data: Any = None) -> tuple[dict[str, Any], bool]:
    """Import ``url`` as ``ctx.principal`` (``data``: ``{ title?, tags?, folder? }``)."""
    body: dict[str, Any] = {"url": url}
    if data is not None:
        body["data"] = data
    return await importer.import_url(ctx, body)


async def get_file(ctx: Any, file_id: str) -> dict[str, Any]:
    """The record of ``file_id`` the caller may read (404 otherwise)."""
    return await records.get(ctx, file_id)


async def list_files(ctx: Any, limit: Any = 100, offset: Any = 0) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """One page of the files the caller may read."""
    return await records.list_page(ctx, items.query(limit=limit, offset=offset))


async def read_file(ctx: Any, file_id: str, max_bytes: int) -> tuple[dict[str, Any], bytes]:
    """The record and original bytes of ``file_id``; 400 when it is over ``max_bytes``."""
    row = await records.readable(ctx, file_id=file_id)
    if row["filesize"] > max_bytes:
        raise ApiError.validation(f"The file is over the {max_bytes} bytes one read may carry", path=["id"])
    return records.record(row), await ctx.kernel.storage.get(row["storage_key"])


async def upload_file(ctx: Any, filename: Any, content: bytes, content_type: Any) -> tuple[dict[str, Any], bool]:
    """Store ``content`` as the file ``filename`` (the guard, the policy, the caller's rights)."""

    async def chunks() -> AsyncIterator[bytes]:
        yield content

    declared = content_type if isinstance(content_type, str) else None
    return await uploads.direct(ctx, filename, declared, len(content), chunks())


__all__ = ["get_file", "import_url", "list_files", "read_file", "upload_file"]
