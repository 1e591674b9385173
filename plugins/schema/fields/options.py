"""A field's ``options``: the keys svc understands, checked against the field's type.

``options`` is one object holding widget options (free-form, for the admin UI) and the keys
listed in ``KNOWN_OPTIONS``, which svc enforces: ``default``, ``unique``, ``indexed`` and the
validation options. A known key on a type it does not apply to is a 400, so a typo'd
``maxLenght`` is free-form but ``min`` on a string is refused rather than silently ignored.
"""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

from kernel.base.errors import ApiError
from plugins.schema.fieldtypes import types as t
from plugins.schema.fieldtypes.geometry import GEOMETRY_TYPES

LENGTH_TYPES = frozenset({"string", "text", "slug", "code"})
CHOICE_TYPES = frozenset({"string", "text", "slug", "integer", "float", "decimal", "bigInteger", "csv",
                          "color"})
UNINDEXABLE = frozenset({"json", "csv", "geometry", "files"})
KNOWN_OPTIONS: dict[str, frozenset[str] | None] = {  # option -> types it applies to (None: all)
    "default": None, "unique": frozenset(t.FIELD_TYPES) - UNINDEXABLE,
    "indexed": frozenset(t.FIELD_TYPES) - UNINDEXABLE,
    "maxLength": LENGTH_TYPES, "minLength": LENGTH_TYPES, "pattern": LENGTH_TYPES,
    "min": t.NUMERIC_TYPES, "max": t.NUMERIC_TYPES, "choices": CHOICE_TYPES,
    "precision": frozenset({"decimal"}), "scale": frozenset({"decimal"}),
    "geometryType": frozenset({"geometry"}), "algorithm": frozenset({"hash"}),
    "sensitive": frozenset({"text"}),
}
# A ``sensitive`` field (regulated content, docs/regulated-content.md) holds personal data that may
# be stored encrypted: it is never indexed, unique, searched or named in a query, and its value
# is checked before encryption only, so the options that constrain the stored value do not apply.
SENSITIVE_EXCLUDES = ("unique", "indexed", "default", "maxLength", "minLength", "pattern", "choices")
# Short scalar types are indexed unless ``indexed: false`` says otherwise: a CMS is read far
# more than written, and a filter, sort or groupBy on an unindexed field scans the collection.
# Long text, JSON, lists and geometry are not (``indexed: true`` still indexes a long string).
INDEXED_BY_DEFAULT = frozenset({"boolean", "integer", "float", "decimal", "bigInteger", "dateTime", "date",
                                "time", "timestamp", "string", "uuid", "slug", "color"})
MAX_DEFAULT_INDEXED_LENGTH = 255
MAX_OPTIONS_BYTES = 16_384
MAX_PATTERN = 500
MAX_CHOICES = 1_000
MAX_LENGTH_LIMIT = 10_000_000
# A group that repeats something which itself repeats, e.g. (a+)+ or (\w*\s?)*: the classic
# shape of catastrophic backtracking in Python's re. Not a proof of safety; a cheap guard.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)(?:[+*]|\{\d*,)")


def is_indexed(type_name: str | None, options: dict[str, Any] | None) -> bool:
    """Whether a field of ``type_name`` with ``options`` has an expression index: ``unique`` and
    ``indexed: true`` always, ``indexed: false`` never, otherwise by type (``INDEXED_BY_DEFAULT``;
    a ``string`` only up to ``MAX_DEFAULT_INDEXED_LENGTH`` characters)."""
    options = options or {}
    if options.get("unique"):
        return True
    if "indexed" in options:
        return bool(options["indexed"])
    if type_name not in INDEXED_BY_DEFAULT:
        return False
    limit = options.get("maxLength")
    return not (type_name == "string" and isinstance(limit, int) and limit > MAX_DEFAULT_INDEXED_LENGTH)


def _fail(message: str, key: str, *more: Any) -> ApiError:
    return ApiError.validation(message, path=["options", key, *more])


def _int(options: dict[str, Any], key: str, low: int, high: int) -> int:
    value = options[key]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(f"'{key}' must be an integer within [{low}, {high}]", key)
    return value


