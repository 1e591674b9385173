"""Server-Sent Events for plugins: ``stream_events(req, resp, source)``.

``source`` is an async iterator (a topic ``Subscription``, an async generator); each item
becomes one event: a ``falcon.asgi.SSEvent`` is sent as is, a ``TopicMessage`` as
``event: <topic>`` with its data as JSON, a ``Lagged`` marker as ``event: lagged`` with
``{"missed": n}``, any other value as JSON data. When the source has nothing for
``heartbeat`` seconds (``SVC_SSE_HEARTBEAT_SECONDS``), a comment line (``: heartbeat``) keeps
proxies from closing the idle stream, and is how a client that went away is noticed: Falcon
stops the stream at the next send after the disconnect, and the source is then closed
(``aclose()``, which releases a topic subscription) together with ``on_close``.

The answer is ``200 text/event-stream`` with ``Cache-Control: no-store`` and
``X-Accel-Buffering: no`` (nginx would otherwise buffer the stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from falcon.asgi import SSEvent

from kernel.messaging.topics import Lagged, TopicMessage
from kernel.metrics.live import live_connection

log = logging.getLogger("svc.http.sse")

__all__ = ["SSEvent", "encode_event", "stream_events"]


def encode_event(item: Any) -> SSEvent:
    """The SSE event for one item of a source (see the module docstring)."""
    if isinstance(item, SSEvent):
        return item
    if isinstance(item, TopicMessage):
        return SSEvent(event=item.topic, json=item.data)
    if isinstance(item, Lagged):
        return SSEvent(event="lagged", json={"missed": item.missed})
    return SSEvent(json=item)


def stream_events(req: Any, resp: Any, source: AsyncIterator[Any], *, heartbeat: float | None = None,
                  encode: Callable[[Any], SSEvent | None] = encode_event,
                  on_close: Callable[[], Any] | None = None) -> None:
    """Answer ``req`` with an event stream of ``source``; call it last in the responder.

    ``encode`` turns an item into an ``SSEvent`` (``None`` skips the item). ``heartbeat``
    defaults to the ``SVC_SSE_HEARTBEAT_SECONDS`` setting.
    """
    kernel = req.context.svc.kernel
    interval = float(heartbeat if heartbeat is not None else kernel.settings.sse_heartbeat_seconds)
    if interval <= 0:
        raise ValueError("heartbeat must be a positive number of seconds")
    resp.content_type = "text/event-stream"
    resp.set_header("Cache-Control", "no-store")
    resp.set_header("X-Accel-Buffering", "no")
    resp.sse = _emit(source, interval, encode, on_close, kernel)


async def _emit(source: AsyncIterator[Any], interval: float, encode: Callable[[Any], SSEvent | None],
                on_close: Callable[[], Any] | None, kernel: Any = None) -> AsyncIterator[SSEvent]:
    iterator = source.__aiter__()
    pending: asyncio.Future[Any] | None = None
    counted = live_connection(kernel, "sse")
    counted.__enter__()  # svc_live_connections{kind="sse"} while the stream is open
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(iterator.__anext__())
            # Wait without cancelling the read: a heartbeat must not lose the next item.
            done, _ = await asyncio.wait({pending}, timeout=interval)
            if not done:
                yield SSEvent(comment="heartbeat")
                continue
            task, pending = pending, None
            try:
                item = task.result()
            except StopAsyncIteration:
                return
            event = encode(item)
            if event is not None:
                yield event
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
        closer = getattr(source, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
        if on_close is not None:
            try:
                result = on_close()
                if inspect.isawaitable(result):
                    await result
            except Exception:  # noqa: BLE001 - teardown must finish
                log.exception("an SSE on_close callback failed")
        counted.__exit__(None, None, None)
