"""A test-only plugin with a WebSocket route, an SSE route, origins and tickets of its own."""

from __future__ import annotations

import asyncio
from typing import Any

from kernel import ApiError, Route, TicketGrant, hookimpl
from kernel.http.middleware import request_context
from kernel.http.sse import stream_events
from kernel.http.websocket import receive_json


class EchoSocket:
    """Says who and where the socket is, then echoes frames; ``{"fail": ...}`` makes it fail."""

    async def on_websocket(self, req: Any, ws: Any) -> None:
        ctx = request_context(req)
        await ws.send_media({"type": "hello", "site": ctx.site_id, "user": ctx.principal.user_id,
                             "requestId": ctx.request_id})
        while True:
            frame = await receive_json(ws, max_bytes=1024)
            if not isinstance(frame, dict):
                raise ApiError.validation("A frame is a JSON object")
            if frame.get("fail") == "crash":
                raise RuntimeError("secret internals /srv/app.py line 42")
            if frame.get("fail") == "forbidden":
                raise ApiError.forbidden("Not this one")
            await ws.send_media({"type": "echo", "frame": frame})


class TopicSocket:
    """Forwards the site's ``news.*`` topic; a subscriber that falls behind is closed with 4408."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_websocket(self, req: Any, ws: Any) -> None:
        ctx = request_context(req)
        size = int(req.get_param("queue") or 256)
        async with self.kernel.topics.subscribe(ctx.site_id, "news.*", queue_size=size, overflow="drop") as sub:
            await ws.send_media({"type": "ready"})
            await receive_json(ws)  # the client says when to start reading
            async for message in sub:
                await ws.send_media({"type": "event", "topic": message.topic, "data": message.data})
            if sub.dropped:
                await ws.close(4408, "LAGGED: the client did not keep up")


class NewsStream:
    """SSE of the site's ``news.*`` topic with a short heartbeat."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.closed = asyncio.Event()

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        sub = await self.kernel.topics.subscribe(ctx.site_id, "news.*").start()
        stream_events(req, resp, sub, heartbeat=float(req.get_param("heartbeat") or 0.05),
                      on_close=self.closed.set)


class LivePlugin:
    """Routes under ``/live-test``; ``origins`` by site and ``tickets`` are set by the tests."""

    name = "livetest"

    def __init__(self) -> None:
        self.origins: dict[str, list[str]] = {}
        self.tickets: dict[str, TicketGrant] = {}
        self.news: NewsStream | None = None

    @hookimpl
    def register_routes(self, kernel: Any) -> list[Route]:
        self.news = NewsStream(kernel)
        return [
            Route("/live-test/echo", EchoSocket(), auth="bearer", rate_limit="auth", tickets=True),
            Route("/live-test/anyone", EchoSocket(), site="optional", auth="public"),
            Route("/live-test/proto", EchoSocket(), auth="public", subprotocols=("svc.v2", "svc.v1")),
            Route("/live-test/topic", TopicSocket(kernel), auth="bearer"),
            Route("/live-test/news", self.news, auth="bearer", tickets=True),
        ]

    @hookimpl
    def site_allowed_origins(self, kernel: Any, site_id: str) -> list[str]:
        return self.origins.get(site_id, [])

    @hookimpl
    async def authenticate_ticket(self, ticket: str, request: Any, kernel: Any, route: Any) -> Any:
        grant = self.tickets.pop(ticket, None)  # single use
        if grant is None and ticket.startswith("expired-"):
            raise ApiError.unauthenticated("The ticket has expired")
        return grant

