"""The kernel's middleware: request id -> API version and body limit -> site -> principal ->
route auth -> rate limit. Each step raises ``ApiError``; the error handlers shape the answer."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import falcon

from kernel.auth.principal import ANONYMOUS, Principal
from kernel.base.errors import ApiError
from kernel.core.context import RequestContext
from kernel.hooks.plugins import call_first
from kernel.http.tickets import redeem_ticket

if TYPE_CHECKING:
    from kernel.core.context import Kernel
    from kernel.http.routing import Route, RouteTable

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
SUPPORTED_API_VERSIONS = ("1",)


def valid_request_id(value: str | None) -> bool:
    """A client's ``X-Request-Id`` is kept only when short and plain (it ends up in logs)."""
    return bool(value and _REQUEST_ID.match(value))


def request_context(req: falcon.asgi.Request) -> RequestContext:
    """The ``RequestContext`` the middleware attached to ``req``."""
    return req.context.svc


class RequestIdMiddleware:
    """``X-Request-Id`` in (when well-formed) and out; the context object is created here."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    async def process_request(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        await self._caught_up()
        incoming = req.get_header("X-Request-Id")
        rid = incoming if incoming and _REQUEST_ID.match(incoming) else uuid.uuid4().hex
        req.context.svc = RequestContext(kernel=self.kernel, request_id=rid, client_ip=req.remote_addr or "")
        req.context.started = time.perf_counter()
        resp.set_header("X-Request-Id", rid)

    async def process_request_ws(self, req: falcon.asgi.Request, ws: Any) -> None:
        await self._caught_up()

    async def _caught_up(self) -> None:
        gate = self.kernel.fanout_gate
        if gate is not None and (gen := gate.pending()):
            # Several workers without Redis: a write answered by another worker has had its cache
            # drops (revocations, roles, settings) applied here before this request reads them.
            await gate.wait_for(gen, lambda: self.kernel.site_caches.invalidate_site(None))


class RequestGuardMiddleware:
    """API version pinning and the request body cap (before any body is read).

    The cap is checked once the route is known, so that a route with ``own_body_cap`` (an
    upload, capped by the upload policy while it streams) can take more than the kernel's cap.
    """

    def __init__(self, kernel: Kernel, table: RouteTable | None = None) -> None:
        self.max_body = kernel.settings.max_body_bytes
        self.table = table

    async def process_request(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        version = req.get_header("X-Svc-API-Version")
        if version is not None and version.strip() not in SUPPORTED_API_VERSIONS:
            raise ApiError.validation(
                f"Unsupported API version {version.strip()!r}; this server speaks version 1",
                path=["headers", "X-Svc-API-Version"],
                supported=list(SUPPORTED_API_VERSIONS),
            )

    async def process_resource(self, req: falcon.asgi.Request, resp: falcon.asgi.Response,
                               resource: Any, params: dict[str, Any]) -> None:
        route = self.table.for_template(req.uri_template) if self.table is not None else None
        if route is not None and route.own_body_cap:
            return
        length = req.content_length
        if length is not None and length > self.max_body:
            raise ApiError(413, "PAYLOAD_TOO_LARGE", f"The request body is larger than {self.max_body} bytes")


def storable_path_params(params: dict[str, Any]) -> None:
    """A path parameter holding a NUL (``%00``) gets U+FFFD in its place, in ``params`` itself
    (what the responder receives). No stored id, key or name holds either, so the route finds
    nothing and answers its own 404 (or 400) on both dialects; PostgreSQL refused the NUL at the
    first query that bound it, a 500 on every route that did not check for it."""
    for name, value in params.items():
        if isinstance(value, str) and "\x00" in value:
            params[name] = value.replace("\x00", "\ufffd")


QUEUE_FACTOR = 4  # a site may have this many times its cap waiting for a slot


class SiteInFlight:
    """Requests of each site being answered in this process: at most ``cap`` at once, up to
    ``QUEUE_FACTOR * cap`` more waiting their turn, and past that refused (``cap`` 0: no cap).

    A bulkhead per site: rate limits count requests per caller and minute, so a site may still
    send a minute's allowance at once, or many callers' worth; each of those requests would
    wait for a database connection from the pool every site shares, ahead of the other sites'.
    Here a site's excess waits in its own queue (before it takes a connection), so the rest of
    the pool and of the event loop stays for the others (``SVC_SITE_MAX_IN_FLIGHT``).
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.gates: dict[str, list[Any]] = {}  # site -> [semaphore, requests holding or waiting]

    @property
    def counts(self) -> dict[str, int]:
        """Site -> requests in flight or waiting."""
        return {site: gate[1] for site, gate in self.gates.items()}

    async def enter(self, site_id: str) -> bool:
        """Take a slot of ``site_id``, waiting for one while the site is at its cap; False (and
        nothing taken) when its queue is full too."""
        gate = self.gates.get(site_id)
        if gate is None:
            gate = self.gates[site_id] = [asyncio.Semaphore(self.cap), 0]
        if gate[1] >= self.cap * (1 + QUEUE_FACTOR):
            return False
        gate[1] += 1
        try:
            await gate[0].acquire()
        except BaseException:  # the client left while it waited
            self._drop(site_id, gate)
            raise
        return True

    def leave(self, site_id: str) -> None:
        gate = self.gates.get(site_id)
        if gate is not None:
            gate[0].release()
            self._drop(site_id, gate)

    def _drop(self, site_id: str, gate: list[Any]) -> None:
        gate[1] -= 1
        if gate[1] <= 0:
            self.gates.pop(site_id, None)


