"""Shared helpers of the realtime tests: tickets, sockets, frames."""

from __future__ import annotations

import asyncio
from typing import Any

from httpx_ws import WebSocketDisconnect

from kernel.testing import Calls

REALTIME = "/api/v1/realtime"


async def ticket(calls: Calls, kind: str = "ticket", headers: dict[str, str] | None = None) -> str:
    data = await calls.ok("post", f"/realtime/{kind}", headers=headers or {})
    assert data["ticket"].startswith("rt1.") and data["expiresAt"]
    return str(data["ticket"])


def connect(server: Any, ticket_: str, headers: dict[str, str] | None = None) -> Any:
    return server.ws(REALTIME, params={"ticket": ticket_}, headers=headers)


async def frame(ws: Any, timeout: float = 10.0) -> dict[str, Any]:
    """The next frame that is not a ping; ``timeout`` bounds a wait for one that never comes."""
    while True:
        got = await asyncio.wait_for(ws.receive_json(), timeout)
        if got.get("type") != "ping":
            return dict(got)


async def no_frame(ws: Any, wait: float = 0.3) -> None:
    """Nothing but pings arrives within ``wait`` seconds."""
    try:
        got = await frame(ws, wait)
    except TimeoutError:
        return
    raise AssertionError(f"unexpected frame {got}")


async def subscribe(ws: Any, collection: str, filter_: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "subscribe", "collection": collection}
    if filter_ is not None:
        body["filter"] = filter_
    await ws.send_json(body)
    return await frame(ws)


async def closed(session_cm: Any, *send: str) -> WebSocketDisconnect:
    """Open, send ``send``, read until the server closes: the close."""
    async with session_cm as ws:
        try:
            for text in send:
                await ws.send_text(text)
            while True:
                await asyncio.wait_for(ws.receive_text(), 10)
        except WebSocketDisconnect as close:
            return close
    raise AssertionError("the server did not close the socket")
