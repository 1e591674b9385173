"""Subscriptions over WebSocket with the ``graphql-transport-ws`` protocol (the graphql-ws
library's, which Apollo Client and urql use by default), beside the SSE transport.

The socket (``GET /api/v1/graphql`` upgraded, subprotocol ``graphql-transport-ws``) speaks the
protocol's messages: the client's ``connection_init`` (its ``payload`` may carry
``Authorization`` and ``X-Svc-Site``, at its top level or under ``headers``, since a browser
cannot send headers on the handshake) is answered with ``connection_ack`` once the credentials
are admitted as on the handshake (``kernel.http.websocket.readmit``: site, Origin, principal,
rate limit). Then ``subscribe`` / ``next`` / ``complete`` per operation id, ``error`` for an
operation refused before it runs, and ``ping`` / ``pong`` both ways. Each live subscription holds
a slot of the site's cap (``SVC_GQL_MAX_SUBSCRIPTIONS``), like an SSE stream.

Close codes are the protocol's: 4400 an invalid message, 4401 ``subscribe`` before the ack,
4408 no ``connection_init`` within ``SVC_GQL_WS_INIT_SECONDS``, 4409 an operation id already
running, 4429 a second ``connection_init``; credentials refused close with the kernel's
``4000 + status`` (4401 a bad token, 4403 a forbidden Origin, 4404 an unknown site).
Queries and mutations are refused with an ``error`` message: they go by POST, where they are
rate-limited per request (docs/graphql.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from falcon.errors import PayloadTypeError, WebSocketDisconnected

from kernel.base.errors import ApiError
from kernel.http.websocket import readmit, receive_json
from kernel.metrics.live import live_connection
from plugins.graphql import streams
from plugins.graphql.service import Request, parse_request

log = logging.getLogger("svc.graphql")

MAX_MESSAGE_BYTES = 64 * 1024
MAX_ID_CHARS = 200
CREDENTIAL_KEYS = ("authorization", "x-svc-site")


class ProtocolClose(Exception):
    """Close the socket with one of the protocol's own codes and reasons."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def init_headers(payload: Any) -> dict[str, str]:
    """The credentials a ``connection_init`` payload carries: ``Authorization`` and
    ``X-Svc-Site`` (any case), at its top level or under ``headers``."""
    if payload is None:
        return {}
    if not isinstance(payload, dict):
        raise ProtocolClose(4400, "connection_init payload must be an object")
    found: dict[str, str] = {}
    for source in (payload.get("headers"), payload):
        if not isinstance(source, dict):
            continue
        for key, value in source.items():
            name = str(key).lower()
            if name in CREDENTIAL_KEYS and name not in found:
                if not isinstance(value, str):
                    raise ProtocolClose(4400, f"connection_init payload: {key} must be a string")
                found[name] = value
    return found


