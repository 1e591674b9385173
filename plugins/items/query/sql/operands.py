"""Operands typed for their target: the checked tree carries values in the form the target's
values take (numbers for numeric fields, normalised ISO text for dates, UTC datetimes for the
structural timestamps, lower case for uuid/hash/color, JSON values for JSON paths), and the
null forms normalised (``_eq: null`` is ``_null``; ``_in`` with null is ``_in`` or ``_null``)."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

from plugins.items.query.ir import FALSE, Condition, Node, Target, any_of
from plugins.items.query.parse.brackets import plain, raw_text
from plugins.items.query.parse.limits import MAX_INT
from plugins.items.query.resolve import fail
from plugins.schema.api import coerce, parse_decimal

LOWER_CASE_TYPES = frozenset({"uuid", "hash", "color"})  # stored lower-cased by the schema types
EQ_OPS = frozenset({"_eq", "_neq", "_in", "_nin"})
ORDER_OPS = frozenset({"_lt", "_lte", "_gt", "_gte", "_between"})
NULL_OPS = frozenset({"_null", "_nnull"})
STRING_OPS = frozenset({"_contains", "_icontains", "_starts_with", "_ends_with"})
KEY_OPS = frozenset({"_has_key", "_has_any_keys", "_has_all_keys"})
OPS_BY_CATEGORY: dict[str, frozenset[str]] = {
    "number": EQ_OPS | ORDER_OPS | NULL_OPS,
    "boolean": EQ_OPS | NULL_OPS,
    "text": EQ_OPS | ORDER_OPS | NULL_OPS | STRING_OPS,
    "temporal": EQ_OPS | ORDER_OPS | NULL_OPS | STRING_OPS,
    "instant": EQ_OPS | ORDER_OPS | NULL_OPS,
    "json": EQ_OPS | ORDER_OPS | NULL_OPS | STRING_OPS | KEY_OPS | {"_json_contains"},
    "list": NULL_OPS | {"_contains", "_json_contains"},
}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def typed_condition(target: Target, op: str, value: Any, path: list[Any]) -> Node:
    """One operator on ``target`` with its operand typed (shapes were checked already)."""
    if op not in OPS_BY_CATEGORY[target.category]:
        raise fail(f"'{op}' does not apply to '{target.label}' ({target.type})", path)
    if op in NULL_OPS:
        return Condition(target, "_null" if (op == "_null") == value else "_nnull")
    if op in ("_eq", "_neq") and value is None:
        return Condition(target, "_null" if op == "_eq" else "_nnull")
    if op in ("_in", "_nin"):
        values = list(dict.fromkeys(
            typed_value(target, v, [*path, i]) for i, v in enumerate(value) if v is not None))
        has_null = any(v is None for v in value)
        if op == "_nin":
            return Condition(target, "_nin", tuple(values)) if values else Condition(target, "_nnull")
        parts: list[Node] = [Condition(target, "_in", tuple(values))] if values else []
        if has_null:
            parts.append(Condition(target, "_null"))
        return any_of(parts) if parts else FALSE
    if op == "_between":
        low, high = (typed_value(target, v, [*path, i]) for i, v in enumerate(value))
        if target.category == "json" and _json_kind(low) != _json_kind(high):
            raise fail("'_between' takes two numbers or two strings", path)
        return Condition(target, op, (low, high))
    if op in ORDER_OPS:
        return Condition(target, op, typed_value(target, value, path))
    if op in STRING_OPS:
        if target.category == "json" and not isinstance(value, str):
            return Condition(target, op, plain(value))  # _contains: an array element
        text = _text(value)
        if text is None:
            raise fail(f"'{op}' takes a string", path)
        return Condition(target, op, text)
    if op == "_json_contains":
        return Condition(target, op, plain(value))
    if op == "_has_key":
        return Condition(target, op, value)
    if op in ("_has_any_keys", "_has_all_keys"):
        return Condition(target, op, tuple(dict.fromkeys(value)))
    return Condition(target, op, typed_value(target, value, path))  # _eq, _neq

def typed_value(target: Target, value: Any, path: list[Any]) -> Any:
    """A comparison operand in the form the target's values take."""
    category = target.category
    if category == "json":
        return plain(value)
    if category == "number":
        return _number(target.type, value, path)
    if category == "boolean":
        if isinstance(value, bool):
            return value
        if value in ("true", "false"):
            return value == "true"
        raise fail(f"'{target.label}' is a boolean field: expected true or false", path)
    if category == "instant":
        return _instant(value, path)
    text = _text(value)
    if text is None:
        raise fail(f"'{target.label}' expects a string", path)
    if category == "temporal":
        return _temporal(target.type, text, path)
    return text.lower() if target.type in LOWER_CASE_TYPES else text


def _json_kind(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "other"
    return "number" if isinstance(value, (int, float)) else "string" if isinstance(value, str) else "other"


def _text(value: Any) -> str | None:
    """A string operand: strings as given, bracket numbers as typed, JSON numbers and booleans
    in their JSON spelling; ``None`` when there is no text (null, lists, objects)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    raw = raw_text(value)
    if raw is not None:
        return raw
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return None


def _number(type_name: str, value: Any, path: list[Any]) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise fail("Expected a number", path)
    if isinstance(value, str) or type_name == "decimal":
        text = value if isinstance(value, str) else raw_text(value) or repr(value)
        number = _parse_decimal(text, path)
        if type_name == "decimal":
            return number
        whole = number == number.to_integral_value() and not any(c in text for c in ".eE")
        value = int(number) if whole else float(number)
    if isinstance(value, int):
        if abs(value) > MAX_INT:
            raise fail("Numbers in filters must fit in 64 bits", path)
        return int(value)
    return float(value)


def _parse_decimal(text: str, path: list[Any]) -> Decimal:
    try:
        return parse_decimal(text)
    except ValueError:
        raise fail("Expected a number", path) from None


def _temporal(type_name: str, text: str, path: list[Any]) -> str:
    try:
        return coerce(type_name, text)
    except ValueError as exc:
        # A date alone bounds a date-time field at the start of that day (compared as text).
        if type_name in ("dateTime", "timestamp") and _DATE.fullmatch(text):
            try:
                return coerce("date", text)
            except ValueError:
                pass
        raise fail(str(exc), path) from None


def _instant(value: Any, path: list[Any]) -> dt.datetime:
    text = value if isinstance(value, str) else None
    if text is None:
        raise fail("Expected an ISO 8601 date-time", path)
    try:
        if _DATE.fullmatch(text):
            parsed = dt.datetime.combine(dt.date.fromisoformat(text), dt.time(), dt.UTC)
        else:
            parsed = dt.datetime.fromisoformat(coerce("timestamp", text).replace("Z", "+00:00"))
    except ValueError as exc:
        raise fail(f"Expected an ISO 8601 date-time ({exc})", path) from None
    return parsed.astimezone(dt.UTC)
