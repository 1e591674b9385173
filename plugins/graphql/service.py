"""Running a GraphQL request for a site: its schema (cached per schema version), the document
(parsed and validated once per site, schema version and query text), the execution.

No Falcon here: ``routes`` hands in the request context and the body, ``subscriptions`` the
same for streams. The schema is built at most once per (site, schema version) at a time:
concurrent requests after a schema change wait for the one build (``SiteCache.get_or_load``).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    GraphQLError,
    NoSchemaIntrospectionCustomRule,
    OperationType,
    execute,
    get_operation_ast,
    parse,
    specified_rules,
    validate,
)

from plugins.graphql.declared import DOCUMENT_CACHE, SCHEMA_CACHE, VIEW_CACHE
from plugins.graphql.errors import error_body, format_error, format_result
from plugins.graphql.guards import MAX_QUERY_CHARS, MAX_TOKENS, Limits, cost_rule, guard_error
from plugins.graphql.schema import SiteGraph, build
from plugins.schema import api as schema_api

MAX_CACHED_QUERY = 8_192  # characters; longer documents are parsed every time, not held
BUILDS = "graphql.schema_builds"  # kernel.state counter: schemas built by this process
VIEW_BUILDS = "graphql.view_builds"  # kernel.state counter: member views built by this process


@dataclass
class GraphQLContext:
    """``info.context`` of every resolver: who asks (``ctx``) and the site's schema."""

    ctx: Any
    graph: SiteGraph


def development(kernel: Any) -> bool:
    return kernel.settings.env == "development"


def open_schema(ctx: Any) -> bool:
    """Whether introspection and "Did you mean" suggestions answer ``ctx``'s caller: in
    development, and only to admins. The schema is the site's, not the caller's: a member would
    learn the names of fields its permissions hide (the schema routes hide them too)."""
    return development(ctx.kernel) and bool(ctx.principal.is_admin)


async def site_graph(kernel: Any, site_id: str) -> SiteGraph:
    """The site's schema at its current schema version, built once (single flight)."""
    snap = await schema_api.get_schema(kernel, site_id)

    async def load(_stale: Any) -> SiteGraph:
        kernel.state[BUILDS] = kernel.state.get(BUILDS, 0) + 1
        # In a thread: a large schema takes milliseconds; the loop keeps serving meanwhile,
        # and whoever needs this schema awaits the same load.
        return await asyncio.to_thread(build, snap)

    return await kernel.site_caches[SCHEMA_CACHE.name].get_or_load(site_id, snap.version, load)


def read_view(snapshot: Any) -> Hashable:
    """What decides which fields a member sees: its read rules' collections and field lists
    (``AccessSnapshot.decide`` answers ``field_allowed`` from nothing else; conditions only pick
    rows). Members holding the same rules share one view."""
    return frozenset((r.collection, frozenset(r.fields)) for r in snapshot.rules if r.action == "read")


async def caller_graph(ctx: Any) -> SiteGraph:
    """The schema ``ctx``'s caller validates and runs against: the site's for admins; for anyone
    else the site's without the fields its read permissions hide (``schema.build``'s ``shown``),
    so a hidden field answers exactly as a field that does not exist (docs/graphql.md, "What a
    member sees"). The schema routes hide the same fields (plugins/schema/visibility.py)."""
    kernel, site_id = ctx.kernel, ctx.require_site()
    if ctx.principal.is_admin or kernel.access is None:
        return await site_graph(kernel, site_id)
    access = await kernel.access.snapshot(ctx.principal, site_id)
    if access.admin:
        return await site_graph(kernel, site_id)
    snap = await schema_api.get_schema(kernel, site_id)
    view = read_view(access)

    async def load(_stale: Any) -> SiteGraph:
        kernel.state[VIEW_BUILDS] = kernel.state.get(VIEW_BUILDS, 0) + 1
        decisions: dict[str, Any] = {}

        def shown(collection: str, name: str) -> bool:
            found = decisions.get(collection)
            if found is None:
                found = decisions[collection] = access.decide(collection, "read")
            return found.field_allowed(name)

        return await asyncio.to_thread(build, snap, shown, view)

    return await kernel.site_caches[VIEW_CACHE.name].get_or_load(site_id, (snap.version, view), load)


def prepare(kernel: Any, graph: SiteGraph, text: str, dev: bool) -> tuple[DocumentNode | None, list[GraphQLError]]:
    """``(document, [])`` for a valid document, ``(None, errors)`` otherwise; cached. ``dev``:
    introspection and suggestions allowed (``open_schema``)."""
    limits = Limits.from_settings(kernel.settings)
    if len(text) > MAX_QUERY_CHARS:
        return None, [guard_error(f"A document may hold at most {MAX_QUERY_CHARS} characters")]
    cache = kernel.site_caches[DOCUMENT_CACHE.name]
    key = (graph.version, graph.view, dev, limits, text)
    hit = cache.get(graph.site_id, key)
    if hit is not None:
        return hit
    try:
        document = parse(text, max_tokens=MAX_TOKENS)
    except GraphQLError as exc:
        result: tuple[DocumentNode | None, list[GraphQLError]] = (None, [exc])
    else:
        rules = [*specified_rules, cost_rule(limits)]
        if not dev:
            rules.append(NoSchemaIntrospectionCustomRule)
        errors = validate(graph.schema, document, rules, hide_suggestions=not dev)
        result = (None, errors) if errors else (document, [])
    if len(text) <= MAX_CACHED_QUERY:
        cache.put(graph.site_id, key, result)
    return result


@dataclass(frozen=True)
class Request:
    """A GraphQL request, checked: the document text, variables and operation name."""

    query: str
    variables: dict[str, Any] | None
    operation_name: str | None


def parse_request(body: Any) -> Request | dict[str, Any]:
    """The request in ``body`` (a POST body, or GET's query parameters, variables decoded), or
    the error result to answer."""
    if not isinstance(body, dict):
        return error_body("The body must be a JSON object with 'query'")
    query, variables, name = body.get("query"), body.get("variables"), body.get("operationName")
    if not isinstance(query, str) or not query.strip():
        return error_body("'query' is required: a GraphQL document")
    if variables is not None and not isinstance(variables, dict):
        return error_body("'variables' must be a JSON object")
    if name is not None and not isinstance(name, str):
        return error_body("'operationName' must be a string")
    return Request(query, variables, name or None)


async def run(ctx: Any, request: Request, *, mutations: bool = True) -> dict[str, Any]:
    """The result of a query or mutation (``mutations=False``: GET, queries only)."""
    kernel = ctx.kernel
    graph = await caller_graph(ctx)
    dev = open_schema(ctx)
    document, errors = prepare(kernel, graph, request.query, dev)
    if document is None:
        return {"data": None, "errors": [format_error(e, ctx.request_id) for e in errors]}
    operation = get_operation_ast(document, request.operation_name)
    if operation is not None and operation.operation == OperationType.SUBSCRIPTION:
        return error_body("A subscription needs Accept: text/event-stream")
    if operation is not None and operation.operation == OperationType.MUTATION and not mutations:
        return error_body("Mutations need POST")
    result = execute(graph.schema, document, context_value=GraphQLContext(ctx, graph),
                     variable_values=request.variables, operation_name=request.operation_name,
                     hide_suggestions=not dev)
    if inspect.isawaitable(result):
        result = await result
    return format_result(result, ctx.request_id)
