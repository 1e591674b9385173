"""CORS for HTTP, built from the same allowed origins as the WebSocket Origin check.

- A preflight (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``) is answered
  here, before routing, authentication and rate limits: 204 with the ``Access-Control-Allow-*``
  headers when the origin is allowed, 204 without them when it is not (the browser then refuses
  the call). A preflight carries no custom header, so its site comes only from the host
  (``<site>.SVC_BASE_DOMAIN``); a browser app that names its site with ``X-Svc-Site`` must have
  its origin in ``SVC_CORS_ORIGINS``.
- Every other answer, errors included, echoes ``Access-Control-Allow-Origin`` (with
  credentials and the exposed headers) only for an allowed origin of the request's site, and
  always says ``Vary: Origin`` so a shared cache never serves one origin's answer to another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.base.settings import normalize_origin
from kernel.hooks.plugins import call_first
from kernel.http.origins import origin_allowed

if TYPE_CHECKING:
    from kernel.core.context import Kernel

ALLOW_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
EXPOSE_HEADERS = ", ".join((
    "X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After",
    "ETag", "Location", "Content-Disposition",
))
PREFLIGHT_MAX_AGE = "600"


class CorsMiddleware:
    """Preflight answers and ``Access-Control-*`` headers for the request's allowed origins."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    async def process_request(self, req: Any, resp: Any) -> None:
        origin = req.get_header("Origin")
        if req.method != "OPTIONS" or not origin or not req.get_header("Access-Control-Request-Method"):
            return
        resp.complete = True  # no routing, auth or rate limit for a preflight
        resp.status = 204
        resp.append_header("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
        site_id = await self._site_of_preflight(req)
        if not await origin_allowed(self.kernel, site_id, origin):
            return
        resp.set_header("Access-Control-Allow-Origin", normalize_origin(origin))
        resp.set_header("Access-Control-Allow-Credentials", "true")
        resp.set_header("Access-Control-Allow-Methods", ALLOW_METHODS)
        requested = req.get_header("Access-Control-Request-Headers")
        if requested:
            resp.set_header("Access-Control-Allow-Headers", requested)
        resp.set_header("Access-Control-Max-Age", PREFLIGHT_MAX_AGE)

    async def process_response(self, req: Any, resp: Any, resource: Any, req_succeeded: bool) -> None:
        if req.method == "OPTIONS" and req.get_header("Access-Control-Request-Method"):
            return  # a preflight: answered in process_request
        resp.append_header("Vary", "Origin")
        origin = req.get_header("Origin")
        if not origin:
            return
        ctx = getattr(req.context, "svc", None)
        if not await origin_allowed(self.kernel, getattr(ctx, "site_id", None), origin):
            return
        resp.set_header("Access-Control-Allow-Origin", normalize_origin(origin))
        resp.set_header("Access-Control-Allow-Credentials", "true")
        resp.set_header("Access-Control-Expose-Headers", EXPOSE_HEADERS)

    async def _site_of_preflight(self, req: Any) -> str | None:
        site_id = await call_first(self.kernel.pm.hook.resolve_site, request=req, kernel=self.kernel)
        if not site_id:
            return None
        from kernel.tenancy.service import get_site_cached

        site = await get_site_cached(self.kernel, site_id)
        return site["id"] if site else None
