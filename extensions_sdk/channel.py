"""The one channel between the server and an extension's runner process: framed JSON over a
Unix socket pair (docs/extensions.md, "Out of process").

A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON (at most
``MAX_FRAME``). Either side may call the other: a request is ``{"id": n, "op": ..., ...}`` and
its answer ``{"re": n, "ok": value}`` or ``{"re": n, "error": {status, code, message}}`` (an
``ApiError`` on the far side) or ``{"re": n, "crash": "TypeError: ..."}`` (any other exception).
Values that JSON lacks (datetimes, decimals, UUIDs) travel as their ``str``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import struct
from collections.abc import Awaitable, Callable
from typing import Any

from kernel.base.errors import ApiError

MAX_FRAME = 16 * 1024 * 1024
_HEADER = struct.Struct(">I")
RESERVED = frozenset({"id", "op", "re"})


class Crashed(Exception):
    """The far side raised something that is not an ``ApiError`` (its text is the message)."""


class Closed(Exception):
    """The channel closed before the answer came (the other process is gone)."""


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, default=str, separators=(",", ":")).encode()
    if len(body) > MAX_FRAME:
        raise ValueError(f"a message of {len(body)} bytes is over the channel's {MAX_FRAME}")
    return _HEADER.pack(len(body)) + body


def error_of(exc: ApiError) -> dict[str, Any]:
    first = exc.details[0]
    return {
        "status": exc.status,
        "code": first.code,
        "message": first.message,
        "path": list(first.path or []),
        "extensions": dict(first.extensions or {}),
    }


def api_error(error: dict[str, Any]) -> ApiError:
    return ApiError(
        int(error.get("status") or 500),
        str(error.get("code") or "INTERNAL"),
        str(error.get("message") or ""),
        path=error.get("path") or None,
        extensions=error.get("extensions") or None,
    )


Handler = Callable[[dict[str, Any]], Awaitable[Any]]


class Peer:
    """One end of the channel: ``call(op, **args)`` asks the other end; requests from it go to
    ``handler(message)``, each in a task of its own, and its return value is the answer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handler: Handler) -> None:
        self.reader, self.writer, self.handler = reader, writer, handler
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.closed = asyncio.Event()
        self._loop_task = asyncio.get_running_loop().create_task(self._read_loop())

    async def call(self, op: str, **args: Any) -> Any:
        if self.closed.is_set():
            raise Closed("the channel is closed")
        if RESERVED & args.keys():  # an argument named so would replace the frame's own id
            raise ValueError(f"a channel call's arguments may not be named {sorted(RESERVED & args.keys())}")
        n = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[n] = future
        try:
            self.writer.write(encode({"id": n, "op": op, **args}))
            await self.writer.drain()
            return result(await future)
        except (ConnectionError, RuntimeError) as exc:
            raise Closed(str(exc)) from None
        finally:
            self._waiting.pop(n, None)

    async def _read_loop(self) -> None:
        try:
            while True:
                head = await self.reader.readexactly(_HEADER.size)
                (size,) = _HEADER.unpack(head)
                if size > MAX_FRAME:
                    break
                message = json.loads(await self.reader.readexactly(size))
                if "re" in message:
                    future = self._waiting.get(message["re"])
                    if future is not None and not future.done():
                        future.set_result(message)
                    continue
                task = asyncio.get_running_loop().create_task(self._answer(message))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, OSError):
            pass
        finally:
            self._close_waiting()

    def _close_waiting(self) -> None:
        self.closed.set()
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(Closed("the channel closed"))

    async def _answer(self, message: dict[str, Any]) -> None:
        try:
            reply: dict[str, Any] = {"re": message.get("id"), "ok": await self.handler(message)}
        except ApiError as exc:
            reply = {"re": message.get("id"), "error": error_of(exc)}
        except Exception as exc:  # noqa: BLE001 - the far side gets the crash, this side goes on
            reply = {"re": message.get("id"), "crash": f"{type(exc).__name__}: {exc}"[:2000]}
        try:
            self.writer.write(encode(reply))
        except ValueError as exc:
            self.writer.write(encode({"re": message.get("id"), "crash": str(exc)}))
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.writer.drain()

    def close(self) -> None:
        self._loop_task.cancel()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            self.writer.close()
        self._close_waiting()


def result(reply: dict[str, Any]) -> Any:
    """The value of an answer, or its error raised (``ApiError`` or ``Crashed``)."""
    if "error" in reply:
        raise api_error(reply["error"])
    if "crash" in reply:
        raise Crashed(str(reply["crash"]))
    return reply.get("ok")


async def open_peer(sock: Any, handler: Handler) -> Peer:
    reader, writer = await asyncio.open_unix_connection(sock=sock, limit=MAX_FRAME + _HEADER.size)
    return Peer(reader, writer, handler)
