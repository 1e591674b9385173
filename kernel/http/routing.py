"""Routes: what a plugin's ``register_routes`` returns, and how the kernel mounts them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

CallerCheck = Callable[[Any], Awaitable[Any]]

API_PREFIX = "/api/v1"

# Who may call a route. Enforced by the kernel's middleware before the responder runs.
AUTH_LEVELS = ("public", "bearer", "admin", "instance-admin")
SITE_MODES = ("required", "optional", "none", "path")


@dataclass
class Route:
    """One path template and its resource.

    ``site``: ``required`` (400 without a site, 404 ``SITE_NOT_FOUND`` for an unknown one),
    ``optional`` (resolved when named), ``none`` (never resolved) or ``path``: the path parameter
    ``site_param`` names the site (404 ``SITE_NOT_FOUND`` for an unknown one; ``X-Svc-Site`` and the
    host are not read), for URLs a browser fetches without headers (``<img src>``, a beacon):
    the principal, auth level, permission and rate limit then apply in that site as for any route.
    ``openapi_path``: the template the OpenAPI document shows when Falcon's rule of one field
    name per path level forces other names here (``/assets/{id}/{file_id}`` beside
    ``/assets/{id}`` is documented as ``/assets/{site_id}/{id}``); same segments, same order.
    ``auth``: one of ``AUTH_LEVELS``, or a dict by HTTP method (``{"GET": "bearer", "*": "admin"}``).
    ``rate_limit``: the name of a bucket an enabled plugin declares (``register_rate_limits``;
    built in: ``auth``, ``items_read``, ``items_write``), or a dict by method; an undeclared name
    stops the app at boot. ``openapi``: ``{ "get": {operation}, ... }`` for the OpenAPI document.
    ``suffix`` is Falcon's responder suffix (``on_get_<suffix>``).
    ``authenticate=False`` skips the ``authenticate`` chain (the principal stays anonymous): for
    public routes that read the ``Authorization`` header themselves (a scrape or webhook token),
    which the chain would otherwise reject as a malformed JWT before the responder runs.
    A resource's ``on_websocket`` responder makes the path a WebSocket route too: the same
    site, principal, auth level (``auth={"WEBSOCKET": ...}`` to differ), rate limit and, in
    addition, the Origin check apply at the handshake (kernel/http/websocket.py).
    ``tickets=True`` accepts a ``?ticket=`` query parameter as the credential (redeemed by the
    ``authenticate_ticket`` hook; the site comes from the ticket), for browsers' WebSocket and
    ``EventSource``, which cannot send headers. ``subprotocols``: the WebSocket subprotocols the
    route speaks, in preference order; the handshake picks the first the client offers.
    ``init_credentials=True``: the WebSocket protocol carries its credentials (and, from a
    browser, its site) in its first message, as graphql-transport-ws's ``connection_init`` does;
    a handshake that names no site has its Origin checked once that message names one, when the
    responder calls ``kernel.http.websocket.readmit(req, headers)``.
    ``own_body_cap=True``: the responder caps its body itself (an upload under the upload
    policy, which may be larger than ``SVC_MAX_BODY_BYTES``); the kernel's cap is skipped.
    ``permission``: an action the caller must hold on collection ``*`` in the site (``media:create``,
    ``flows:run``...; admin access holds them all), or a dict by method like ``auth``. The
    middleware checks it right after the auth level (403 ``PERMISSION_DENIED``, reason the
    action), so a caller without it is refused before the responder reads or validates the body;
    the service still checks it for its other callers (GraphQL, flows, MCP).
    ``caller``: ``await caller(ctx)`` (raising ``ApiError``), or a dict of them by method, for a
    check of the caller that is not an action on ``*`` (a studio member of the site, not the
    frontend realm; an action on the collection named in the path, ``ctx.path_params``);
    awaited right after ``permission``, so it too comes before the body.
    """

    path: str
    resource: Any
    site: str = "required"
    auth: str | dict[str, str] = "bearer"
    rate_limit: str | dict[str, str] | None = None
    openapi: dict[str, dict[str, Any]] = field(default_factory=dict)
    suffix: str | None = None
    prefix: str = API_PREFIX
    plugin: str = ""
    authenticate: bool = True
    tickets: bool = False
    subprotocols: tuple[str, ...] = ()
    init_credentials: bool = False
    own_body_cap: bool = False
    permission: str | dict[str, str] | None = None
    caller: CallerCheck | dict[str, CallerCheck] | None = None
    site_param: str = "site_id"
    openapi_path: str | None = None

    def __post_init__(self) -> None:
        if self.site not in SITE_MODES:
            raise ValueError(f"route {self.path}: site must be one of {SITE_MODES}")
        levels = self.auth.values() if isinstance(self.auth, dict) else [self.auth]
        for level in levels:
            if level not in AUTH_LEVELS:
                raise ValueError(f"route {self.path}: auth {level!r} must be one of {AUTH_LEVELS}")
        if not self.authenticate and any(level != "public" for level in levels):
            raise ValueError(f"route {self.path}: authenticate=False needs auth='public'")
        actions = self.permission.values() if isinstance(self.permission, dict) else [self.permission]
        if any(actions) and self.site == "none":
            raise ValueError(f"route {self.path}: a permission is held in a site; site must not be 'none'")
        if self.site == "path" and "{" + self.site_param + "}" not in self.path:
            raise ValueError(f"route {self.path}: site='path' needs the parameter {{{self.site_param}}} in the path")
        if self.openapi_path is not None and _segments(self.openapi_path) != _segments(self.path):
            raise ValueError(f"route {self.path}: openapi_path {self.openapi_path!r} must differ only in field names")

    @property
    def template(self) -> str:
        return self.prefix + self.path

    @property
    def documented(self) -> str:
        """The template of the OpenAPI document (``openapi_path`` when set)."""
        return self.prefix + (self.openapi_path or self.path)

    def auth_for(self, method: str) -> str:
        if isinstance(self.auth, dict):
            return self.auth.get(method.upper(), self.auth.get("*", "bearer"))
        return self.auth

    def permission_for(self, method: str) -> str | None:
        if isinstance(self.permission, dict):
            return self.permission.get(method.upper(), self.permission.get("*"))
        return self.permission

    def caller_for(self, method: str) -> CallerCheck | None:
        if isinstance(self.caller, dict):
            return self.caller.get(method.upper(), self.caller.get("*"))
        return self.caller

    def rate_limit_for(self, method: str) -> str | None:
        if isinstance(self.rate_limit, dict):
            return self.rate_limit.get(method.upper(), self.rate_limit.get("*"))
        return self.rate_limit

    def methods(self) -> list[str]:
        """The HTTP methods the resource answers (``on_get`` ... with the suffix)."""
        tail = f"_{self.suffix}" if self.suffix else ""
        return [m for m in ("GET", "POST", "PUT", "PATCH", "DELETE")
                if callable(getattr(self.resource, f"on_{m.lower()}{tail}", None))]


def _segments(path: str) -> list[str]:
    """A template's segments with every ``{field}`` written ``{}``."""
    return [("{}" if seg.startswith("{") and seg.endswith("}") else seg) for seg in path.split("/")]


class RouteTable:
    """Route lookup by (matched URI template, suffix) for the middleware."""

    def __init__(self) -> None:
        self._by_template: dict[str, Route] = {}
        self.routes: list[Route] = []

    def add(self, route: Route) -> None:
        self.routes.append(route)
        self._by_template[route.template] = route

    def for_template(self, template: str | None) -> Route | None:
        if template is None:
            return None
        return self._by_template.get(template)
