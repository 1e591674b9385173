"""The reference evaluator: the query language's semantics in plain Python, for tests.

``evaluate(node, item)`` answers whether ``item`` (an item as the API shows it: structural
keys and content fields, flat; a missing key is missing) matches a resolved filter (``ir``).
It is what ``compile`` must agree with on both dialects (the property test holds them
together), so it follows ``docs/decisions/items-query-semantics.md`` to the letter:

- a missing key and JSON null are both null; only ``_null``/``_nnull`` match them;
- typed targets compare by type (numbers as decimals of their JSON text, which is exactly what
  PostgreSQL's ``numeric`` does; strings by code point);
- a JSON target compares with an operand of the same JSON type only (``true`` is not ``1``);
- ``_json_contains`` is PostgreSQL's ``@>`` on the value at the path;
- ``_has_key`` asks whether the value is an object with that key;
- ``Exists`` asks ``resolve_relation(link, item)`` for the related items (live, same site) and
  matches when one passes the link's row filter and the child filter.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from plugins.items.query.ir import Condition, Const, Exists, Group, Link, Node, Target

MISSING = object()
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
ResolveRelation = Callable[[Link, dict[str, Any]], Iterable[dict[str, Any]]]


def evaluate(node: Node | None, item: dict[str, Any], *, resolve_relation: ResolveRelation | None = None) -> bool:
    """Whether ``item`` matches ``node`` (``None``: no filter, everything matches)."""
    if node is None:
        return True
    if isinstance(node, Const):
        return node.value
    if isinstance(node, Group):
        results = (evaluate(c, item, resolve_relation=resolve_relation) for c in node.children)
        return all(results) if node.op == "_and" else any(results)
    if isinstance(node, Exists):
        if resolve_relation is None:
            raise ValueError("a relational filter needs resolve_relation")
        for related in resolve_relation(node.link, item):
            row_ok = node.link.row_filter is None or evaluate(node.link.row_filter, related,
                                                              resolve_relation=resolve_relation)
            if row_ok and evaluate(node.child, related, resolve_relation=resolve_relation):
                return True
        return False
    return _condition(node, _value_at(item, node.target))


def _value_at(item: dict[str, Any], target: Target) -> Any:
    value = item.get(target.name, MISSING)
    for key in target.path:
        value = value.get(key, MISSING) if isinstance(value, dict) else MISSING
    return None if value is MISSING else value


def _condition(node: Condition, stored: Any) -> bool:
    op, operand, category = node.op, node.value, node.target.category
    if op == "_null":
        return stored is None
    if op == "_nnull":
        return stored is not None
    if stored is None:
        return False  # every other operator needs a value
    if category in ("json", "list"):
        return _json_condition(op, operand, stored)
    value = _typed(category, stored)
    if value is None:
        return False  # a stored value of the wrong type (never written by the service)
    if op == "_eq":
        return value == _typed(category, operand)
    if op == "_neq":
        return value != _typed(category, operand)
    if op == "_in":
        return any(value == _typed(category, v) for v in operand)
    if op == "_nin":
        return all(value != _typed(category, v) for v in operand)
    if op == "_lt":
        return value < _typed(category, operand)
    if op == "_lte":
        return value <= _typed(category, operand)
    if op == "_gt":
        return value > _typed(category, operand)
    if op == "_gte":
        return value >= _typed(category, operand)
    if op == "_between":
        return _typed(category, operand[0]) <= value <= _typed(category, operand[1])
    return _string_op(op, operand, stored)


def _typed(category: str, value: Any) -> Any:
    """``value`` in the comparable form of its category, or ``None`` when it has the wrong type."""
    if category == "number":
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, Decimal)):
            return Decimal(value)
        if isinstance(value, float):
            return Decimal(repr(value))
        if isinstance(value, str):  # decimal fields store text
            try:
                return Decimal(value)
            except ArithmeticError:
                return None
        return None
    if category == "boolean":
        return value if isinstance(value, bool) else None
    if category == "instant":
        if isinstance(value, str):
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if isinstance(value, dt.datetime):
            return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
        return None
    return value if isinstance(value, str) else None


def _string_op(op: str, operand: str, stored: Any) -> bool:
    if not isinstance(stored, str):
        return False
    if op == "_contains":
        return operand in stored
    if op == "_icontains":
        return ascii_lower(operand) in ascii_lower(stored)
    if op == "_starts_with":
        return stored.startswith(operand)
    return stored.endswith(operand)


def ascii_lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)


# ---------------------------------------------------------------------- JSON semantics
def _json_condition(op: str, operand: Any, stored: Any) -> bool:
    if op == "_eq":
        return json_equal(stored, operand)
    if op == "_neq":
        return not json_equal(stored, operand)
    if op == "_in":
        return any(json_equal(stored, v) for v in operand)
    if op == "_nin":
        return not any(json_equal(stored, v) for v in operand)
    if op in ("_lt", "_lte", "_gt", "_gte", "_between"):
        bounds: tuple[Any, ...] = tuple(operand) if op == "_between" else (operand,)
        value = _json_ordered(stored, bounds[0])
        if value is None:
            return False
        low = _json_ordered(bounds[0], bounds[0])
        if op == "_between":
            return bool(low <= value <= _json_ordered(bounds[-1], bounds[-1]))
        return {"_lt": value < low, "_lte": value <= low, "_gt": value > low, "_gte": value >= low}[op]
    if op == "_json_contains":
        return json_contains(stored, operand, top=True)
    if op == "_has_key":
        return isinstance(stored, dict) and operand in stored
    if op == "_has_any_keys":
        return isinstance(stored, dict) and any(k in stored for k in operand)
    if op == "_has_all_keys":
        return isinstance(stored, dict) and all(k in stored for k in operand)
    # string operators: a JSON string; _contains also an element of an array
    if op == "_contains" and isinstance(stored, list) and any(_is_scalar(e) and json_equal(e, operand)
                                                              for e in stored):
        return True
    return isinstance(operand, str) and _string_op(op, operand, stored)


def _json_ordered(value: Any, like: Any) -> Any:
    """``value`` comparable with the operand ``like`` (a number or a string), else ``None``."""
    if isinstance(like, str):
        return value if isinstance(value, str) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, (dict, list))


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality of two scalars: same JSON type, numbers compared as numbers."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return _json_ordered(a, 0) == _json_ordered(b, 0)
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return False


def json_contains(stored: Any, value: Any, top: bool = True) -> bool:
    """PostgreSQL's ``stored @> value`` (see ``sqlite_json`` for the rule in words)."""
    if isinstance(value, dict):
        return isinstance(stored, dict) and all(
            k in stored and json_contains(stored[k], v, top=False) for k, v in value.items())
    if isinstance(value, list):
        if not isinstance(stored, list):
            return False
        for element in value:
            if _is_scalar(element):
                found = any(_is_scalar(s) and json_equal(s, element) for s in stored)
            else:
                found = any(type(s) is type(element) and json_contains(s, element, top=False) for s in stored)
            if not found:
                return False
        return True
    if _is_scalar(stored):
        return json_equal(stored, value)
    return top and isinstance(stored, list) and any(_is_scalar(s) and json_equal(s, value) for s in stored)
