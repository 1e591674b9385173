"""Numeric field types: integer (32-bit), bigInteger (64-bit), float, decimal (exact string)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
MAX_DECIMAL_DIGITS = 100

_INT_TEXT = re.compile(r"^[+-]?\d{1,20}$")
_DECIMAL_TEXT = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,4})?$")


def _whole(value: Any, bounds: tuple[int, int], what: str, allow_text: bool) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected {what}, not a boolean")
    if isinstance(value, float):
        # 3.0 is a whole number; beyond 2**53 a float no longer says which one.
        if not value.is_integer() or abs(value) > 2**53:
            raise ValueError(f"expected {what}")
        value = int(value)
    elif isinstance(value, str) and allow_text and _INT_TEXT.match(value):
        value = int(value)
    if not isinstance(value, int):
        raise ValueError(f"expected {what}")
    if not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"{what} must be within [{bounds[0]}, {bounds[1]}]")
    return value


def check_integer(value: Any, options: Mapping[str, Any]) -> int:
    """A 32-bit integer (``3.0`` is accepted as ``3``; booleans and strings are not)."""
    return _whole(value, INT32, "a 32-bit integer", allow_text=False)


def check_big_integer(value: Any, options: Mapping[str, Any]) -> int:
    """A 64-bit integer, given as a number or a string of digits; stored as ``int``."""
    return _whole(value, INT64, "a 64-bit integer (number or string of digits)", allow_text=True)


def check_float(value: Any, options: Mapping[str, Any]) -> float:
    """A finite number, as ``float``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("expected a number")
    try:
        result = float(value)
    except OverflowError as exc:
        raise ValueError("the number is too large for a float") from exc
    if not math.isfinite(result):
        raise ValueError("expected a finite number")
    return result


def parse_decimal(value: Any) -> Decimal:
    """A finite ``Decimal`` from a number or a decimal string (floats through their shortest repr)."""
    if isinstance(value, bool):
        raise ValueError("expected a decimal number, not a boolean")
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("expected a finite decimal number")
        text = repr(value)
    elif isinstance(value, str) and len(value) <= 2 * MAX_DECIMAL_DIGITS and _DECIMAL_TEXT.match(value.strip()):
        text = value.strip()
    else:
        raise ValueError("expected a decimal number or a string like '12.50'")
    try:
        number = Decimal(text)
    except InvalidOperation as exc:
        raise ValueError("expected a decimal number") from exc
    if len(number.as_tuple().digits) > MAX_DECIMAL_DIGITS or abs(number.adjusted()) > MAX_DECIMAL_DIGITS:
        raise ValueError(f"a decimal may have at most {MAX_DECIMAL_DIGITS} digits")
    return number.copy_abs() if number.is_zero() else number


def check_decimal(value: Any, options: Mapping[str, Any]) -> str:
    """An exact decimal as a plain string (``"12.50"``), within ``precision``/``scale``."""
    number = parse_decimal(value)
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)  # finite by parse_decimal
    scale = max(0, -exponent)
    digits = len(number.as_tuple().digits)
    if options.get("scale") is not None and scale > options["scale"]:
        raise ValueError(f"at most {options['scale']} digits after the decimal point")
    if options.get("precision") is not None and max(digits, scale) > options["precision"]:
        raise ValueError(f"at most {options['precision']} significant digits")
    return format(number, "f")
