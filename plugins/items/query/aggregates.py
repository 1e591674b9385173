"""``aggregate`` and ``groupBy``: select columns, GROUP BY terms, and the Directus-shaped rows.

The shapes (docs/decisions/items-query-semantics.md, Aggregates): ``?aggregate[count]=*`` gives ``[{
"count": N }]``;
``?aggregate[sum]=views&groupBy=category`` gives ``[{ "category": "a", "sum": { "views": N } }]``.
A function over fields answers ``{ fn: { field: value } }`` (``count`` of a field counts its
non-null values; ``count`` of ``*`` beside fields appears as the key ``"*"``). ``sum``/``avg``
take numeric fields; ``min``/``max`` numeric, text and date-time ones; ``count`` and
``countDistinct`` any field. Aggregated and grouped names are top-level fields or structural
columns (``groupBy`` also takes paths into JSON fields, and the time buckets
``trunc_day|week|month(<date field>)`` of ``timebins``), never relations.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import distinct, func, literal_column
from sqlalchemy.dialects.postgresql import JSONB

from kernel.base.errors import ApiError
from kernel.db.meta import iso
from plugins.items.query.ir import Target
from plugins.items.query.ordering import check_path
from plugins.items.query.resolve import CanRead, Resolver, Scope
from plugins.items.query.sql import sqlexpr as sx
from plugins.items.query.timebins import bucket_expr, split_bucket
from plugins.schema.api import CollectionDef, SchemaSnapshot

AGGREGATE_FUNCTIONS = ("count", "countDistinct", "sum", "avg", "min", "max")
_NUMERIC_ONLY = frozenset({"sum", "avg"})
_ORDERED = frozenset({"number", "text", "temporal", "instant"})


@dataclass
class AggregatePlan:
    """What the list endpoint adds to its statement: ``select(*columns)...group_by(*group_by)
    .order_by(*order_by)``, then ``shape(rows)`` for the response's ``data``."""

    columns: list[Any] = field(default_factory=list)
    group_by: list[Any] = field(default_factory=list)
    order_by: list[Any] = field(default_factory=list)
    shape: Callable[[Iterable[Mapping[str, Any]]], list[dict[str, Any]]] = lambda rows: []


def compile_aggregate(aggregate: Mapping[str, Sequence[str]], group_by: Sequence[str] = (), *,
                      snapshot: SchemaSnapshot, collection: CollectionDef | str, dialect: str, table: Any,
                      can_read: CanRead | None = None) -> AggregatePlan:
    """The plan for ``aggregate`` (``{fn: [field | "*"]}``) grouped by ``group_by`` names."""
    t = table
    coll = snapshot.collection(collection) if isinstance(collection, str) else collection
    assert coll is not None
    resolver = Resolver(snapshot, can_read=can_read)
    plan = AggregatePlan()
    groups: list[tuple[str, str, Callable[[Any], Any]]] = []
    for i, name in enumerate(dict.fromkeys(group_by)):
        here = ["query", "groupBy", name]
        unit, inner = split_bucket(name)
        target = _target(resolver, coll, inner, here, allow_path=unit is None)
        expr = _group_expr(dialect, t, target) if unit is None else bucket_expr(dialect, t, target, unit, here)
        label = f"g{i}"
        plan.columns.append(expr.label(label))
        plan.group_by.append(expr)
        plan.order_by.append(sx.ordered(dialect, expr))
        groups.append((name, label, _converter(dialect, target) if unit is None else _to_text))
    outputs: list[tuple[str, str, str, Callable[[Any], Any]]] = []
    for fn, names in aggregate.items():
        if fn not in AGGREGATE_FUNCTIONS:
            raise ApiError.validation(f"Unknown aggregate function '{fn[:40]}'", path=["query", "aggregate", fn])
        for name in dict.fromkeys(names):
            here = ["query", "aggregate", fn]
            label = f"a{len(outputs)}"
            if name == "*":
                if fn != "count":
                    raise ApiError.validation(f"'{fn}' takes field names, not '*'", path=here)
                plan.columns.append(func.count().label(label))
                outputs.append((fn, name, label, _to_int))
                continue
            target = _target(resolver, coll, name, here, allow_path=False)
            expr, convert = _aggregate_expr(dialect, t, fn, target, here)
            plan.columns.append(expr.label(label))
            outputs.append((fn, name, label, convert))
    plan.shape = lambda rows: [_shape_row(row, groups, outputs) for row in rows]
    return plan


