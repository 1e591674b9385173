"""SQLite emulation of the JSON operators PostgreSQL has natively (JSON1's ``json_each``).

``contains(doc, path, value)`` is PostgreSQL's ``jsonb @>`` applied to the value at ``path``,
built at compile time from the (bounded) operand: an object contains an object when every key
of the operand is present with a contained value; an array contains an array when every
element of the operand is contained by some element (scalars equal, containers recursively);
scalars contain equal scalars (numbers numerically, ``true`` is not ``1``); and, at the top level
only, an array contains a scalar it has as an element. One departure from ``@>``, on both
dialects: a JSON ``null`` at the path is null like a missing key, so it contains nothing. ``reference.json_contains`` is the
same rule in Python; the property test holds them together.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import and_, case, exists, func, literal, literal_column, or_, select
from sqlalchemy.sql.elements import ColumnElement

NUMBER_TYPES = ("integer", "real")
ONE: Any = literal_column("1")


def each(doc: Any, path: Any = None) -> Any:
    """``json_each(doc[, path])`` as an anonymous table with ``key``, ``value``, ``type``."""
    args = (doc,) if path is None else (doc, path)
    return func.json_each(*args).table_valued("key", "value", "type")


def scalar_match(jtype: Any, jval: Any, value: Any) -> ColumnElement[bool]:
    """The JSON value typed ``jtype`` with SQL value ``jval`` equals the scalar ``value``."""
    if value is None:
        return jtype == "null"
    if value is True:
        return jtype == "true"
    if value is False:
        return jtype == "false"
    if isinstance(value, str):
        return and_(jtype == "text", jval == literal(value))
    return and_(jtype.in_(NUMBER_TYPES), jval == literal(value))


class _At:
    """A JSON value inside the row: at a path of ``doc``, or a row of an enclosing json_each."""

    def __init__(self, doc: Any, path: Any = None, row: Any = None) -> None:
        self.doc, self.path, self.row = doc, path, row

    @property
    def type(self) -> Any:
        return self.row.c.type if self.row is not None else func.json_type(self.doc, self.path)

    @property
    def value(self) -> Any:
        return self.row.c.value if self.row is not None else func.json_extract(self.doc, self.path)

    def children(self) -> Any:
        if self.row is None:
            return each(self.doc, self.path)
        # A row's value is JSON text only for containers; never parse a string as JSON.
        return each(case((self.row.c.type.in_(("object", "array")), self.row.c.value)))


def contains(doc: Any, path: Any, value: Any) -> ColumnElement[bool]:
    """The JSON at ``path`` in ``doc`` contains ``value`` (see the module docstring)."""
    return _contains(_At(doc, path), value, top=True)


def _contains(at: _At, value: Any, top: bool) -> ColumnElement[bool]:
    if isinstance(value, dict):
        parts = [at.type == "object"]
        for key, item in value.items():
            child = at.children()
            parts.append(exists(select(ONE).select_from(child).where(
                child.c.key == literal(key), _contains(_At(None, row=child), item, top=False))))
        return and_(*parts)
    if isinstance(value, list):
        parts = [at.type == "array"]
        for item in _distinct(value):
            child = at.children()
            parts.append(exists(select(ONE).select_from(child).where(_element(child, item))))
        return and_(*parts)
    match = scalar_match(at.type, at.value, value)
    if not top:
        return match
    child = at.children()
    in_array = and_(at.type == "array", exists(select(ONE).select_from(child).where(
        scalar_match(child.c.type, child.c.value, value))))
    # A null value is null (only _null sees it); an array may still hold a null element.
    return in_array if value is None else or_(match, in_array)


def _element(row: Any, item: Any) -> ColumnElement[bool]:
    """An array element (a json_each row) contains ``item``: equal scalars, or containers."""
    if isinstance(item, (dict, list)):
        return _contains(_At(None, row=row), item, top=False)
    return scalar_match(row.c.type, row.c.value, item)


def _distinct(values: list[Any]) -> list[Any]:
    seen: dict[str, Any] = {}
    for value in values:
        seen.setdefault(json.dumps(value, sort_keys=True), value)
    return list(seen.values())
