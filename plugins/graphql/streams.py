"""The SSE transport of subscriptions: ``open_stream(ctx, request)`` answers the frames.

Frames follow the GraphQL-over-SSE "distinct connections" shape: ``event: next`` with one
execution result as data, ``event: complete`` at the end. A document that is invalid, not a
subscription, or refused when it starts (no read permission) gets one ``next`` frame with the
errors, then ``complete``. Open live streams are counted per site (``SVC_GQL_MAX_SUBSCRIPTIONS``
per process; 429 ``RATE_LIMITED`` above it).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

from falcon.asgi import SSEvent
from graphql import ExecutionResult, OperationType, get_operation_ast, subscribe

from kernel.errors import ApiError
from plugins.graphql.errors import error_body, format_error, format_result
from plugins.graphql.service import GraphQLContext, development, prepare, site_graph

STREAMS = "graphql.streams"  # kernel.state: open streams per site in this process


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


async def open_stream(ctx: Any, request: Any) -> tuple[AsyncIterator[SSEvent], bool]:
    """The SSE frames of a subscription request, and whether it is a live stream, counted
    towards the site's cap until ``count(kernel, site, -1)`` (else one error frame)."""
    kernel = ctx.kernel
    site_id = ctx.require_site()
    if kernel.state.setdefault(STREAMS, {}).get(site_id, 0) >= kernel.settings.get("gql_max_subscriptions", 50):
        raise ApiError(429, "RATE_LIMITED", "Too many open GraphQL subscriptions for this site")
    count(kernel, site_id, 1)  # at once: concurrent opens must not slip past the cap
    live = False
    try:
        frames, live = await _open(ctx, site_id, request)
        return frames, live
    finally:
        if not live:
            count(kernel, site_id, -1)


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


def count(kernel: Any, site_id: str, delta: int) -> None:
    open_now = kernel.state.setdefault(STREAMS, {})
    value = open_now.get(site_id, 0) + delta
    if value > 0:
        open_now[site_id] = value
    else:
        open_now.pop(site_id, None)
