"""WebSocket routes: the handshake gets what an HTTP request gets, and errors close with 4xxx.

A plugin's resource answers WebSockets with Falcon's ``on_websocket(req, ws, **params)``. Before
it runs, this middleware gives the handshake a request id, resolves the site (``X-Svc-Site``,
the subdomain, or the ticket), checks the ``Origin`` against the site's allowed origins, finds
the principal (token header, or ``?ticket=`` on ``Route(tickets=True)``), enforces the route's
auth level and rate limit (``auth`` / ``rate_limit`` keyed ``"WEBSOCKET"`` or plain), and then
**accepts** the socket, with ``X-Request-Id`` (and the rate-limit headers) on the handshake
answer and the subprotocol chosen from ``Route.subprotocols``. The responder receives an
accepted socket: it must not call ``ws.accept()`` again. A route whose protocol sends its
credentials in its first message (``Route(init_credentials=True)``) admits the socket again with
them through ``readmit``.

Any ``ApiError`` (before or after the accept, from the kernel or the responder) closes the
socket with ``4000 + its HTTP status`` and the reason ``"<CODE>: <message>"`` (cut to the 123
bytes a close frame allows). An unexpected exception is logged with its trace and the request
id and closes with 4500; the client never sees a traceback. See ``CLOSE_CODES``.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

from kernel.base.errors import ApiError
from kernel.core.context import RequestContext
from kernel.http.origins import origin_allowed, same_origin

if TYPE_CHECKING:
    from kernel.core.context import Kernel
    from kernel.http.middleware import RouteGateMiddleware
    from kernel.http.routing import RouteTable

log = logging.getLogger("svc.http.websocket")

# Close codes: 4000 + the HTTP status the same failure would answer over HTTP.
CLOSE_CODES: dict[int, str] = {
    4400: "Bad request or bad frame (VALIDATION_FAILED): a malformed frame, no site, no shared subprotocol.",
    4401: "Unauthenticated (UNAUTHENTICATED, TOKEN_EXPIRED): no, invalid or expired credentials or ticket.",
    4403: "Forbidden (PERMISSION_DENIED): the principal may not, or the Origin is not allowed for the site.",
    4404: "Not found (NOT_FOUND, SITE_NOT_FOUND): no such WebSocket route, or an unknown site.",
    4408: "Too slow: the client did not keep up and was dropped (a plugin's choice, e.g. a lagging subscriber).",
    4413: "Too large (PAYLOAD_TOO_LARGE): a frame over the route's limit.",
    4429: "Rate limited (RATE_LIMITED): too many connections; retry later.",
    4500: "Internal error (INTERNAL): logged on the server with the request id; no trace is sent.",
    4503: "Unavailable (SERVICE_UNAVAILABLE): a dependency is not ready, or the server is shutting down.",
}
MAX_REASON_BYTES = 123


def close_code_for(status: int) -> int:
    """The WebSocket close code for an HTTP status: ``4000 + status`` (4500 outside 400-599)."""
    return 4000 + status if 400 <= status <= 599 else 4500


def close_reason(err: ApiError) -> str:
    """``"<CODE>: <message>"`` within the 123 bytes a close frame may carry."""
    reason = f"{err.code}: {err.message}".encode()
    if len(reason) > MAX_REASON_BYTES:
        reason = reason[:MAX_REASON_BYTES]
    return reason.decode("utf-8", errors="ignore")


async def close_with_error(req: Any, ws: Any, err: ApiError) -> None:
    """Close ``ws`` for ``err``: accept first when needed (a refused handshake would show the
    client a bare 403 and no code), then close with ``close_code_for(err.status)``."""
    code = close_code_for(err.status)
    stats: Counter[str] | None = getattr(getattr(getattr(req.context, "svc", None), "kernel", None),
                                         "state", {}).get("ws_stats")
    if stats is not None:
        stats[str(code)] += 1
    if ws.closed:
        return
    try:
        if ws.unaccepted:
            await ws.accept(headers=_accept_headers(req, ws, {}))
        await ws.close(code, close_reason(err))
    except Exception as exc:  # noqa: BLE001 - the client may already be gone
        log.debug("could not close a WebSocket with %s: %s", code, exc)


def _accept_headers(req: Any, ws: Any, extra: dict[str, str]) -> dict[str, str] | None:
    if not ws.supports_accept_headers:
        return None
    ctx = getattr(req.context, "svc", None)
    headers = {"X-Request-Id": ctx.request_id} if ctx is not None else {}
    headers.update(extra)
    return headers


class _HeaderSink:
    """Collects the headers the rate limiter sets, for the handshake answer."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}

    def set_header(self, name: str, value: str) -> None:
        self.headers[name] = value


