"""SQL expressions over a content field stored in the items' JSON ``data`` column.

One definition, used by sorting, uniqueness checks, reference lookups, the expression indexes
of ``indexed``/``unique`` fields, and the query compiler (``plugins/items/query/``): an index
is only used when the query's expression is *exactly* the indexed one, so everybody builds
it here.

- PostgreSQL: ``data ->> 'f'`` (text), cast ``AS NUMERIC`` for integer, float, decimal and
  bigInteger fields.
- SQLite: ``json_extract(data, '$."f"')`` (typed by JSON1: text, integer, real, 1/0 for
  booleans), cast ``AS NUMERIC`` for the same numeric types (decimals are stored as strings,
  which would otherwise sort as text).

The key is rendered as a literal, never a bound parameter: neither PostgreSQL nor SQLite
matches an index expression against a parameter. Field names are checked by the schema
plugin; ``FIELD_KEY`` is checked again here because the name is spliced into SQL text.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from sqlalchemy import Numeric, Text, bindparam, cast, func, literal_column, type_coerce
from sqlalchemy.sql.elements import ColumnElement

NUMERIC_TYPES = frozenset({"integer", "float", "decimal", "bigInteger"})
FIELD_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def _checked(name: str) -> str:
    if not isinstance(name, str) or not FIELD_KEY.match(name):
        raise ValueError(f"not a field name: {name!r}")
    return name


def _sql_string(text: str) -> str:
    """A SQL string literal (quotes doubled; the name is already restricted to [A-Za-z0-9_])."""
    return "'" + text.replace("'", "''") + "'"


def path_literal(name: str) -> Any:
    """SQLite's JSON path of a top-level field, as a SQL literal (``'$."f"'``)."""
    return literal_column(_sql_string(f'$."{_checked(name)}"'))


def raw_expr(dialect: str, data_col: Any, name: str) -> ColumnElement[Any]:
    """The field's value without a cast: text on PostgreSQL, JSON1's typed value on SQLite."""
    name = _checked(name)
    if dialect == "postgresql":
        return type_coerce(data_col.op("->>")(literal_column(_sql_string(name))), Text)
    return func.json_extract(data_col, path_literal(name))


def expr_for(dialect: str, data_col: Any, name: str, field_type: str) -> ColumnElement[Any]:
    """``raw_expr`` cast for comparison: numeric for the numeric types, as is otherwise."""
    raw = raw_expr(dialect, data_col, name)
    return cast(raw, Numeric) if field_type in NUMERIC_TYPES else raw


def field_expr(dialect: str, table: Any, field_def: Any) -> ColumnElement[Any]:
    """The comparable SQL expression of ``field_def`` (a ``FieldDef``) over ``table.c.data``.

    ``table`` is the items table or an alias of it. This is the expression the expression
    indexes are built on; compare it with ``comparable(dialect, field_def, value)``.
    """
    return expr_for(dialect, table.c.data, field_def.name, field_def.type)


def comparable(dialect: str, field_def: Any, value: Any) -> Any:
    """A bound parameter holding ``value`` (a stored, normalised value of ``field_def``) in the
    form ``field_expr`` yields, so ``field_expr(...) == comparable(...)`` means "equal"."""
    kind = field_def.type
    if kind in NUMERIC_TYPES:
        number = Decimal(str(value))
        if dialect != "postgresql":
            # sqlite3 cannot bind Decimal; an integral value stays an int so 64-bit ids are exact.
            return bindparam(None, int(number) if number == number.to_integral_value() else float(number))
        return bindparam(None, number, type_=Numeric())
    if kind == "boolean":
        if dialect == "postgresql":
            return bindparam(None, "true" if value else "false", type_=Text())
        return bindparam(None, 1 if value else 0)
    return bindparam(None, value)


def without_key(dialect: str, data_col: Any, name: str) -> ColumnElement[Any]:
    """``data`` with the top-level key removed (for dropping a field from every item)."""
    if dialect == "postgresql":
        return data_col.op("-")(literal_column(_sql_string(_checked(name))))
    return func.json_remove(data_col, path_literal(name))


def with_key(dialect: str, data_col: Any, name: str, value: Any) -> ColumnElement[Any]:
    """``data`` with the top-level key set to the JSON ``value`` (for backfilling a default)."""
    import json

    text = json.dumps(value, separators=(",", ":"))
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import JSONB

        path = literal_column("ARRAY[" + _sql_string(_checked(name)) + "]")
        return func.jsonb_set(data_col, path, cast(bindparam(None, text, type_=Text()), JSONB), True)
    return func.json_set(data_col, path_literal(name), func.json(bindparam(None, text)))
