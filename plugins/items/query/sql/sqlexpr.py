"""SQL expressions over an item row, per dialect: the typed value of a target and JSON access.

A top-level typed field is ``plugins.items.query.sql.jsonpath.field_expr``: the exact expression the
expression indexes are built on (PostgreSQL ``data ->> 'f'``, ``CAST(... AS NUMERIC)`` for
numbers; SQLite ``json_extract(data, '$."f"')``, likewise cast), so filters and sorts on
indexed fields use their index. Paths below a JSON field follow the same spelling one level
down. Keys are rendered as SQL literals (indexes never match a parameter); every key was
checked against ``limits.SEGMENT`` (ASCII letters, digits, ``_``), and is checked again here
because it is spliced into SQL text. Values are always bound parameters.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from sqlalchemy import Numeric, Text, bindparam, func, literal_column, type_coerce
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.elements import ColumnElement

from plugins.items.query.ir import Target
from plugins.items.query.parse.limits import SEGMENT
from plugins.items.query.sql.jsonpath import field_expr, raw_expr

PG = "postgresql"


def ordered(dialect: str, expr: Any, descending: bool = False) -> Any:
    """``expr`` ascending or descending with NULL as the smallest value, the order the field
    indexes store: SQLite's own (no NULLS clause, which would keep SQLite off the index) and,
    on PostgreSQL, indexes built ``NULLS FIRST`` (``plugins.items.upkeep.indexes``)."""
    if dialect == PG:
        return expr.desc().nulls_last() if descending else expr.asc().nulls_first()
    return expr.desc() if descending else expr.asc()


def key_literal(key: str) -> Any:
    """A checked key as a SQL string literal."""
    if not isinstance(key, str) or not SEGMENT.fullmatch(key):
        raise ValueError(f"not a path segment: {key!r}")
    return literal_column(f"'{key}'", Text)


def sqlite_path(keys: tuple[str, ...]) -> Any:
    """``'$."a"."b"'`` as a SQL literal (the spelling ``jsonpath`` uses for top-level fields)."""
    for key in keys:
        key_literal(key)
    return literal_column("'$" + "".join(f'."{k}"' for k in keys) + "'", Text)


# Expressions over long-lived tables (the items table, the per-depth aliases below), built once:
# Core elements are immutable, so one element may sit in any number of statements, and
# building them is most of a filter's compile time. Bounded, since JSON paths come from clients.
_MEMO: dict[tuple[Any, ...], Any] = {}
_MEMO_MAX = 4096


def _memo(key: tuple[Any, ...], build: Any) -> Any:
    found = _MEMO.get(key)
    if found is None:
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        found = _MEMO[key] = build()
    return found


def depth_alias(base: Any, depth: int, prefix: str = "svc_q") -> Any:
    """The alias of the items table for relation depth ``depth`` (``svc_q1``, ``svc_q2``...):
    one per depth serves every subquery, since sibling subqueries never see each other."""
    return _memo(("alias", base, prefix, depth), lambda: base.alias(f"{prefix}{depth}"))


def jsonb(t: Any) -> Any:
    """``t.data`` as JSONB (the table's type is a variant; its comparator would be JSON's)."""
    return _memo(("jsonb", t), lambda: type_coerce(t.c.data, JSONB))


def pg_node(t: Any, keys: tuple[str, ...]) -> Any:
    """``data -> 'a' -> 'b'`` (JSONB, object keys only: a text key never indexes an array)."""
    def build() -> Any:
        node = jsonb(t)
        for key in keys:
            node = type_coerce(node.op("->")(key_literal(key)), JSONB)
        return node
    return _memo(("node", t, keys), build)


def pg_text(t: Any, keys: tuple[str, ...]) -> Any:
    """``data -> 'a' ->> 'b'``: the value at the path as text (NULL for JSON null or missing)."""
    return _memo(("text", t, keys), lambda: type_coerce(
        pg_node(t, keys[:-1]).op("->>")(key_literal(keys[-1])), Text))


def sqlite_value(t: Any, keys: tuple[str, ...]) -> tuple[Any, Any, Any]:
    """``(path, json_type(data, path), json_extract(data, path))`` for SQLite."""
    def build() -> tuple[Any, Any, Any]:
        path = sqlite_path(keys)
        return path, func.json_type(t.c.data, path), func.json_extract(t.c.data, path)
    return _memo(("sqlite", t, keys), build)


def keys_of(target: Target) -> tuple[str, ...]:
    return (target.name, *target.path)


def scalar_expr(dialect: str, t: Any, target: Target) -> ColumnElement[Any]:
    """The comparable value of a typed target: a structural column or a top-level field."""
    if target.column is not None:
        return t.c[target.column]
    field = target.field
    assert field is not None and not target.path
    return _memo(("field", dialect, t, field.name, field.type), lambda: field_expr(dialect, t, field))


def reference_text(dialect: str, t: Any, field: Any) -> ColumnElement[Any]:
    """A field holding another item's id, as text to compare with ``id`` (integer ids too)."""
    def build() -> Any:
        if dialect == PG:
            return raw_expr(dialect, t.c.data, field.name)
        return func.json_extract(t.c.data, sqlite_path((field.name,)))
    return _memo(("ref", dialect, t, field.name), build)


def bind_value(dialect: str, target: Target, value: Any) -> Any:
    """A bound parameter holding an operand of a typed target, in the form its expression takes."""
    category = target.category
    if category == "number":
        if target.column is not None:
            return bindparam(None, value)
        if dialect == PG:
            return bindparam(None, pg_number(value), type_=Numeric())
        return bindparam(None, sqlite_number(value))
    if category == "boolean":
        if dialect == PG:
            return bindparam(None, "true" if value else "false", type_=Text())
        return bindparam(None, 1 if value else 0)
    if category == "instant":
        # SQLite stores timestamps as naive UTC text: bind the same.
        instant = value.astimezone(dt.UTC)
        return bindparam(None, instant if dialect == PG else instant.replace(tzinfo=None))
    return bindparam(None, value, type_=Text())


def bind_list(dialect: str, target: Target, values: tuple[Any, ...]) -> Any:
    """An expanding bound list for ``IN``: one parameter, however many values."""
    sample = bind_value(dialect, target, values[0])
    converted = [bind_value(dialect, target, v).value for v in values]
    return bindparam(None, converted, expanding=True, type_=sample.type)


def pg_number(value: Any) -> Decimal:
    """A numeric parameter for ``CAST(... AS NUMERIC)``: a float param would cast the column
    to double precision and miss the index."""
    if isinstance(value, Decimal):
        return value
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(int(value))


def sqlite_number(value: Any) -> Any:
    """sqlite3 binds no ``Decimal``: integral values stay exact ints, others floats."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and abs(value) < 2**63 else float(value)
    return value


def json_bind(value: Any) -> Any:
    """A JSONB parameter (PostgreSQL)."""
    return bindparam(None, value, type_=JSONB())


def nest(keys: tuple[str, ...], value: Any) -> Any:
    """``{"a": {"b": value}}`` for keys ``("a", "b")``: a containment document."""
    for key in reversed(keys):
        value = {key: value}
    return value
