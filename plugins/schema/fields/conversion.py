"""Type changes: does a stored value survive a field's change from one type to another?

``convert(value, from_type, to_type)`` returns the value in ``to_type``'s normal form or raises
``ValueError``; ``converts`` is the yes/no question. The items plugin answers the
``fields.type_change`` filter with these: a type change goes through only when every stored
value converts, and the converted values are what it writes back.

The rule is "representable without losing what the value said": ``3.0`` becomes the integer
``3`` but ``3.5`` does not convert, a date-time becomes a date only at midnight, text becomes
a number only when it spells one, and anything becomes ``json`` or text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from plugins.schema.fieldtypes import types as t

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
_NUMBER_TEXT = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,4})?$")


def _as_text(value: Any, from_type: str) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return value
    if from_type == "csv":
        return ",".join(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _as_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    return value


def _as_whole(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and _NUMBER_TEXT.match(value.strip()):
        number = t.parse_decimal(value.strip())
        if number != number.to_integral_value():
            raise ValueError(f"{value!r} is not a whole number")
        return int(number)
    return value


def _as_float(value: Any) -> Any:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int) and abs(value) > 2**53 and int(float(value)) != value:
        raise ValueError(f"{value} cannot be held exactly by a float")
    if isinstance(value, str) and _NUMBER_TEXT.match(value.strip()):
        number = float(value.strip())
        # A float that does not round-trip would silently change the value.
        if Decimal(repr(number)) != t.parse_decimal(value.strip()):
            raise ValueError(f"{value!r} cannot be held exactly by a float")
        return number
    return value


def _as_decimal(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip()
    return value


def _as_date(value: Any, from_type: str) -> Any:
    if from_type in ("dateTime", "timestamp"):
        day, _, clock = value.partition("T")
        if clock.rstrip("Z") not in ("00:00:00",):
            raise ValueError("only a date-time at midnight converts to a date")
        return day
    return value


def _as_datetime(value: Any, from_type: str) -> Any:
    if from_type == "date":
        return f"{value}T00:00:00"
    return value


def _as_list(value: Any, from_type: str) -> Any:
    if from_type in ("csv", "files", "json"):
        return value
    if isinstance(value, str):
        return value
    raise ValueError(f"a {from_type} value is not a list")


def _as_geometry(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise ValueError("text that is not GeoJSON does not convert to a geometry") from exc
    return value


def _bridge(value: Any, from_type: str, to_type: str) -> Any:
    """Reshape ``value`` so ``to_type``'s coercer can judge it."""
    if to_type in t.TEXT_TYPES:
        return _as_text(value, from_type)
    if to_type == "boolean":
        return _as_boolean(value)
    if to_type in ("integer", "bigInteger"):
        return _as_whole(value)
    if to_type == "float":
        return _as_float(value)
    if to_type == "decimal":
        return _as_decimal(value)
    if to_type == "date":
        return _as_date(value, from_type)
    if to_type in ("dateTime", "timestamp"):
        return _as_datetime(value, from_type)
    if to_type in ("csv", "files"):
        return _as_list(value, from_type)
    if to_type == "geometry":
        return _as_geometry(value)
    return value


def convert(value: Any, from_type: str, to_type: str, options: Mapping[str, Any] | None = None) -> Any:
    """``value`` (a valid ``from_type`` value) as a ``to_type`` value, or ``ValueError``.

    With ``options`` (the field's options after the change) the validation options apply too.
    """
    if from_type not in t.COERCERS or to_type not in t.COERCERS:
        raise ValueError(f"unknown field type {from_type if from_type not in t.COERCERS else to_type!r}")
    if value is None:
        return None
    current = t.coerce(from_type, value)
    candidate = current if from_type == to_type else _bridge(current, from_type, to_type)
    result = t.coerce(to_type, candidate, options)
    if result is not None:
        # Without options the type's own limits still apply (a ``string`` holds 255 characters).
        t.check_constraints(to_type, result, options or {})
    return result


def converts(value: Any, from_type: str, to_type: str, options: Mapping[str, Any] | None = None) -> bool:
    """Whether ``convert`` succeeds for ``value``."""
    try:
        convert(value, from_type, to_type, options)
    except ValueError:
        return False
    return True
