"""Hook implementations of the graphql plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import Route, Setting, SiteCacheSpec, hookimpl
from kernel.base.settings import parse_float, parse_int
from kernel.messaging.slots import connection_limiter
from plugins.graphql import declared, routes

name = "graphql"
requires = ("items", "schema")

ERROR_CODES: dict[str, tuple[int, str]] = {
    "INVALID_FILTER": (400, "GraphQL: a `filter` argument the filter grammar refuses (in a GraphQL error body)."),
}

POST_BODY = {"type": "object", "required": ["query"], "properties": {
    "query": {"type": "string"}, "variables": {"type": "object", "additionalProperties": True}, "operationName": {"type": "string"}}}
POST_ANSWER = {"type": "object", "properties": {"data": {}, "errors": {"type": "array", "items": {"type": "object", "additionalProperties": True}}}}


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("SVC_GQL_MAX_COST", 1000, parse_int(1), "GraphQL: the maximum cost of an operation."),
        Setting("SVC_GQL_DEFAULT_LIST_SIZE", 20, parse_int(1),
                "GraphQL: the list size the cost assumes for a variable or absent `limit`."),
        Setting("SVC_GQL_MAX_LIST_MULTIPLIER", 100, parse_int(1),
                "GraphQL: the largest multiplier one list field applies to its subtree's cost."),
        Setting("SVC_GQL_MAX_SUBSCRIPTIONS", 50, parse_int(0),
                "GraphQL: open subscription streams per site, across workers and nodes (more: 429 RATE_LIMITED)."),
        Setting("SVC_GQL_WS_INIT_SECONDS", 10.0, parse_float(0.01),
                "GraphQL: seconds a graphql-transport-ws socket may take to send connection_init (then 4408)."),
    ]


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return dict(ERROR_CODES)


@hookimpl
def register_site_caches(kernel: Any) -> list[SiteCacheSpec]:
    return [declared.SCHEMA_CACHE, declared.VIEW_CACHE, declared.DOCUMENT_CACHE]


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    openapi = {"post": {
        "summary": "Run a GraphQL operation (errors travel in the body with HTTP 200)",
        "requestBody": {"required": True, "content": {"application/json": {"schema": POST_BODY}}},
        "responses": {"200": {"description": "The result", "content": {
            "application/json": {"schema": POST_ANSWER}, "text/event-stream": {}}}}}}
    # The same path upgrades to a WebSocket speaking graphql-transport-ws, whose credentials come
    # in its connection_init message (Route.init_credentials).
    return [Route("/graphql", routes.GraphQLResource(kernel), site="optional", auth="public",
                  rate_limit="items_read", openapi=openapi, subprotocols=(declared.PROTOCOL,), init_credentials=True)]


@hookimpl
async def startup(kernel: Any) -> None:
    slots = connection_limiter(kernel, "graphql", kernel.settings.get("gql_max_subscriptions", 50),
                               declared.STREAM_LEASE)
    slots.start()
    kernel.state[declared.STREAMS] = slots


@hookimpl
async def shutdown(kernel: Any) -> None:
    slots = kernel.state.pop(declared.STREAMS, None)
    if slots is not None:
        await slots.stop()
