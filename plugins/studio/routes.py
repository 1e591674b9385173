"""The studio's two routes: ``/studio/`` (the page; ``/studio`` too) and ``/studio/assets/{name}``
(a hashed asset)."""

from __future__ import annotations

import re
from typing import Any

from kernel.base.errors import ApiError
from plugins.studio.assets import Bundle

# The app's own files only; the API on the same origin, and its realtime channel over ws(s) to
# the same host (named, not any ws: host); images from the site's branding (an https logo)
# besides our own. No inline script or style.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; "
       "connect-src 'self'{sockets}; font-src 'self'; object-src 'none'; base-uri 'none'; "
       "form-action 'self'; frame-ancestors 'none'")
HOST = re.compile(r"^[A-Za-z0-9.-]+(?::[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?$")
IMMUTABLE = "public, max-age=31536000, immutable"


def csp_for(netloc: str) -> str:
    """The page's policy for the host it was asked of: ws and wss to that host only (behind a
    TLS proxy the app sees http, so both are named); a Host that is not a plain host[:port]
    gets no WebSocket source at all."""
    sockets = f" ws://{netloc} wss://{netloc}" if HOST.match(netloc or "") else ""
    return CSP.format(sockets=sockets)


def _common(resp: Any) -> None:
    resp.set_header("X-Content-Type-Options", "nosniff")
    resp.set_header("Referrer-Policy", "same-origin")


class PageResource:
    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle

    async def on_get(self, req: Any, resp: Any) -> None:
        _common(resp)
        resp.content_type = "text/html; charset=utf-8"
        # The page names the assets of this build: it must never be served from a cache.
        resp.set_header("Cache-Control", "no-cache")
        resp.set_header("Content-Security-Policy", csp_for(req.netloc))
        resp.set_header("X-Frame-Options", "DENY")
        resp.data = self.bundle.page


class AssetResource:
    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle

    async def on_get(self, req: Any, resp: Any, name: str) -> None:
        found = self.bundle.assets.get(name)
        if found is None:
            raise ApiError.not_found(f"The studio has no asset '{name[:100]}'")
        data, content_type = found
        _common(resp)
        resp.content_type = content_type
        resp.set_header("Cache-Control", IMMUTABLE)
        resp.data = data
