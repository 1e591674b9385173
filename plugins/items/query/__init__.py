"""The items query language: list parameters, filters, sort, aggregates, compiled to SQL.

Pure modules, no I/O: the list endpoint (REST), GraphQL, delivery and permission conditions
all go through them.

- ``params.parse_list_query(req.params)`` -> ``ListQuery`` (fields, filter, sort, limit,
  offset, page, meta, aggregate, groupBy, deep), shapes and bounds checked.
- ``filters.resolve_filter(tree, snapshot, collection, can_read=..., row_filter_for=...)`` ->
  the checked, typed tree (``ir``); 400 for bad input, 403 ``field_policy`` for unreadable fields.
- ``compile.compile_filter`` / ``compile_sort`` / ``compile_aggregate`` -> SQLAlchemy Core for
  SQLite or PostgreSQL over the items table (or an alias); ``compile_row_filter`` for a
  permission's read condition (trusted, fails closed). ``timebins``: the ``groupBy`` time
  buckets ``trunc_day|week|month(<date field>)``.
- ``reference.evaluate(node, item)``: the same semantics in Python, for tests.

Semantics: ``docs/decisions/items-query-semantics.md``.
"""

from __future__ import annotations

from plugins.items.query.aggregates import AGGREGATE_FUNCTIONS, AggregatePlan, compile_aggregate
from plugins.items.query.filters import (
    OPERATORS,
    check_filter,
    filter_from_pairs,
    parse_json_filter,
    resolve_filter,
)
from plugins.items.query.ordering import compile_sort
from plugins.items.query.parse.params import DeepQuery, ListQuery, parse_list_query
from plugins.items.query.reference import evaluate
from plugins.items.query.sql.compile import FilterCompiler, compile_filter, compile_row_filter

__all__ = [
    "AGGREGATE_FUNCTIONS", "OPERATORS", "AggregatePlan", "DeepQuery", "FilterCompiler", "ListQuery",
    "check_filter", "compile_aggregate", "compile_filter", "compile_row_filter", "compile_sort", "evaluate", "filter_from_pairs",
    "parse_json_filter", "parse_list_query", "resolve_filter",
]
