"""The extension route sink: one Falcon sink under ``/api/v1/ext`` dispatching to a swappable table.

Falcon cannot remove a route once added, so routes that come and go at run time (uploaded
extensions, enabled and disabled without a restart) are not added to the app: ``create_app``
adds this one sink, and whoever owns such routes mounts them in ``kernel.extension_routes``
(an ``ExtensionRoutes``) under an owner name and unmounts them by that name. Each owner gets a
router of its own (Falcon's ``CompiledRouter``, so templates, converters and responder
suffixes work as for built-in routes), rebuilt when mounted; a lookup walks the owners.

A request is admitted exactly as a built-in route's (site, principal, auth level, rate limit:
the gate's ``admit``), then the owner's ``admits(ctx)`` decides whether it serves this site
(an extension enabled in site A answers 404 in site B), then the owner's ``invoke`` runs the
responder (the extensions plugin runs it inside the extension's sandbox scope and counts its
failures). Routes served here are not in the OpenAPI document.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from falcon.routing import CompiledRouter

from kernel.base.errors import ApiError
from kernel.http.routing import API_PREFIX, Route

EXT_PREFIX = API_PREFIX + "/ext"
SINK_PATTERN = re.compile("^" + re.escape(EXT_PREFIX) + "(/|$)")
Invoke = Callable[[Any, Any, Any, dict[str, Any]], Awaitable[None]]


@dataclass
class _Owner:
    router: CompiledRouter
    routes: dict[str, Route]
    admits: Callable[[Any], bool]
    invoke: Invoke


async def _call(responder: Any, req: Any, resp: Any, params: dict[str, Any]) -> None:
    await responder(req, resp, **params)


class ExtensionRoutes:
    """Routes by owner; ``mount`` replaces an owner's set, ``unmount`` drops it."""

    def __init__(self) -> None:
        self._owners: dict[str, _Owner] = {}

    def mount(self, owner: str, routes: list[Route], *, admits: Callable[[Any], bool] = lambda ctx: True,
              invoke: Invoke = _call) -> None:
        router = CompiledRouter()
        by_template: dict[str, Route] = {}
        for route in routes:
            template = EXT_PREFIX + route.path
            if template in by_template:
                raise ValueError(f"route {route.path} is declared twice by {owner}")
            for name, other in self._owners.items():
                if name != owner and other.router.find(template) is not None:
                    raise ValueError(f"route {route.path} of {owner} is taken by {name}")
            route.plugin = owner
            if route.suffix:
                router.add_route(template, route.resource, suffix=route.suffix, _asgi=True)
            else:
                router.add_route(template, route.resource, _asgi=True)
            by_template[template] = route
        self._owners[owner] = _Owner(router, by_template, admits, invoke)

    def unmount(self, owner: str) -> None:
        self._owners.pop(owner, None)

    def owners(self) -> list[str]:
        return sorted(self._owners)

    def find(self, path: str) -> tuple[_Owner, Route, dict[str, Any], Any] | None:
        for owner in list(self._owners.values()):
            found = owner.router.find(path)
            if found is not None:
                _resource, method_map, params, template = found
                return owner, owner.routes[template], params, method_map
        return None


class ExtensionSink:
    """The sink ``create_app`` adds at ``EXT_PREFIX``."""

    def __init__(self, kernel: Any, gate: Any) -> None:
        self.kernel = kernel
        self.gate = gate

    async def __call__(self, req: Any, resp: Any, ws: Any = None, **_: Any) -> None:
        from kernel.http.middleware import request_context

        if ws is not None:  # extension routes are HTTP only
            raise ApiError(404, "NOT_FOUND", f"No WebSocket route {req.path}")
        table: ExtensionRoutes = self.kernel.extension_routes
        found = table.find(req.path)
        if found is None:
            raise ApiError(404, "NOT_FOUND", f"No route {req.method} {req.path}")
        owner, route, params, method_map = found
        ctx = request_context(req)
        await self.gate.admit(req, ctx, route, req.method, resp, params=params)
        if not owner.admits(ctx):
            raise ApiError(404, "NOT_FOUND", f"No route {req.method} {req.path}")
        responder = method_map.get(req.method)
        if responder is None or "method_not_allowed" in getattr(responder, "__name__", ""):
            raise ApiError(405, "METHOD_NOT_ALLOWED", f"{req.method} is not allowed on {req.path}")
        await owner.invoke(responder, req, resp, params)