class Connection:
    """One socket: the handshake of the protocol, then its operations by id."""

    def __init__(self, req: Any, ws: Any, kernel: Any) -> None:
        self.req = req
        self.ws = ws
        self.kernel = kernel
        self.ctx: Any = None
        self.operations: dict[str, asyncio.Task[None]] = {}
        self.sending = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        async with self.sending:
            await self.ws.send_text(json.dumps(message, separators=(",", ":")))

    async def receive(self) -> dict[str, Any]:
        try:
            message = await receive_json(self.ws, max_bytes=MAX_MESSAGE_BYTES)
        except PayloadTypeError:
            raise ProtocolClose(4400, "Invalid message: messages are JSON text") from None
        except ApiError as err:
            if err.status == 413:
                raise
            raise ProtocolClose(4400, "Invalid message: not JSON") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise ProtocolClose(4400, "Invalid message: an object with a 'type' is expected")
        return message

    async def run(self) -> None:
        try:
            await self._initialise()
            while True:
                await self._handle(await self.receive())
        except ProtocolClose as close:
            with contextlib.suppress(Exception):
                await self.ws.close(close.code, close.reason)
        except WebSocketDisconnected:
            pass
        finally:
            await self._stop_all()

    async def _initialise(self) -> None:
        wait = self.kernel.settings.get("gql_ws_init_seconds", 10.0)
        while True:
            try:
                async with asyncio.timeout(wait):
                    message = await self.receive()
            except TimeoutError:
                raise ProtocolClose(4408, "Connection initialisation timeout") from None
            kind = message["type"]
            if kind == "ping":
                await self.send({"type": "pong"})
                continue
            if kind == "pong":
                continue
            if kind == "subscribe":
                raise ProtocolClose(4401, "Unauthorized")
            if kind != "connection_init":
                raise ProtocolClose(4400, f"Invalid message type '{kind[:40]}' before connection_init")
            self.ctx = await readmit(self.req, init_headers(message.get("payload")))
            self.ctx.require_site()
            await self.send({"type": "connection_ack"})
            return

    async def _handle(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "ping":
            pong: dict[str, Any] = {"type": "pong"}
            if "payload" in message:
                pong["payload"] = message["payload"]
            await self.send(pong)
        elif kind == "pong":
            return
        elif kind == "connection_init":
            raise ProtocolClose(4429, "Too many initialisation requests")
        elif kind == "subscribe":
            await self._subscribe(message)
        elif kind == "complete":
            task = self.operations.pop(_operation_id(message), None)
            if task is not None:
                task.cancel()
        else:
            raise ProtocolClose(4400, f"Invalid message type '{kind[:40]}'")

    async def _subscribe(self, message: dict[str, Any]) -> None:
        op_id = _operation_id(message)
        if op_id in self.operations:
            raise ProtocolClose(4409, f"Subscriber for {op_id} already exists")
        request = parse_request(message.get("payload"))
        if isinstance(request, dict):
            await self.send({"id": op_id, "type": "error", "payload": request["errors"]})
            return
        self.operations[op_id] = asyncio.ensure_future(self._operation(op_id, request))

    async def _operation(self, op_id: str, request: Request) -> None:
        try:
            try:
                results, on_close = await streams.open_results(self.ctx, request)
            except ApiError as err:  # the site's cap
                await self.send(
                    {
                        "id": op_id,
                        "type": "error",
                        "payload": [
                            {"message": err.message, "extensions": {"code": err.code, "status": err.status}}
                        ],
                    }
                )
                return
            if isinstance(results, dict):
                await self.send({"id": op_id, "type": "error", "payload": _errors_of(results)})
                return
            try:
                async for result in results:
                    await self.send({"id": op_id, "type": "next", "payload": result})
            finally:
                await results.aclose()  # type: ignore[attr-defined]
                if on_close is not None:
                    await on_close()
            await self.send({"id": op_id, "type": "complete"})
        except WebSocketDisconnected:
            pass
        except Exception:  # noqa: BLE001 - logged with its trace; the client gets INTERNAL, never the trace
            log.exception("GraphQL subscription %s failed (request %s)", op_id, self.ctx.request_id)
            with contextlib.suppress(Exception):
                await self.send(
                    {
                        "id": op_id,
                        "type": "error",
                        "payload": [
                            {
                                "message": "Internal error",
                                "extensions": {"code": "INTERNAL", "requestId": self.ctx.request_id},
                            }
                        ],
                    }
                )
        finally:
            if self.operations.get(op_id) is asyncio.current_task():
                del self.operations[op_id]

    async def _stop_all(self) -> None:
        tasks, self.operations = list(self.operations.values()), {}
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task


def _operation_id(message: dict[str, Any]) -> str:
    op_id = message.get("id")
    if not isinstance(op_id, str) or not op_id or len(op_id) > MAX_ID_CHARS:
        raise ProtocolClose(4400, "Invalid message: 'id' must be a non-empty string")
    return op_id


def _errors_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The errors of a refused operation (``error`` takes the list, not a result)."""
    return list(result.get("errors") or [])


async def serve(req: Any, ws: Any, kernel: Any) -> None:
    """Answer an accepted ``graphql-transport-ws`` socket until either side closes it."""
    with live_connection(kernel, "websocket"):
        await Connection(req, ws, kernel).run()
