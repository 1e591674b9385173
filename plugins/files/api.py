"""What other plugins may use of files (declare ``requires = ("files",)``).

``await import_url(ctx, url, data=None)``: fetch a remote file and store it as ``ctx.principal``
exactly as ``POST /files/import { url, data? }`` does: the outbound-URL rule (``http(s)``, no
credentials, no loopback, private, link-local or reserved address in any spelling, IPv4-mapped
IPv6 included, checked on the address connected to), no redirects, the upload guard and the
policy's cap. Returns ``(record, created)``; 400 ``VALIDATION_FAILED`` for a refused URL, 502
``IMPORT_FAILED`` when the remote server fails.
"""

from __future__ import annotations

from typing import Any

from plugins.files import importer


async def import_url(ctx: Any, url: Any, data: Any = None) -> tuple[dict[str, Any], bool]:
    """Import ``url`` as ``ctx.principal`` (``data``: ``{ title?, tags?, folder? }``)."""
    body: dict[str, Any] = {"url": url}
    if data is not None:
        body["data"] = data
    return await importer.import_url(ctx, body)


__all__ = ["import_url"]
