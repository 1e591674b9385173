"""``POST /files/import { url, data? }``: fetch a remote file on the caller's behalf.

The outbound-URL rule (``kernel/base/outbound.py``) for URLs fetched on a user's behalf: ``http(s)`` only, no
credentials, and never the unspecified, loopback, private, link-local or reserved addresses
(nor their IPv4-mapped IPv6 forms). ``kernel.base.outbound.check_url`` checks the URL as written;
the outbound client (``on_behalf``) resolves the host at connect time, checks every address it
resolves to and connects to the checked one, so DNS rebinding cannot swap in a refused address.
Redirects are not followed (a 3xx is refused). ``SVC_OUTBOUND_ALLOW_NETWORKS`` (CIDR list,
empty by default) names networks an operator trusts despite the rule (an internal asset host);
``SVC_ENV=development`` does not open loopback here. The body streams through the upload guard
with the policy's cap; the name is the URL's last path segment (its extension must match the
answer's ``Content-Type``; a name without one gets the type's).
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from kernel import ApiError
from kernel.base.outbound import OutboundRefused, check_url, policy
from kernel.base.outbound import client as outbound_client
from kernel.http.media import reject_unknown
from plugins.files.records import check_filename, check_meta
from plugins.files.uploads import guard, uploads
from plugins.files.uploads.catalogue import BY_MIME, extension_of, parse_mime

if TYPE_CHECKING:
    import httpx

CLIENT_STATE = "files.import_client"


def client(kernel: Any) -> httpx.AsyncClient:
    """One HTTP client per app, closed at shutdown; never follows redirects."""
    import httpx

    timeout = httpx.Timeout(kernel.settings.get("files_import_timeout"), connect=5.0)
    return outbound_client(kernel, CLIENT_STATE, timeout=timeout, on_behalf=True)


def name_for(url: str, mime: str) -> str:
    """The file name of an import: the URL's last path segment, with the type's extension when
    it has none; ``import`` when the path names nothing usable."""
    segment = posixpath.basename(unquote(urlsplit(url).path))
    try:
        name = check_filename(segment)
    except ApiError:
        name = "import"
    filetype = BY_MIME.get(mime)
    if filetype is not None and not extension_of(name):
        name += filetype.extensions[0]
    return name[:255]


async def import_url(ctx: Any, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    import httpx

    await guard.admit(ctx)  # the caller before the body, and before any outbound request
    reject_unknown(body, {"url", "data"})
    url = check_url(body.get("url"), path=["url"], policy=policy(ctx.kernel, on_behalf=True))
    data = {} if body.get("data") is None else body["data"]
    if not isinstance(data, dict):
        raise ApiError.validation(
            "'data' is an object { title?, description?, tags?, folder? }", path=["data"]
        )
    meta = check_meta(data, allowed=uploads.META_KEYS)
    try:
        response = await client(ctx.kernel).send(client(ctx.kernel).build_request("GET", url), stream=True)
    except OutboundRefused as exc:
        raise ApiError.validation(f"The URL is refused: {exc}", path=["url"]) from None
    except httpx.HTTPError as exc:
        raise ApiError(
            502, "IMPORT_FAILED", f"The remote server could not be reached: {type(exc).__name__}"
        ) from None
    try:
        if response.status_code != 200:
            raise ApiError(
                502,
                "IMPORT_FAILED",
                f"The remote server answered {response.status_code} (redirects are not followed)",
                extensions={"status": response.status_code},
            )
        mime = parse_mime(response.headers.get("content-type"))
        length = response.headers.get("content-length")
        declared_length = (
            int(length) if length and length.isascii() and length.isdigit() and len(length) < 19 else None
        )
        try:
            return await uploads.imported(
                ctx, name_for(url, mime), mime, declared_length, response.aiter_bytes(), meta
            )
        except httpx.HTTPError as exc:
            raise ApiError(
                502, "IMPORT_FAILED", f"The remote server's answer broke off: {type(exc).__name__}"
            ) from None
    finally:
        await response.aclose()
