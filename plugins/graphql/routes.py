"""``/graphql``: POST runs an operation; GET streams a subscription (``Accept:
text/event-stream``), or upgrades to a WebSocket speaking ``graphql-transport-ws`` (``ws``), and in development serves the explorer (or runs a query given as
``?query=``). In production a GET without the event-stream Accept header is 404.

The modules that run GraphQL (``service``, ``streams``, ``ws``, ``errors``: graphql-core) are
imported by the first request, not with the plugin (``declared``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernel.base.errors import ApiError
from kernel.http.media import read_json
from kernel.http.middleware import request_context
from kernel.http.sse import stream_events

EXPLORER = Path(__file__).resolve().parent / "explorer.html"


def wants_stream(req: Any) -> bool:
    return "text/event-stream" in (req.get_header("Accept") or "")


def _answer(resp: Any, result: dict[str, Any]) -> None:
    resp.status = 200  # GraphQL errors travel in the body (docs/graphql.md, Errors)
    resp.set_header("Cache-Control", "no-store")
    resp.media = result


def _query_params(req: Any) -> dict[str, Any] | dict[str, Any]:
    """GET's ``query``, ``variables`` (JSON text) and ``operationName``, as a POST body."""
    body: dict[str, Any] = {"query": req.get_param("query"), "operationName": req.get_param("operationName")}
    raw = req.get_param("variables")
    if raw:
        try:
            body["variables"] = json.loads(raw)
        except ValueError:
            body["variables"] = raw  # refused by parse_request as not an object
    return body


class GraphQLResource:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self._explorer: bytes | None = None

    async def on_post(self, req: Any, resp: Any) -> None:
        from plugins.graphql import service
        from plugins.graphql.errors import error_body

        ctx = request_context(req)
        ctx.require_site()
        try:
            body = await read_json(req, expect=object, require_type=True)
        except ApiError as exc:
            if exc.status != 400:
                raise
            return _answer(resp, error_body(exc.message))
        request = service.parse_request(body)
        if wants_stream(req):
            return await self._stream(req, resp, ctx, request)
        if isinstance(request, dict):
            return _answer(resp, request)
        _answer(resp, await service.run(ctx, request))

    async def on_get(self, req: Any, resp: Any) -> None:
        from plugins.graphql import service

        ctx = request_context(req)
        if wants_stream(req):
            ctx.require_site()
            return await self._stream(req, resp, ctx, service.parse_request(_query_params(req)))
        if not service.development(self.kernel):
            raise ApiError.not_found("Not found")
        if req.get_param("query") is None:
            return self._serve_explorer(resp)
        ctx.require_site()
        request = service.parse_request(_query_params(req))
        _answer(resp, request if isinstance(request, dict) else await service.run(ctx, request, mutations=False))

    async def on_websocket(self, req: Any, socket: Any) -> None:
        from plugins.graphql import ws

        await ws.serve(req, socket, self.kernel)

    async def _stream(self, req: Any, resp: Any, ctx: Any, request: Any) -> None:
        from plugins.graphql import streams

        if isinstance(request, dict):
            frames, on_close = streams.once(request), None
        else:
            frames, on_close = await streams.open_stream(ctx, request)
        stream_events(req, resp, frames, on_close=on_close)

    def _serve_explorer(self, resp: Any) -> None:
        if self._explorer is None:
            self._explorer = EXPLORER.read_bytes()
        resp.content_type = "text/html; charset=utf-8"
        resp.set_header("Cache-Control", "no-store")
        # The page is self-contained: no script, style or font from anywhere else.
        resp.set_header("Content-Security-Policy",
                        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                        "connect-src 'self'; base-uri 'none'; form-action 'none'")
        resp.data = self._explorer