class WebSocketGateMiddleware:
    """The handshake's request id, site, Origin, principal, auth level and rate limit; then accept."""

    def __init__(self, kernel: Kernel, table: RouteTable, gate: RouteGateMiddleware) -> None:
        self.kernel = kernel
        self.table = table
        self.gate = gate
        kernel.state.setdefault("ws_stats", Counter())

    async def process_request_ws(self, req: Any, ws: Any) -> None:
        from kernel.http.middleware import valid_request_id

        incoming = req.get_header("X-Request-Id")
        rid = incoming if valid_request_id(incoming) else uuid.uuid4().hex
        req.context.svc = RequestContext(kernel=self.kernel, request_id=rid, client_ip=req.remote_addr or "")

    async def process_resource_ws(self, req: Any, ws: Any, resource: Any, params: dict[str, Any]) -> None:
        route = self.table.for_template(req.uri_template)
        if route is None:
            return
        ctx: RequestContext = req.context.svc
        sink = _HeaderSink()

        async def check_origin() -> None:
            # A protocol that names its site in its first message has the Origin checked then
            # (``readmit``): a browser cannot send X-Svc-Site on the handshake.
            if not (route.init_credentials and ctx.site_id is None):
                await self._check_origin(req, ctx)

        await self.gate.admit(req, ctx, route, "WEBSOCKET", sink, after_site=check_origin, params=params)
        subprotocol = None
        if route.subprotocols:
            offered = list(ws.subprotocols or ())
            subprotocol = next((p for p in offered if p in route.subprotocols), None)
            if subprotocol is None:
                raise ApiError.validation(
                    f"No shared subprotocol; this route speaks {', '.join(route.subprotocols)}",
                    path=["headers", "Sec-WebSocket-Protocol"])
        if route.init_credentials:
            req.context.ws_readmit = lambda headers: self._readmit(req, route, params, headers)
        await ws.accept(subprotocol=subprotocol, headers=_accept_headers(req, ws, sink.headers))
        self.kernel.state["ws_stats"]["accepted"] += 1

    async def _check_origin(self, req: Any, ctx: RequestContext) -> None:
        origin = req.get_header("Origin")
        if not origin:
            return  # a server-side client (docs/architecture.md, WebSockets)
        if same_origin(origin, req.netloc, req.scheme in ("https", "wss")):
            return
        if not await origin_allowed(self.kernel, ctx.site_id, origin):
            raise ApiError.forbidden(f"The origin {origin[:60]} is not allowed for this site",
                                     reason="ORIGIN_NOT_ALLOWED")

    async def _readmit(self, req: Any, route: Any, params: dict[str, Any], headers: dict[str, str]) -> RequestContext:
        first: RequestContext = req.context.svc
        ctx = RequestContext(kernel=self.kernel, request_id=first.request_id, client_ip=first.client_ip)
        overlay = _OverlayRequest(req, headers)
        if first.site_id is not None:
            named = overlay.get_header("X-Svc-Site")
            if named is not None and named.strip() != first.site_id:
                raise ApiError.validation("The first message names another site than the handshake",
                                          path=["payload", "X-Svc-Site"])

        async def check_origin() -> None:
            await self._check_origin(req, ctx)

        await self.gate.admit(overlay, ctx, route, "WEBSOCKET", _HeaderSink(), after_site=check_origin,
                              params=params)
        req.context.svc = ctx
        return ctx


class _OverlayRequest:
    """The handshake request, with the headers a protocol's first message carries laid over its
    own (``readmit``)."""

    def __init__(self, req: Any, headers: dict[str, str]) -> None:
        self._req = req
        self._headers = {name.lower(): value for name, value in headers.items()}

    def get_header(self, name: str, *args: Any, **kwargs: Any) -> Any:
        value = self._headers.get(name.lower())
        return value if value is not None else self._req.get_header(name, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._req, name)


async def readmit(req: Any, headers: dict[str, str]) -> RequestContext:
    """Admit the socket of a ``Route(init_credentials=True)`` again, with ``headers``
    (``Authorization``, ``X-Svc-Site``) from the protocol's first message laid over the
    handshake's: the site, the Origin check against it, the principal, the auth level and the
    rate limit, as at the handshake. Returns the new request context (also ``req.context.svc``);
    raises ``ApiError`` like the handshake (a foreign site in the message: 400)."""
    return await req.context.ws_readmit(headers)


async def receive_json(ws: Any, *, max_bytes: int = 64 * 1024) -> Any:
    """The next frame as JSON: a frame over ``max_bytes`` closes with 4413, one that is not
    JSON with 4400 (as ``ApiError``; the kernel's handler closes the socket)."""
    message = await ws.receive_text()
    if len(message) > max_bytes or len(message.encode()) > max_bytes:
        raise ApiError(413, "PAYLOAD_TOO_LARGE", f"A frame is at most {max_bytes} bytes")
    try:
        return json.loads(message)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        raise ApiError.validation("The frame is not valid JSON") from None