def _pattern(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_PATTERN:
        raise _fail(f"'pattern' must be a regular expression of 1 to {MAX_PATTERN} characters", "pattern")
    try:
        with warnings.catch_warnings():  # "possible nested set" and the like: style, not errors
            warnings.simplefilter("ignore")
            re.compile(value)
    except (re.error, RecursionError, OverflowError) as exc:
        raise _fail(f"'pattern' is not a valid regular expression: {exc}", "pattern") from exc
    if _NESTED_QUANTIFIER.search(value):
        raise _fail("'pattern' nests repetitions (like (a+)+), which can take exponential time", "pattern")
    return value


def _number(type_name: str, options: dict[str, Any], key: str) -> Any:
    try:
        return t.coerce(type_name, options[key])
    except ValueError as exc:
        raise _fail(f"'{key}' must be a {type_name} value: {exc}", key) from exc


def _choices(type_name: str, value: Any) -> list[Any]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_CHOICES:
        raise _fail(f"'choices' must be a list of 1 to {MAX_CHOICES} values", "choices")
    member_type = "string" if type_name == "csv" else type_name
    out = []
    for i, choice in enumerate(value):
        raw = choice.get("value") if isinstance(choice, dict) else choice
        try:
            normal = t.coerce(member_type, raw)
        except ValueError as exc:
            raise _fail(f"choice {i} is not a {member_type} value: {exc}", "choices", i) from exc
        if normal is None:
            raise _fail(f"choice {i} has no value", "choices", i)
        out.append({**choice, "value": normal} if isinstance(choice, dict) else normal)
    return out


def _check_known(type_name: str, opts: dict[str, Any]) -> None:
    for key in ("unique", "indexed"):
        if key in opts and not isinstance(opts[key], bool):
            raise _fail(f"'{key}' must be true or false", key)
    for key in ("maxLength", "minLength"):
        if key in opts:
            opts[key] = _int(opts, key, 0, MAX_LENGTH_LIMIT)
    if opts.get("minLength", 0) > opts.get("maxLength", MAX_LENGTH_LIMIT):
        raise _fail("'minLength' is larger than 'maxLength'", "minLength")
    if "pattern" in opts:
        opts["pattern"] = _pattern(opts["pattern"])
    for key in ("min", "max"):
        if key in opts:
            opts[key] = _number(type_name, opts, key)
    if "min" in opts and "max" in opts and t.parse_decimal(opts["min"]) > t.parse_decimal(opts["max"]):
        raise _fail("'min' is larger than 'max'", "min")
    if "precision" in opts:
        opts["precision"] = _int(opts, "precision", 1, t.MAX_DECIMAL_DIGITS)
    if "scale" in opts:
        opts["scale"] = _int(opts, "scale", 0, opts.get("precision", t.MAX_DECIMAL_DIGITS))
    if "geometryType" in opts and opts["geometryType"] not in GEOMETRY_TYPES:
        raise _fail(f"'geometryType' must be one of {', '.join(GEOMETRY_TYPES)}", "geometryType")
    if "algorithm" in opts and opts["algorithm"] not in tuple(t.HASH_LENGTHS):
        raise _fail(f"'algorithm' must be one of {', '.join(t.HASH_LENGTHS)}", "algorithm")
    if "choices" in opts:
        opts["choices"] = _choices(type_name, opts["choices"])
    if "sensitive" in opts:
        if not isinstance(opts["sensitive"], bool):
            raise _fail("'sensitive' must be true or false", "sensitive")
        clash = next((k for k in SENSITIVE_EXCLUDES if opts["sensitive"] and k in opts), None)
        if clash is not None:
            raise _fail(f"a sensitive field cannot have '{clash}' (its value may be stored encrypted)", clash)


def validate_options(type_name: str, options: Any) -> dict[str, Any]:
    """``options`` for a field of ``type_name``, checked and normalised (400 with a path)."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ApiError.validation("'options' must be an object", path=["options"])
    try:
        options = t.check_json(options)
        size = len(json.dumps(options, separators=(",", ":")))
    except (ValueError, RecursionError) as exc:
        raise ApiError.validation(f"'options' is not storable JSON: {exc}", path=["options"]) from exc
    if size > MAX_OPTIONS_BYTES:
        raise ApiError.validation(f"'options' is larger than {MAX_OPTIONS_BYTES} bytes", path=["options"])
    opts = {k: v for k, v in options.items() if not (k in KNOWN_OPTIONS and v is None)}
    for key in opts:
        applies = KNOWN_OPTIONS.get(key)
        if applies is not None and type_name not in applies:
            raise _fail(f"option '{key}' does not apply to a {type_name} field", key)
    _check_known(type_name, opts)
    if "default" in opts:
        try:
            opts["default"] = t.validate_value(_Shape(type_name, opts), opts["default"])
        except ValueError as exc:
            raise _fail(f"'default' is not a valid value of this field: {exc}", "default") from exc
    return opts


class _Shape:
    """A stand-in field (type and options) for checking a default before the field exists."""

    def __init__(self, type_name: str, options: dict[str, Any]) -> None:
        self.type = type_name
        self.options = options
