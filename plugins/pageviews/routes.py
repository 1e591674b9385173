"""Falcon resources of pageviews: the public beacon and the stats."""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any

from kernel import ApiError
from kernel.http.media import read_body, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.tenancy.service import get_site_cached
from plugins.pageviews import beacon
from plugins.pageviews.service import PageviewCounter, Visit, parse_range


async def limit_per_ip(ctx: Any, resp: Any) -> None:
    """The per-IP beacon limit (``SVC_RATE_LIMIT_PAGEVIEWS`` a minute). Done here rather than by
    the route's bucket, whose key would hold the raw IP: this key holds an HMAC of it under the
    deployment's secret, so not even the limiter's Redis keys store an address."""
    kernel = ctx.kernel
    limit = int(kernel.settings.get("rate_limit_pageviews") or 0)
    if not limit:
        return
    secret = kernel.state.get("pageviews.rl_key")
    if secret is None:
        secret = kernel.state["pageviews.rl_key"] = hmac.new(
            kernel.settings.resolved_jwt_secret().encode(), b"svc pageviews rate limit", hashlib.sha256).digest()
    who = hmac.new(secret, ctx.client_ip.encode(), hashlib.sha256).hexdigest()[:32]
    decision = await kernel.rate_limiter.hit(f"rl:pageviews:iph:{who}", limit, 60.0)
    headers = {"X-RateLimit-Limit": str(decision.limit), "X-RateLimit-Remaining": str(decision.remaining),
               "X-RateLimit-Reset": str(decision.reset)}
    if not decision.allowed:
        retry = max(1, decision.reset - int(time.time()))
        raise ApiError(429, "RATE_LIMITED", f"Too many requests; retry in {retry} seconds",
                       extensions={"limit": decision.limit, "reset": decision.reset},
                       headers={**headers, "Retry-After": str(retry), "X-RateLimit-Remaining": "0"})
    for name, value in headers.items():
        resp.set_header(name, value)


class HitResource:
    """``POST /pageviews/{site_id}/hit``: 204 whether counted or not (a beacon gets no answer
    a page could act on); 400 for a malformed body, 404 for an unknown site, 429 per IP."""

    def __init__(self, counter: PageviewCounter) -> None:
        self.counter = counter

    async def on_post(self, req: Any, resp: Any, site_id: str) -> None:
        ctx = request_context(req)
        await limit_per_ip(ctx, resp)
        site = await get_site_cached(ctx.kernel, site_id) if len(site_id) <= 64 else None
        if site is None:
            raise ApiError(404, "SITE_NOT_FOUND", f"Unknown site '{site_id[:64]}'")
        ctx.site_id, ctx.site = site["id"], site  # CORS allows the site's own origins
        hit = beacon.parse(await read_body(req, beacon.MAX_BODY))
        principal = ctx.principal
        visit = Visit(ip=ctx.client_ip, user_agent=req.get_header("User-Agent") or "",
                      user_id=principal.user_id if principal.is_authenticated else None,
                      refuses_tracking=beacon.refuses_tracking(req))
        await self.counter.record(site["id"], hit, visit)
        resp.set_header("Cache-Control", "no-store")
        send_no_content(resp)


class StatsResource:
    """``GET /pageviews/stats?from=&to=&path=``: ``{ data: [{ date, views, uniques }] }``."""

    def __init__(self, counter: PageviewCounter) -> None:
        self.counter = counter

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        start, end, path = parse_range(req.get_param("from"), req.get_param("to"), req.get_param("path"))
        resp.set_header("Cache-Control", "no-store")
        send_data(resp, await self.counter.stats(ctx.require_site(), start, end, path))
