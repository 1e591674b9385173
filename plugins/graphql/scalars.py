"""The schema's own scalars and the event type, shared by every site's schema (immutable)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLError,
    GraphQLField,
    GraphQLID,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLString,
    ValueNode,
    value_from_ast_untyped,
)


def _json_literal(node: ValueNode, variables: dict[str, Any] | None = None) -> Any:
    # Inline object literals as well as variables (docs/graphql.md): ``filter: {views: {_gt: 5}}``.
    return value_from_ast_untyped(node, variables)


JSON = GraphQLScalarType(
    "JSON", description="Any JSON value; takes inline object literals and variables.",
    serialize=lambda value: value, parse_value=lambda value: value, parse_literal=_json_literal)


def _serialize_datetime(value: Any) -> str:
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, str):
        return value
    raise GraphQLError(f"DateTime cannot represent {value!r}")


def _parse_datetime(value: Any) -> str:
    if not isinstance(value, str):
        raise GraphQLError("DateTime takes an ISO 8601 string")
    return value


DateTime = GraphQLScalarType(
    "DateTime", description="An ISO 8601 date, time or timestamp string.",
    serialize=_serialize_datetime, parse_value=_parse_datetime,
    parse_literal=lambda node, variables=None: _parse_datetime(value_from_ast_untyped(node, variables)))

ItemEvent = GraphQLObjectType("ItemEvent", lambda: {
    "action": GraphQLField(GraphQLNonNull(GraphQLString), description="create, update or delete"),
    "itemId": GraphQLField(GraphQLNonNull(GraphQLID)),
    "item": GraphQLField(JSON, description="Always null: events are signals; read the item through a query."),
}, description="A change of one item, streamed by a `<collection>_events` subscription.")

ID_ARG = {"id": GraphQLArgument(GraphQLNonNull(GraphQLID))}
