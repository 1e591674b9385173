"""Name lists of the query string (``fields``, ``sort``, ``groupBy``, aggregate fields) and
bounded integers: the shapes ``params`` and ``deep`` share."""

from __future__ import annotations

import re
from typing import Any

from kernel.base.errors import ApiError
from plugins.items.query.parse.brackets import MalformedJSON, OverBound, load_json
from plugins.items.query.parse.limits import MAX_PATH_SEGMENTS, SEGMENT

_INTEGER = re.compile(r"[+-]?[0-9]{1,12}")
LIST_SEGMENT = re.compile(r"[0-9]{0,4}")  # name[] and name[3]: the list forms of a key


def bounded_int(value: Any, path: list[Any], low: int, high: int) -> int | None:
    """An integer (or its text) within ``[low, high]``; ``None`` stays ``None``; else 400."""
    if value is None:
        return None
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and _INTEGER.fullmatch(value))):
        raise ApiError.validation(f"'{path[-1]}' must be an integer", path=path)
    number = int(value)
    if not low <= number <= high:
        raise ApiError.validation(f"'{path[-1]}' must be between {low} and {high}", path=path)
    return number


def split_names(value: Any, path: list[Any]) -> list[str]:
    """Names from a comma list, a JSON array text, or a list of strings (blanks dropped)."""
    if isinstance(value, list):
        items = value
    elif isinstance(value, str) and value.lstrip().startswith("["):
        try:
            items = load_json(value)
        except (MalformedJSON, OverBound):
            raise ApiError.validation(f"'{path[-1]}' is not a valid JSON array", path=path) from None
        if not isinstance(items, list):
            raise ApiError.validation(f"'{path[-1]}' must be a list of names", path=path)
    elif isinstance(value, str):
        items = value.split(",")
    else:
        raise ApiError.validation(f"'{path[-1]}' must be a list of names", path=path)
    if not all(isinstance(i, str) for i in items):
        raise ApiError.validation(f"'{path[-1]}' must be a list of names", path=path)
    return [i.strip() for i in items if i.strip()]


def name_path(name: str, path: list[Any], star: bool = False, max_segments: int = MAX_PATH_SEGMENTS) -> str:
    """``name`` if it is a dotted path of at most ``max_segments`` (8) ``[A-Za-z0-9_]`` segments
    (``*`` too with ``star``), else 400."""
    segments = name.split(".")
    ok = len(segments) <= max_segments and all(
        SEGMENT.fullmatch(s) or (star and s == "*") for s in segments)
    if not ok:
        raise ApiError.validation(f"'{name[:80]}' is not a field name or a dotted path of at most "
                                  f"{max_segments} segments of letters, digits and '_'", path=path)
    return name


def field_segments(nesting: int) -> int:
    """The segments a ``fields`` name may have in a read nesting ``nesting`` relations: 8, or
    one per relation and the field read at the last when that is more."""
    return max(MAX_PATH_SEGMENTS, nesting + 1)


def sort_tokens(names: list[str], path: list[Any]) -> list[tuple[str, bool]]:
    """``(name, descending)`` for tokens like ``-views`` and ``title``."""
    out: list[tuple[str, bool]] = []
    for token in names:
        descending = token.startswith("-")
        name = token[1:] if descending else token.removeprefix("+")
        out.append((name_path(name, path), descending))
    return out


# ---------------------------------------------------------------------- aggregate


def flatten_names(value: Any, path: list[Any]) -> list[str]:
    """``split_names`` over one value or a list of them (repeated keys, JSON lists)."""
    if not isinstance(value, list):
        return split_names(value, path)
    out: list[str] = []
    for part in value:
        if not isinstance(part, str):
            raise ApiError.validation(f"'{path[-1]}' must be a list of names", path=path)
        out.extend(split_names(part, path))
    return out