def _target(resolver: Resolver, coll: CollectionDef, name: str, path: list[Any], allow_path: bool) -> Target:
    segments = check_path(name, path)
    if len(segments) > 1 and not allow_path:
        raise ApiError.validation(f"Aggregates take top-level fields, not '{name[:80]}'", path=path)
    target, links = resolver.target(Scope(coll), segments, path)
    if links:
        raise ApiError.validation(f"Cannot group or aggregate by the related field '{name[:80]}'", path=path)
    return target


def _group_expr(dialect: str, t: Any, target: Target) -> Any:
    if target.category not in ("json", "list"):
        return sx.scalar_expr(dialect, t, target)
    keys = sx.keys_of(target)
    # A JSON value groups by its JSON form; JSON null and a missing key are one group.
    if dialect == sx.PG:
        return func.nullif(sx.pg_node(t, keys), literal_column("'null'::jsonb", JSONB))
    return func.nullif(t.c.data.op("->")(sx.sqlite_path(keys)), "null")


def _aggregate_expr(dialect: str, t: Any, fn: str, target: Target, path: list[Any]) -> tuple[Any, Any]:
    category = target.category
    if fn in _NUMERIC_ONLY and category != "number":
        raise ApiError.validation(f"'{fn}' takes numeric fields; '{target.label}' is {target.type}", path=path)
    if fn in ("min", "max") and category not in _ORDERED:
        raise ApiError.validation(f"'{fn}' takes numeric, text or date-time fields; '{target.label}' is "
                                  f"{target.type}", path=path)
    if category in ("json", "list"):
        value = _group_expr(dialect, t, target)
    else:
        value = sx.scalar_expr(dialect, t, target)
    if fn == "count":
        return func.count(value), _to_int
    if fn == "countDistinct":
        return func.count(distinct(value)), _to_int
    if fn == "avg":
        return func.avg(value), _to_float
    return getattr(func, fn)(value), _converter(dialect, target)


def _converter(dialect: str, target: Target) -> Callable[[Any], Any]:
    """The database's answer for ``target`` in the form items show that field."""
    category, type_name = target.category, target.type
    if category == "number":
        if type_name == "decimal":
            # normalize(): drivers pad decimals differently (SQLite's come back with ten places)
            return lambda v: None if v is None else format(Decimal(str(v)).normalize(), "f")
        if type_name == "float":
            return _to_float
        return lambda v: None if v is None else int(v) if Decimal(str(v)) == int(v) else float(v)
    if category == "boolean":
        return lambda v: None if v is None else v in (True, 1, "true")
    if category == "instant":
        return lambda v: iso(v) if v is not None and not isinstance(v, str) else v
    if category in ("json", "list") and dialect != sx.PG:
        return lambda v: None if v is None else json.loads(v)
    return lambda v: v


def _to_int(value: Any) -> int:
    return int(value or 0)


def _to_text(value: Any) -> str | None:
    return None if value is None else str(value)


def _to_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _shape_row(row: Mapping[str, Any], groups: list[tuple[str, str, Callable[[Any], Any]]],
               outputs: list[tuple[str, str, str, Callable[[Any], Any]]]) -> dict[str, Any]:
    values = getattr(row, "_mapping", row)
    out: dict[str, Any] = {name: convert(values[label]) for name, label, convert in groups}
    by_fn: dict[str, list[tuple[str, Any]]] = {}
    for fn, name, label, convert in outputs:
        by_fn.setdefault(fn, []).append((name, convert(values[label])))
    for fn, answers in by_fn.items():
        out[fn] = answers[0][1] if fn == "count" and [n for n, _ in answers] == ["*"] else dict(answers)
    return out
