"""Live-server fixtures: the app under a real uvicorn server, with WebSocket and SSE clients.

``httpx.ASGITransport`` cannot stream (no WebSocket, an SSE body arrives only when it ends), so
tests of sockets and streams run the app under uvicorn on a free port of 127.0.0.1, in the
test's own event loop, and talk to it over TCP:

    async def test_feed(live_server, svc_app):
        server = await live_server(svc_app)           # started; stopped at the test's end
        async with server.ws("/api/v1/feed", headers=...) as ws:       # httpx-ws session
            await ws.send_json({...}); await ws.receive_json()
        async with server.sse("/api/v1/feed.sse", headers=...) as events:  # httpx-sse
            async for event in events.aiter_sse(): ...
        await server.client.get("/api/v1/...")        # plain HTTP through the real server

``live_app`` is ``svc_app`` served that way. The server does not run the ASGI lifespan: the
app given was already started by ``make_app``, and ``make_app`` stops it after the server.
Imported by ``kernel/testing/__init__.py`` (the pytest plugin), which re-exports these fixtures.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import uvicorn

try:
    import pytest_asyncio
except ImportError:  # without svc-cms's test extra: see kernel/testing/__init__.py (loaded as a pytest11 plugin)
    import types

    import pytest

    pytest_asyncio = types.SimpleNamespace(fixture=pytest.fixture)


class _TestServer(uvicorn.Server):
    """uvicorn without signal handlers (the test process keeps its own), and without the 0.1 s
    polling of its main loop nor the 0.1 s pause of its shutdown: ``stop()`` ends it at once."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.stop_requested = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield

    async def main_loop(self) -> None:
        await self.stop_requested.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()  # idle HTTP closes; a WebSocket gets 1012
        await asyncio.sleep(0)


class LiveServer:
    """One app served by uvicorn on ``base_url``; ``client`` is an httpx client bound to it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        # log_config=None: uvicorn must not reconfigure logging for every test.
        config = uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False, log_config=None,
                                ws_ping_interval=None, ws_per_message_deflate=False)  # as `svc serve`
        self.server = _TestServer(config)
        # Plain http on 127.0.0.1: verify=False spares loading the CA bundle (~50 ms per client).
        self.client = httpx.AsyncClient(base_url=self.base_url, timeout=10.0, verify=False)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> LiveServer:
        self._task = asyncio.get_running_loop().create_task(self.server.serve(sockets=[self.sock]))
        while not self.server.started:
            if self._task.done():
                self._task.result()  # raises what stopped the server
                raise RuntimeError("uvicorn stopped before it started")
            await asyncio.sleep(0.005)
        return self

    def ws(self, path: str, *, headers: dict[str, str] | None = None, params: dict[str, Any] | None = None,
           subprotocols: list[str] | None = None) -> Any:
        """``async with server.ws(path) as ws``: an httpx-ws session to ``path`` on this server."""
        from httpx_ws import aconnect_ws

        return aconnect_ws(self.base_url + path, self.client, headers=headers or {}, params=params,
                           subprotocols=subprotocols, keepalive_ping_interval_seconds=None)

    def sse(self, path: str, *, headers: dict[str, str] | None = None, params: dict[str, Any] | None = None) -> Any:
        """``async with server.sse(path) as events``: an httpx-sse ``EventSource`` (``events.response``
        is the streaming httpx response, for raw lines)."""
        from httpx_sse import aconnect_sse

        return aconnect_sse(self.client, "GET", path, headers=dict(headers or {}), params=params)

    async def stop(self) -> None:
        """Close the client, stop accepting, end open connections and wait for the server task."""
        await self.client.aclose()
        if self._task is None:
            self.sock.close()
            return
        self.server.force_exit = True  # do not wait for streams a test left open
        self.server.should_exit = True
        self.server.stop_requested.set()
        with contextlib.suppress(Exception):
            await self._task
        leftover = list(self.server.server_state.tasks)
        for task in leftover:
            task.cancel()
        await asyncio.gather(*leftover, return_exceptions=True)
        self.sock.close()
        self._task = None


@pytest_asyncio.fixture
async def live_server(make_app: Any) -> AsyncIterator[Callable[[Any], Awaitable[LiveServer]]]:
    """``await live_server(test_app)`` (a ``TestApp`` or an ASGI app): a started ``LiveServer``;
    every server started this way is stopped at the end of the test, before ``make_app`` stops
    the apps (hence the dependency)."""
    servers: list[LiveServer] = []

    async def start(target: Any) -> LiveServer:
        server = LiveServer(getattr(target, "app", target))
        servers.append(server)
        return await server.start()

    try:
        yield start
    finally:
        for server in reversed(servers):
            await server.stop()


@pytest_asyncio.fixture
async def live_app(live_server: Callable[[Any], Awaitable[LiveServer]], svc_app: Any) -> LiveServer:
    """The default app (``svc_app``) served by uvicorn."""
    return await live_server(svc_app)