class RouteGateMiddleware:
    """For the matched route: resolve the site, the principal, enforce auth and rate limits."""

    def __init__(self, kernel: Kernel, table: RouteTable) -> None:
        self.kernel = kernel
        self.table = table
        self.in_flight = SiteInFlight(int(kernel.settings.get("site_max_in_flight", 0) or 0))
        kernel.state["site_in_flight"] = self.in_flight

    async def process_response(self, req: falcon.asgi.Request, resp: falcon.asgi.Response, resource: Any,
                               req_succeeded: bool) -> None:
        site_id = getattr(req.context, "in_flight_site", None)
        if site_id is not None:
            req.context.in_flight_site = None
            self.in_flight.leave(site_id)

    async def _hold_slot(self, req: Any, ctx: RequestContext, method: str) -> None:
        # WebSockets are long-lived and have caps of their own (realtime: per site).
        if not self.in_flight.cap or ctx.site_id is None or method == "WEBSOCKET":
            return
        if getattr(req.context, "in_flight_site", None) is not None:
            return  # admitted once already (an extension route through the sink)
        if not await self.in_flight.enter(ctx.site_id):
            raise ApiError(429, "RATE_LIMITED",
                           f"Too many requests of this site in progress or waiting (at most {self.in_flight.cap} "
                           f"at once); retry shortly",
                           extensions={"inFlight": self.in_flight.cap}, headers={"Retry-After": "1"})
        req.context.in_flight_site = ctx.site_id

    async def process_resource(self, req: falcon.asgi.Request, resp: falcon.asgi.Response,
                               resource: Any, params: dict[str, Any]) -> None:
        if resource is None:
            return
        route = self.table.for_template(req.uri_template)
        if route is None:
            return
        await self.admit(req, request_context(req), route, req.method, resp, params=params)

    async def admit(self, req: Any, ctx: RequestContext, route: Route, method: str, resp: Any,
                    after_site: Callable[[], Awaitable[None]] | None = None,
                    params: dict[str, Any] | None = None) -> None:
        """Site, principal, auth level, permission, caller check and rate limit of ``route`` for
        ``method``; shared by HTTP and WebSocket handshakes (``method="WEBSOCKET"``, with the
        Origin check as ``after_site``). ``resp`` receives the rate-limit headers (anything with
        ``set_header``); ``params``, the path parameters, reach the caller check as
        ``ctx.path_params``."""
        req.context.route = route
        if params:
            storable_path_params(params)  # in place: the responder's keyword arguments too
        ctx.path_params = dict(params or {})
        # A ticket (Route(tickets=True)) names its own site and principal; X-Svc-Site is ignored.
        principal = await redeem_ticket(self.kernel, req, ctx, route)
        if principal is None:
            if route.site == "path":
                await self._site_of_path(ctx, ctx.path_params.get(route.site_param))
            elif route.site != "none":
                await self._resolve_site(req, ctx, route)
            # A route that reads its own credential (a scrape token) stays anonymous: the chain
            # would reject a non-JWT bearer before the responder could check it.
            principal = await self._authenticate(req, ctx) if route.authenticate else ANONYMOUS
        if after_site is not None:
            await after_site()
        await self._hold_slot(req, ctx, method)
        if ctx.site_id is not None:
            principal = await self.kernel.access.resolve(principal, ctx.site_id)
        ctx.principal = principal
        self._enforce_auth(route.auth_for(method), ctx)
        action = route.permission_for(method)
        if action:
            await self._enforce_permission(action, ctx)
        check = route.caller_for(method)
        if check is not None:
            await check(ctx)
        bucket = route.rate_limit_for(method)
        if bucket:
            await self._rate_limit(bucket, req, resp, ctx)

    async def _resolve_site(self, req: falcon.asgi.Request, ctx: RequestContext, route: Route) -> None:
        site_id = await call_first(self.kernel.pm.hook.resolve_site, request=req, kernel=self.kernel)
        if site_id is None:
            if route.site == "required":
                raise ApiError.validation(
                    "No site: send the X-Svc-Site header or use the site's subdomain",
                    path=["headers", "X-Svc-Site"],
                )
            return
        from kernel.tenancy.service import get_site_cached

        site = await get_site_cached(self.kernel, site_id)
        if site is None:
            raise ApiError(404, "SITE_NOT_FOUND", f"Unknown site '{site_id}'")
        ctx.site_id = site["id"]
        ctx.site = site

    async def _site_of_path(self, ctx: RequestContext, site_id: Any) -> None:
        """A ``site="path"`` route: the site its path names (404 for an unknown one)."""
        from kernel.tenancy.service import get_site_cached

        valid = isinstance(site_id, str) and 0 < len(site_id) <= 64
        site = await get_site_cached(self.kernel, site_id) if valid else None
        if site is None:
            raise ApiError(404, "SITE_NOT_FOUND", f"Unknown site '{str(site_id)[:64]}'")
        ctx.site_id = site["id"]
        ctx.site = site

    async def _authenticate(self, req: falcon.asgi.Request, ctx: RequestContext) -> Principal:
        principal = await call_first(self.kernel.pm.hook.authenticate, request=req, kernel=self.kernel,
                                     site=ctx.site)
        return principal if principal is not None else ANONYMOUS

    @staticmethod
    def _enforce_auth(level: str, ctx: RequestContext) -> None:
        principal = ctx.principal
        if level == "public":
            return
        if not principal.is_authenticated:
            raise ApiError.unauthenticated()
        if level == "admin" and not principal.is_admin:
            raise ApiError.forbidden("This route needs admin access in the site")
        if level == "instance-admin" and not principal.is_instance_admin:
            raise ApiError.forbidden("This route needs the instance admin")

    async def _enforce_permission(self, action: str, ctx: RequestContext) -> None:
        """The route's declared action on collection ``*`` (403 without it), before the body."""
        if ctx.site_id is None:  # an optional-site route called without one: the responder decides
            return
        decision = await self.kernel.access.decide(ctx.principal, ctx.site_id, "*", action)
        if not decision.allowed:
            raise ApiError.forbidden(f"This needs the {action} permission", reason=action)

    async def _rate_limit(self, name: str, req: falcon.asgi.Request, resp: falcon.asgi.Response,
                          ctx: RequestContext) -> None:
        # Every bucket a route names was checked at boot (kernel.http.ratelimit.check_route_buckets).
        bucket = self.kernel.rate_buckets[name]
        limit = bucket.limit_in(self.kernel.settings)
        if not limit:
            return
        # Per-IP buckets count across sites (an attacker must not multiply the auth limit by
        # naming more sites); per-principal buckets are per user and site.
        if bucket.per == "principal" and ctx.principal.is_authenticated:
            who = ctx.principal.user_id or ctx.principal.api_key_id or ctx.client_ip
            key = f"rl:{name}:{ctx.site_id or '-'}:{who}"
        else:
            key = f"rl:{name}:ip:{ctx.client_ip}"
        decision = await self.kernel.rate_limiter.hit(key, limit, bucket.window)
        resp.set_header("X-RateLimit-Limit", str(decision.limit))
        resp.set_header("X-RateLimit-Remaining", str(decision.remaining))
        resp.set_header("X-RateLimit-Reset", str(decision.reset))
        if not decision.allowed:
            retry = max(1, decision.reset - int(time.time()))
            raise ApiError(
                429, "RATE_LIMITED", f"Too many requests; retry in {retry} seconds",
                extensions={"limit": decision.limit, "reset": decision.reset},
                headers={
                    "Retry-After": str(retry),
                    "X-RateLimit-Limit": str(decision.limit),
                    "X-RateLimit-Remaining": "0",
                    "X-RateLimit-Reset": str(decision.reset),
                },
            )
