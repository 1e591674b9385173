"""Field types: what a value of each of the twenty types is, as pure functions.

``validate_value(field, value)`` checks one value against a field (its type, then the field's
validation options) and returns it normalised; it raises ``ValueError`` with a message a
client can read. ``coerce(type, value)`` is the type check alone. ``convert`` / ``converts``
(in ``conversion.py``, which builds on this module) answer whether a stored value survives a type change.

``None`` is always accepted here: whether a field may be null or absent is ``field.required``,
which the caller checks, because a partial update may leave a required field untouched.

Normal forms (what items store): integers are ``int`` within 32 bits, ``bigInteger`` an ``int``
within 64 bits, ``decimal`` a plain decimal string (exact, never a float), dates and times ISO
8601 strings (aware date-times in UTC with ``Z``), ``uuid``/``hash``/``color`` lower case, ``csv``
and ``files`` lists of strings, ``geometry`` a GeoJSON geometry object.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from plugins.schema.fieldtypes.geometry import validate_geometry
from plugins.schema.fieldtypes.numeric import (
    INT32,
    INT64,
    MAX_DECIMAL_DIGITS,
    check_big_integer,
    check_decimal,
    check_float,
    check_integer,
    parse_decimal,
)
from plugins.schema.fieldtypes.temporal import check_date, check_datetime, check_time, check_timestamp

FIELD_TYPES: tuple[str, ...] = (
    "boolean", "integer", "float", "decimal", "bigInteger", "dateTime", "date", "time", "timestamp",
    "string", "text", "uuid", "hash", "slug", "code", "color", "json", "csv", "geometry", "files",
)
NUMERIC_TYPES = frozenset({"integer", "float", "decimal", "bigInteger"})
TEXT_TYPES = frozenset({"string", "text", "code"})
# Types a field may have to hold another item's id (m2o, the many side of o2m).
ID_TYPES = frozenset({"uuid", "string", "integer", "bigInteger"})
# Types a field may have to hold a list of ids (m2m) or of {collection, id} (m2a).
LIST_ID_TYPES = frozenset({"json", "csv"})

# ``string`` is a short string, as in SQL's varchar(255); ``maxLength`` raises or lowers it.
DEFAULT_MAX_LENGTH = {"string": 255, "slug": 255}
MAX_JSON_DEPTH = 64

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX = re.compile(r"^[0-9a-fA-F]{8,128}$")
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_COLOR = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")
_FILE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_NO_OPTIONS: Mapping[str, Any] = {}
HASH_LENGTHS = {"md5": 32, "sha1": 40, "sha256": 64, "sha512": 128}


def _text(value: Any, what: str = "a string") -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected {what}")
    if "\x00" in value:  # PostgreSQL's JSONB cannot hold NUL; refuse it everywhere alike
        raise ValueError("strings may not contain NUL characters")
    return value


def _boolean(value: Any, options: Mapping[str, Any]) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _string(value: Any, options: Mapping[str, Any]) -> str:
    return _text(value)


def _matching(pattern: re.Pattern[str], message: str, lower: bool = False) -> Callable[..., str]:
    def check(value: Any, options: Mapping[str, Any]) -> str:
        text = _text(value)
        if not pattern.match(text):
            raise ValueError(message)
        return text.lower() if lower else text

    return check


def _hash(value: Any, options: Mapping[str, Any]) -> str:
    text = _matching(_HEX, "expected a hex digest (8 to 128 hex characters)", lower=True)(value, options)
    algorithm = options.get("algorithm")
    if algorithm and len(text) != HASH_LENGTHS[algorithm]:
        raise ValueError(f"a {algorithm} digest has {HASH_LENGTHS[algorithm]} hex characters")
    return text


def check_json(value: Any, depth: int = 0) -> Any:
    """Any JSON value, refusing NaN/Infinity, NUL characters and nesting deeper than 64."""
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("JSON numbers must be finite")
        return value
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, list):
        return [check_json(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {_text(k, "string keys"): check_json(v, depth + 1) for k, v in value.items()}
    raise ValueError("expected a JSON value")


def _json(value: Any, options: Mapping[str, Any]) -> Any:
    return check_json(value)


def _csv(value: Any, options: Mapping[str, Any]) -> list[str]:
    if isinstance(value, str):
        parts = [p.strip() for p in _text(value).split(",")] if value.strip() else []
        return [p for p in parts if p]
    if not isinstance(value, list):
        raise ValueError("expected a list of strings or a comma-separated string")
    out = []
    for item in value:
        text = _text(item, "a list of strings").strip()
        if "," in text:
            raise ValueError("csv items may not contain commas")
        if text:
            out.append(text)
    return out


def _geometry(value: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    return validate_geometry(value, options.get("geometryType"))


def _files(value: Any, options: Mapping[str, Any]) -> list[str]:
    if not isinstance(value, list):
        raise ValueError("expected a list of file ids")
    seen: dict[str, None] = {}
    for item in value:
        if not isinstance(item, str) or not _FILE_ID.match(item):
            raise ValueError("file ids are strings of letters, digits, '_', '.' and '-'")
        seen.setdefault(item, None)  # a file listed twice is listed once
    return list(seen)


COERCERS: dict[str, Callable[[Any, Mapping[str, Any]], Any]] = {
    "boolean": _boolean, "integer": check_integer, "float": check_float, "decimal": check_decimal,
    "bigInteger": check_big_integer, "dateTime": check_datetime, "date": check_date, "time": check_time,
    "timestamp": check_timestamp, "string": _string, "text": _string, "code": _string,
    "uuid": _matching(_UUID, "expected a UUID like 0b8f...-...", lower=True), "hash": _hash,
    "slug": _matching(_SLUG, "expected a slug: lower-case letters and digits joined by single hyphens"),
    "color": _matching(_COLOR, "expected a colour like #rgb, #rrggbb or #rrggbbaa", lower=True),
    "json": _json, "csv": _csv, "geometry": _geometry, "files": _files,
}
assert set(COERCERS) == set(FIELD_TYPES)


def coerce(type_name: str, value: Any, options: Mapping[str, Any] | None = None) -> Any:
    """``value`` as a ``type_name`` value in its normal form, or ``ValueError``.

    Only type-shaping options apply here (``precision``/``scale``, ``geometryType``,
    ``algorithm``); the validation options are ``check_constraints``'.
    """
    if value is None:
        return None
    try:
        check = COERCERS[type_name]
    except KeyError as exc:
        raise ValueError(f"unknown field type {type_name!r}") from exc
    return check(value, options or {})


def choice_values(choices: Any) -> list[Any]:
    """The values of a ``choices`` option: plain values, or Directus-style ``{ text, value }``."""
    return [c.get("value") if isinstance(c, dict) else c for c in choices or []]


def check_constraints(type_name: str, value: Any, options: Mapping[str, Any]) -> None:
    """The field's validation options against a normalised, non-null ``value``."""
    if options.get("choices") is not None:
        allowed = choice_values(options["choices"])
        members = value if type_name == "csv" else [value]
        for member in members:
            if member not in allowed:
                raise ValueError(f"{member!r} is not one of the allowed choices")
    if type_name in NUMERIC_TYPES:
        number = Decimal(value) if type_name == "decimal" else value
        if options.get("min") is not None and number < _bound(type_name, options["min"]):
            raise ValueError(f"must be at least {options['min']}")
        if options.get("max") is not None and number > _bound(type_name, options["max"]):
            raise ValueError(f"must be at most {options['max']}")
    if isinstance(value, str):
        limit = options.get("maxLength", DEFAULT_MAX_LENGTH.get(type_name))
        if limit is not None and len(value) > limit:
            raise ValueError(f"at most {limit} characters")
        if options.get("minLength") is not None and len(value) < options["minLength"]:
            raise ValueError(f"at least {options['minLength']} characters")
        if options.get("pattern") and re.search(options["pattern"], value) is None:
            raise ValueError("does not match the field's pattern")


def _bound(type_name: str, bound: Any) -> Any:
    return parse_decimal(bound) if type_name == "decimal" else bound


def validate_value(field: Any, value: Any) -> Any:
    """``value`` checked against ``field`` (a ``FieldDef``, anything with ``.type`` and
    ``.options``, or a bare type name) and normalised; ``ValueError`` says what is wrong."""
    if isinstance(field, str):
        type_name, options = field, _NO_OPTIONS
    else:
        type_name, options = field.type, field.options or {}
    result = coerce(type_name, value, options)
    if result is not None:
        check_constraints(type_name, result, options)
    return result


__all__ = ["FIELD_TYPES", "INT32", "INT64", "MAX_DECIMAL_DIGITS", "coerce", "parse_decimal", "validate_value"]
