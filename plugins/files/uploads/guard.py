"""The one upload guard. Every upload surface (``PUT /files/upload/{key}``, ``POST /media/{key}``,
``POST /files`` after a presigned upload, ``POST /files/import``) goes through it, in this order:

1. ``admit``: the public role cannot upload (401 ``UNAUTHENTICATED``, reason ``public_role``),
   then ``media:create`` (403);
2. ``declared``: a ``Content-Length`` above the policy's cap is refused before any byte is
   read (413 ``FILE_TOO_LARGE``); the declared MIME type must be in the allowlist (415
   ``FILE_TYPE_NOT_ALLOWED``) and the file name's extension one of that type's (415
   ``FILE_EXTENSION_MISMATCH``);
3. ``staging.stage``: the true byte length is counted while the body streams to disk and
   refused past the cap (413), never buffered whole;
4. ``inspect`` (``checks.py``): magic-number sniffing; executables (422 ``FILE_EXECUTABLE``,
   reported before a type mismatch so the code names the worse problem); bytes of another
   type than declared (415 ``FILE_CONTENT_MISMATCH``); active-content SVG (422
   ``FILE_ACTIVE_CONTENT``); raster images with a script, an executable or trailing data
   (422 ``FILE_EMBEDDED_PAYLOAD``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kernel import ApiError
from plugins.files import permissions
from plugins.files.errors import refuse
from plugins.files.uploads import checks
from plugins.files.uploads.catalogue import BY_MIME, FileType, extension_of, parse_mime
from plugins.files.uploads.policy import UploadPolicy
from plugins.files.uploads.staging import Staged, too_large


async def admit(ctx: Any) -> None:
    """Step 1: an authenticated principal holding ``media:create`` in the site."""
    if not ctx.principal.is_authenticated:
        raise ApiError(401, "UNAUTHENTICATED", "The public role cannot upload; sign in",
                       extensions={"reason": "public_role"})
    await permissions.require(ctx, "media:create")


def declared(policy: UploadPolicy, filename: str, content_type: str | None, length: int | None) -> FileType:
    """Step 2: what the request declares (length, MIME type, extension), before any byte."""
    if length is not None and length > policy.max_bytes:
        raise too_large(policy.max_bytes)
    mime = parse_mime(content_type)
    if not mime or not policy.allows(mime):
        raise refuse("FILE_TYPE_NOT_ALLOWED", f"The type {mime or '(none)'!r} is not in the upload policy's "
                     "allowlist", declared=mime, allowed=list(policy.allowed))
    filetype = BY_MIME[mime]
    extension = extension_of(filename)
    if extension not in filetype.extensions:
        raise refuse("FILE_EXTENSION_MISMATCH", f"The extension {extension or '(none)'!r} does not match "
                     f"{mime} ({', '.join(filetype.extensions)})", declared=mime, extension=extension)
    return filetype


async def inspect(staged: Staged, filetype: FileType) -> dict[str, Any]:
    """Step 4, in a worker thread: the content checks; returns ``{width, height}``."""
    return await asyncio.to_thread(checks.inspect, staged.path, staged.size, filetype)
