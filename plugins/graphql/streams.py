"""The SSE transport of subscriptions: ``open_stream(ctx, request)`` answers the frames.

Frames follow the GraphQL-over-SSE "distinct connections" shape: ``event: next`` with one
execution result as data, ``event: complete`` at the end. A document that is invalid, not a
subscription, or refused when it starts (no read permission) gets one ``next`` frame with the
errors, then ``complete``. Open live streams are counted per site across workers and nodes
(``SVC_GQL_MAX_SUBSCRIPTIONS``; 429 ``RATE_LIMITED`` above it) in ``kernel.slots``: in Redis, on
the node's broker, or in the one process.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from falcon.asgi import SSEvent
from graphql import ExecutionResult, OperationType, get_operation_ast, subscribe

from kernel.errors import ApiError
from plugins.graphql.errors import error_body, format_error, format_result
from plugins.graphql.service import GraphQLContext, development, prepare, site_graph

STREAMS = "graphql.streams"  # kernel.state: the slots of open streams (kernel.slots.ConnectionLimiter)
STREAM_LEASE = 30.0  # seconds a slot lives in Redis without renewal (a dead worker's go after it)


async def once(result: dict[str, Any]) -> AsyncIterator[SSEvent]:
    yield SSEvent(event="next", json=result)
    yield SSEvent(event="complete")


async def _frames(stream: Any, request_id: str) -> AsyncIterator[SSEvent]:
    try:
        async for result in stream:
            yield SSEvent(event="next", json=format_result(result, request_id))
    finally:
        closer = getattr(stream, "aclose", None)
        if closer is not None:
            await closer()
    yield SSEvent(event="complete")


async def open_stream(ctx: Any, request: Any) -> tuple[AsyncIterator[SSEvent], Callable[[], Awaitable[None]] | None]:
    """The SSE frames of a subscription request and, for a live stream, the call that gives back
    the connection slot it holds towards the site's cap when it closes (else one error frame
    and None)."""
    kernel = ctx.kernel
    site_id = ctx.require_site()
    slots = kernel.state[STREAMS]
    slot = await slots.admit(site_id)  # at once: concurrent opens must not slip past the cap
    if slot is None:
        raise ApiError(429, "RATE_LIMITED", "Too many open GraphQL subscriptions for this site")
    live = False
    try:
        frames, live = await _open(ctx, site_id, request)
        return frames, (lambda: slots.release(site_id, slot)) if live else None
    finally:
        if not live:
            await slots.release(site_id, slot)


async def _open(ctx: Any, site_id: str, request: Any) -> tuple[AsyncIterator[SSEvent], bool]:
    kernel = ctx.kernel
    graph = await site_graph(kernel, site_id)
    document, errors = prepare(kernel, graph, request.query)
    if document is None:
        return once({"data": None, "errors": [format_error(e, ctx.request_id) for e in errors]}), False
    operation = get_operation_ast(document, request.operation_name)
    if operation is None or operation.operation != OperationType.SUBSCRIPTION:
        return once(error_body("The event stream takes a subscription operation")), False
    result = subscribe(graph.schema, document, context_value=GraphQLContext(ctx, graph),
                       variable_values=request.variables, operation_name=request.operation_name,
                       hide_suggestions=not development(kernel))
    if inspect.isawaitable(result):
        result = await result
    if isinstance(result, ExecutionResult):
        return once({"data": None, "errors": [format_error(e, ctx.request_id) for e in result.errors or ()]}), False
    return _frames(result, ctx.request_id), True
