"""The SSE transport of subscriptions: ``open_stream(ctx, request)`` answers the frames.

Frames follow the GraphQL-over-SSE "distinct connections" shape: ``event: next`` with one
execution result as data, ``event: complete`` at the end. A document that is invalid, not a
subscription, or refused when it starts (no read permission) gets one ``next`` frame with the
errors, then ``complete``. Open live streams are counted per site across workers and nodes
(``SVC_GQL_MAX_SUBSCRIPTIONS``; 429 ``RATE_LIMITED`` above it) in ``kernel.messaging.slots``: in Redis, on
the node's broker, or in the one process.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from falcon.asgi import SSEvent
from graphql import ExecutionResult, OperationType, get_operation_ast, subscribe

from kernel.base.errors import ApiError
from plugins.graphql.declared import STREAMS
from plugins.graphql.errors import error_body, format_error, format_result
from plugins.graphql.service import GraphQLContext, caller_graph, open_schema, prepare


async def once(result: dict[str, Any]) -> AsyncIterator[SSEvent]:
    yield SSEvent(event="next", json=result)
    yield SSEvent(event="complete")


async def _frames(results: AsyncIterator[dict[str, Any]]) -> AsyncIterator[SSEvent]:
    async for result in results:
        yield SSEvent(event="next", json=result)
    yield SSEvent(event="complete")


async def open_stream(ctx: Any, request: Any) -> tuple[AsyncIterator[SSEvent], Callable[[], Awaitable[None]] | None]:
    """The SSE frames of a subscription request and, for a live stream, the call that gives back
    the connection slot it holds towards the site's cap when it closes (else one error frame
    and None)."""
    results, on_close = await open_results(ctx, request)
    if isinstance(results, dict):
        return once(results), None
    return _frames(results), on_close


async def open_results(ctx: Any, request: Any) -> tuple[AsyncIterator[dict[str, Any]] | dict[str, Any],
                                                        Callable[[], Awaitable[None]] | None]:
    """The formatted execution results of a live subscription and the call that gives back its
    slot towards the site's cap, or the one error result to answer instead (and None). Shared
    by the SSE transport and the WebSocket one (``ws``). 429 ``RATE_LIMITED`` past the cap."""
    kernel = ctx.kernel
    site_id = ctx.require_site()
    slots = kernel.state[STREAMS]
    slot = await slots.admit(site_id)  # at once: concurrent opens must not slip past the cap
    if slot is None:
        raise ApiError(429, "RATE_LIMITED", "Too many open GraphQL subscriptions for this site")
    live = False
    try:
        results = await _open(ctx, site_id, request)
        live = not isinstance(results, dict)
        return results, (lambda: slots.release(site_id, slot)) if live else None
    finally:
        if not live:
            await slots.release(site_id, slot)


async def _results(stream: Any, request_id: str) -> AsyncIterator[dict[str, Any]]:
    try:
        async for result in stream:
            yield format_result(result, request_id)
    finally:
        closer = getattr(stream, "aclose", None)
        if closer is not None:
            await closer()


async def _open(ctx: Any, site_id: str, request: Any) -> AsyncIterator[dict[str, Any]] | dict[str, Any]:
    kernel = ctx.kernel
    graph = await caller_graph(ctx)
    dev = open_schema(ctx)
    document, errors = prepare(kernel, graph, request.query, dev)
    if document is None:
        return {"data": None, "errors": [format_error(e, ctx.request_id) for e in errors]}
    operation = get_operation_ast(document, request.operation_name)
    if operation is None or operation.operation != OperationType.SUBSCRIPTION:
        return error_body("The event stream takes a subscription operation")
    result = subscribe(graph.schema, document, context_value=GraphQLContext(ctx, graph),
                       variable_values=request.variables, operation_name=request.operation_name,
                       hide_suggestions=not dev)
    if inspect.isawaitable(result):
        result = await result
    if isinstance(result, ExecutionResult):
        return {"data": None, "errors": [format_error(e, ctx.request_id) for e in result.errors or ()]}
    return _results(result, ctx.request_id)
