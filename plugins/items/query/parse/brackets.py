"""Bracket-form query-string keys and values: ``filter[_and][0][title][_eq]``, ``aggregate[sum]``, ``deep[a][_limit]``.

``split_key`` cuts a key into its name and bracket segments (``None`` when it is not well
formed). ``coerce_scalar`` is the filter rule 2 (docs/decisions/items-query-semantics.md):
``true``/``false`` to booleans,
``null`` to null, clean integers and decimals to numbers (leading-zero strings stay strings),
everything else a string. Numbers keep the text they came from (``RawInt``/``RawFloat``), so a
string field compared with ``1.50`` sees the text ``"1.50"``, not ``1.5``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kernel.base.errors import ApiError
from kernel.policy.filtergrammar import LOGICAL
from plugins.items.query.ir import KEY_LIST_OPS, LIST_OPS
from plugins.items.query.parse.limits import (
    MAX_FILTER_DEPTH,
    MAX_FILTER_NODES,
    MAX_INT,
    MAX_JSON_CHARS,
    MAX_KEY_SEGMENTS,
    MAX_LIST,
)

_INDEX = re.compile(r"[0-9]{1,4}")

_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[[^\[\]]*\])*)")
_SEGMENTS = re.compile(r"\[([^\[\]]*)\]")
_CLEAN_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_CLEAN_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")


class RawInt(int):
    """An integer read from query-string text; ``raw`` is that text."""

    raw: str


class RawFloat(float):
    """A decimal number read from query-string text; ``raw`` is that text."""

    raw: str


def raw_text(value: Any) -> str | None:
    """The query-string text a coerced number came from (``None`` for other values)."""
    return getattr(value, "raw", None)


def split_key(key: str) -> tuple[str, list[str]] | None:
    """``("filter", ["_and", "0", "title", "_eq"])`` for ``filter[_and][0][title][_eq]``."""
    match = _KEY.fullmatch(key)
    if match is None:
        return None
    return match.group(1), _SEGMENTS.findall(match.group(2))


def coerce_scalar(text: str) -> Any:
    """One bracket value, coerced by rule 2 (see the module docstring)."""
    if text == "true":
        return True
    if text == "false":
        return False
    if text == "null":
        return None
    if len(text) <= 20 and _CLEAN_INT.fullmatch(text):
        number = int(text)
        if -MAX_INT - 1 <= number <= MAX_INT:  # beyond 64 bits it stays text, like "007"
            out = RawInt(number)
            out.raw = text
            return out
    elif len(text) <= 400 and _CLEAN_DECIMAL.fullmatch(text):
        value = float(text)
        if math.isfinite(value):
            result = RawFloat(value)
            result.raw = text
            return result
    return text


def plain(value: Any) -> Any:
    """``value`` with coerced numbers turned back into plain ``int``/``float`` (recursively)."""
    if isinstance(value, RawInt):
        return int(value)
    if isinstance(value, RawFloat):
        return float(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


class MalformedJSON(ValueError):
    """A JSON-form parameter that is not JSON (or not bounded JSON)."""


def _no_constants(name: str) -> Any:
    raise MalformedJSON(f"{name} is not JSON")


class OverBound(ValueError):
    """JSON refused for its size or nesting, not its syntax (400 ``VALIDATION_FAILED``)."""


def load_json(text: str) -> Any:
    """``json.loads`` bounded: size, nesting (RecursionError), NaN/Infinity, huge integers."""
    if len(text) > MAX_JSON_CHARS:
        raise OverBound(f"longer than {MAX_JSON_CHARS} characters")
    try:
        return json.loads(text, parse_constant=_no_constants)
    except MalformedJSON:
        raise
    except RecursionError:
        raise OverBound("nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, the integer digits limit
        raise MalformedJSON(str(exc)[:200]) from None


def query_pairs(params: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> list[tuple[str, str]]:
    """``(key, value)`` pairs from Falcon's ``req.params`` (str or list of str per key) or from
    an iterable of pairs, in order. Non-string values are ignored (never produced by HTTP)."""
    items = params.items() if isinstance(params, Mapping) else params
    out: list[tuple[str, str]] = []
    for key, value in items:
        if not isinstance(key, str):
            continue
        for one in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(one, str):
                out.append((key, one))
    return out


# ---------------------------------------------------------------------- filter[...] keys
def bracket_filter(entries: Iterable[tuple[list[str], str]], path: Sequence[Any]) -> dict[str, Any] | None:
    """The tree of bracket keys (segments after ``filter``) and their raw values (filter rules
    1, 2 and 4), not yet checked."""
    root: dict[str, Any] = {}
    leaves = 0
    for segments, raw in entries:
        if not _well_formed(segments):
            continue  # rule 4: a malformed bracket key is ignored
        if len(segments) > MAX_KEY_SEGMENTS:
            raise ApiError.validation(f"The filter is nested deeper than {MAX_FILTER_DEPTH} levels",
                                      path=[*path, *segments[:MAX_FILTER_DEPTH]])
        leaves += 1
        if leaves > MAX_FILTER_NODES:
            raise ApiError.validation(f"The filter is too large (more than {MAX_FILTER_NODES} nodes)", path=list(path))
        node = root
        for segment in segments[:-1]:
            node = node.setdefault(segment, {})
        node[segments[-1]] = bracket_operand(segments[-1], raw, [*path, *segments])
    return _listify(root) if root else None


def bracket_operand(op: str, raw: str, path: Sequence[Any] = ()) -> Any:
    """One bracket value for operator ``op`` (rule 2)."""
    if op in LIST_OPS or op in KEY_LIST_OPS:
        if raw == "":
            return []
        if raw.count(",") >= MAX_LIST:
            raise ApiError.validation(f"'{op}' takes at most {MAX_LIST} values", path=list(path))
        parts = raw.split(",")
        return parts if op in KEY_LIST_OPS else [coerce_scalar(p) for p in parts]
    if op == "_has_key":
        return raw
    if op == "_json_contains" and raw[:1] in ("{", "["):
        try:
            value = load_json(raw)
        except (MalformedJSON, OverBound):
            value = None
        if isinstance(value, (dict, list)):
            return value
    return coerce_scalar(raw)


def _is_operator(segment: str) -> bool:
    return len(segment) > 1 and segment[0] == "_" and segment not in LOGICAL


def _well_formed(segments: list[str]) -> bool:
    if not segments or not _is_operator(segments[-1]):
        return False
    want_index = False
    for segment in segments[:-1]:
        if want_index:
            if not _INDEX.fullmatch(segment):
                return False
            want_index = False
        elif segment in LOGICAL:
            want_index = True
        elif not segment or segment[0] == "_":
            return False
    return not want_index


def _listify(node: dict[str, Any]) -> dict[str, Any]:
    """Index-keyed objects under ``_and``/``_or`` become lists, in index order."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in LOGICAL:
            out[key] = [_listify(value[k]) for k in sorted(value, key=int)]
        elif isinstance(value, dict) and not _is_operator(key):
            out[key] = _listify(value)
        else:
            out[key] = value
    return out
