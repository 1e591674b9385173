"""Browser origins a site accepts: its own (``site_allowed_origins`` hook) plus ``SVC_CORS_ORIGINS``.

docs/architecture.md, CORS and WebSockets: a site's ``siteUrl`` and ``domain``, plus ``SVC_CORS_ORIGINS``,
are its allowed origins (and, under ``SVC_ENV=development``, ``http://localhost:*``). CORS answers (``kernel/http/cors.py``) and the WebSocket handshake's
Origin check (``kernel/http/websocket.py``) both read them here, so they never disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from kernel.base.settings import normalize_origin
from kernel.hooks.plugins import call_all

if TYPE_CHECKING:
    from kernel.core.context import Kernel

def instance_origins(kernel: Kernel) -> frozenset[str]:
    """``SVC_CORS_ORIGINS``, normalised once per app."""
    cached = kernel.state.get("cors_origins")
    if cached is None:
        cached = frozenset(o for o in map(normalize_origin, kernel.settings.cors_origins) if o)
        kernel.state["cors_origins"] = cached
    return cached


async def allowed_origins(kernel: Kernel, site_id: str | None) -> frozenset[str]:
    """The origins allowed for ``site_id`` (only ``SVC_CORS_ORIGINS`` without a site)."""
    origins = instance_origins(kernel)
    if site_id is None:
        return origins
    extra = {
        origin
        for answer in await call_all(kernel.pm.hook.site_allowed_origins, kernel=kernel, site_id=site_id)
        for origin in map(normalize_origin, answer or ())
        if origin
    }
    return origins | extra if extra else origins


def _normalized(origin: str) -> str | None:
    """``origin`` as ``scheme://host[:port]``, or None when it is not an origin at all."""
    return normalize_origin(origin) if "://" in origin else None


def development_origin(kernel: Kernel, normalized: str) -> bool:
    """Under ``SVC_ENV=development`` (``svc serve --dev``), ``http://localhost`` on any port (and
    ``127.0.0.1``, ``[::1]``): a front end's dev server is allowed without configuring it."""
    if kernel.settings.get("env") != "development":
        return False
    host = urlsplit(normalized).hostname
    return normalized.startswith("http://") and host in _LOCAL_HOSTS


_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


async def origin_allowed(kernel: Kernel, site_id: str | None, origin: str) -> bool:
    """Whether a browser at ``origin`` may call ``site_id``."""
    normalized = _normalized(origin)
    if normalized is None:
        return False
    return development_origin(kernel, normalized) or normalized in await allowed_origins(kernel, site_id)


def same_origin(origin: str, host: str | None, secure: bool) -> bool:
    """``origin`` names the server itself (a page served by this API, not a cross-site one)."""
    normalized = _normalized(origin)
    if normalized is None or not host:
        return False
    return normalized == normalize_origin(("https://" if secure else "http://") + host)
