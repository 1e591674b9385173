"""List query parameters (docs/decisions/items-query-semantics.md, Parameters) parsed from a query string.

``parse_list_query(params)`` takes Falcon's ``req.params`` (with ``auto_parse_qs_csv=False``:
a str, or a list of str for a repeated key) or any iterable of ``(key, value)`` pairs, and
returns a ``ListQuery``. Names are only shaped here; ``compile``/``resolve`` check them against
the schema and the principal. Both the spec's forms and Directus's are read:

- ``fields``, ``sort``, ``groupBy``: comma lists, repeated or ``name[]=`` keys (joined in
  order), or a JSON array of strings. ``sort`` tokens take ``-`` for descending.
- ``limit`` 1..200 (default 25); ``offset``; ``page`` (1-indexed, sets ``offset``; it wins
  over ``offset`` as in Directus). A scalar given twice: the last one counts. Blank = absent.
- ``meta``: ``total_count`` (default) or ``none``; Directus's ``filter_count`` and ``*`` ask for
  the same (filtered) ``total``.
- ``aggregate[fn]=a,b`` or ``aggregate={"fn": "*" | "a,b" | ["a"]}``.
- ``deep[rel][_limit]=5``, ``deep[rel][_filter][f][_op]=v``, ``deep[rel][_sort]``, ``_fields``,
  ``_offset``, ``_page`` (also unprefixed, as the spec writes ``deep[relation][fields]``), nested
  ``deep[rel][sub][_limit]``, or ``deep=<JSON>``; the JSON form wins over brackets.
- ``filter``: see ``filters``. Unknown parameters are ignored (``search`` is its own endpoint).

Errors are 400 ``VALIDATION_FAILED`` with ``path: ["query", name, ...]``, except a malformed JSON
``filter``: 400 ``VALIDATION``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kernel.base.errors import ApiError
from plugins.items.query.aggregates import AGGREGATE_FUNCTIONS
from plugins.items.query.filters import filter_from_pairs
from plugins.items.query.parse.brackets import MalformedJSON, OverBound, load_json, query_pairs, split_key
from plugins.items.query.parse.deep import DeepQuery, parse_deep
from plugins.items.query.parse.limits import MAX_NAMES, MAX_NESTING, MAX_NESTING_CEILING, MAX_OFFSET
from plugins.items.query.parse.names import (
    LIST_SEGMENT,
    bounded_int,
    field_segments,
    name_path,
    sort_tokens,
    split_names,
)
from plugins.items.query.timebins import bucket_name, split_bucket

META_VALUES = frozenset({"total_count", "filter_count", "*", "none"})


@dataclass(frozen=True)
class ListQuery:
    """A parsed list request. ``sort`` is ``(name, descending)`` pairs; ``aggregate`` maps a
    function to field names (``"*"`` for ``count``); ``filter`` is checked for shape and
    bounds, not yet against a schema."""

    fields: list[str] | None = None
    filter: dict[str, Any] | None = None
    sort: list[tuple[str, bool]] = field(default_factory=list)
    limit: int = 25
    offset: int = 0
    page: int | None = None
    meta: str = "total_count"
    aggregate: dict[str, list[str]] = field(default_factory=dict)
    group_by: list[str] = field(default_factory=list)
    deep: dict[str, DeepQuery] = field(default_factory=dict)
    nesting: int = MAX_NESTING  # relations the read may nest (``fields``, ``deep``)

    @property
    def with_total(self) -> bool:
        return self.meta != "none"

    @property
    def is_aggregate(self) -> bool:
        return bool(self.aggregate or self.group_by)


def parse_list_query(params: Mapping[str, Any] | Iterable[tuple[str, Any]], *, default_limit: int = 25,
                     max_limit: int = 200, nesting: int = MAX_NESTING) -> ListQuery:
    """The list parameters of a query string (see the module docstring). ``nesting``: the
    relations ``fields`` and ``deep`` may nest, ``MAX_NESTING`` (REST's) unless a caller that
    bounds its own requests asks for more, up to ``MAX_NESTING_CEILING``."""
    if not MAX_NESTING <= nesting <= MAX_NESTING_CEILING:
        raise ValueError(f"nesting must be {MAX_NESTING} to {MAX_NESTING_CEILING}, not {nesting}")
    pairs = query_pairs(params)
    grouped: dict[str, list[tuple[list[str], str]]] = {}
    for key, value in pairs:
        split = split_key(key)
        if split is not None:
            grouped.setdefault(split[0], []).append((split[1], value))
    limit = _integer(grouped, "limit", 1, max_limit)
    limit = default_limit if limit is None else limit
    offset = _integer(grouped, "offset", 0, MAX_OFFSET) or 0
    page = _integer(grouped, "page", 1, MAX_OFFSET)
    if page is not None:
        offset = (page - 1) * limit
        if offset > MAX_OFFSET:
            raise ApiError.validation("'page' is too large", path=["query", "page"])
    return ListQuery(
        fields=_fields(_names(grouped.get("fields", []), ["query", "fields"]), field_segments(nesting)),
        filter=filter_from_pairs(pairs),
        sort=sort_tokens(_names(grouped.get("sort", []), ["query", "sort"]), ["query", "sort"]),
        limit=limit,
        offset=offset,
        page=page,
        meta=_meta(grouped),
        aggregate=_aggregate(grouped.get("aggregate", [])),
        group_by=[_group_name(n) for n in _names(grouped.get("groupBy", []), ["query", "groupBy"])],
        deep=parse_deep(grouped.get("deep", []), max_limit, nesting),
        nesting=nesting,
    )


# ---------------------------------------------------------------------- scalars
def _scalar(grouped: dict[str, list[tuple[list[str], str]]], name: str) -> str | None:
    values = [v for segments, v in grouped.get(name, []) if not segments]
    value = values[-1].strip() if values else ""
    return value or None


def _integer(grouped: dict[str, list[tuple[list[str], str]]], name: str, low: int, high: int) -> int | None:
    return bounded_int(_scalar(grouped, name), ["query", name], low, high)


def _meta(grouped: dict[str, list[tuple[list[str], str]]]) -> str:
    value = _scalar(grouped, "meta")
    if value is None:
        return "total_count"
    wanted = {v.strip() for v in value.split(",") if v.strip()}
    if not wanted <= META_VALUES or ("none" in wanted and len(wanted) > 1):
        raise ApiError.validation("'meta' is 'total_count' (the default) or 'none'", path=["query", "meta"])
    return "none" if wanted == {"none"} else "total_count"


# ---------------------------------------------------------------------- name lists
def _names(entries: list[tuple[list[str], str]], path: list[Any]) -> list[str]:
    """Names from ``name=a,b``, ``name[]=a``, ``name[0]=a`` or ``name=["a","b"]``, in order."""
    out: list[str] = []
    for segments, value in entries:
        if len(segments) > 1 or (segments and not LIST_SEGMENT.fullmatch(segments[0])):
            continue  # not a list key: ignored like any unknown parameter
        out.extend(split_names(value, path))
    if len(out) > MAX_NAMES:
        raise ApiError.validation(f"'{path[-1]}' takes at most {MAX_NAMES} names", path=path)
    return out


def _group_name(name: str) -> str:
    """A ``groupBy`` name: a dotted path, or a time bucket ``trunc_<unit>(<field>)``."""
    unit, inner = split_bucket(name)
    name_path(inner, ["query", "groupBy"])
    return name if unit is None else bucket_name(unit, inner)


def _fields(names: list[str], max_segments: int) -> list[str] | None:
    if not names:
        return None
    return list(dict.fromkeys(name_path(n, ["query", "fields"], star=True, max_segments=max_segments)
                              for n in names))


def _aggregate(entries: list[tuple[list[str], str]]) -> dict[str, list[str]]:
    path = ["query", "aggregate"]
    json_form: Any = None
    brackets: dict[str, list[str]] = {}
    for segments, value in entries:
        if not segments:
            if value.strip():
                json_form = value
        elif len(segments) == 1 or (len(segments) == 2 and LIST_SEGMENT.fullmatch(segments[1])):
            brackets.setdefault(segments[0], []).extend(split_names(value, [*path, segments[0]]))
    if json_form is not None:
        try:
            obj = load_json(json_form)
        except (MalformedJSON, OverBound):
            raise ApiError.validation("'aggregate' is not valid JSON", path=path) from None
        if not isinstance(obj, dict):
            raise ApiError.validation("'aggregate' must be an object of functions", path=path)
        brackets = {fn: split_names(v, [*path, fn]) for fn, v in obj.items()}
    out: dict[str, list[str]] = {}
    for fn, names in brackets.items():
        here = [*path, fn]
        if fn not in AGGREGATE_FUNCTIONS:
            raise ApiError.validation(f"Unknown aggregate function '{fn[:40]}'; known: "
                                      f"{', '.join(AGGREGATE_FUNCTIONS)}", path=here)
        if not names:
            raise ApiError.validation(f"'{fn}' takes field names (or '*' for count)", path=here)
        out[fn] = list(dict.fromkeys(n if n == "*" else name_path(n, here) for n in names))
    if sum(len(v) for v in out.values()) > MAX_NAMES:
        raise ApiError.validation(f"'aggregate' takes at most {MAX_NAMES} names", path=path)
    return out


