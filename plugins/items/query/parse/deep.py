"""``deep``: query parameters for nested relations, in bracket or Directus JSON form.

``deep[rel][_limit]=5``, ``deep[rel][_filter][f][_op]=v``, ``deep[rel][_sort]=-a``, ``_fields``,
``_offset``, ``_page`` (also unprefixed, ``deep[relation][fields]``: docs/decisions/
items-query-semantics.md, Parameters), nested
``deep[rel][sub][_limit]=2``; or ``deep=<JSON>``, which wins over brackets. An unprefixed
segment other than those six names is a nested relation. Relation names are checked against
the schema by the reader of nested relations, not here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernel.base.errors import ApiError
from plugins.items.query.filters import check_filter, parse_json_filter
from plugins.items.query.parse.brackets import MalformedJSON, OverBound, bracket_filter, load_json
from plugins.items.query.parse.limits import MAX_DEEP_DEPTH, MAX_NESTING, MAX_OFFSET, SEGMENT
from plugins.items.query.parse.names import (
    LIST_SEGMENT,
    bounded_int,
    field_segments,
    flatten_names,
    name_path,
    sort_tokens,
)

DEEP_PARAMS = ("fields", "filter", "sort", "limit", "offset", "page")


@dataclass(frozen=True)
class DeepQuery:
    """Query parameters for one nested relation (``deep[relation]...``)."""

    fields: list[str] | None = None
    filter: dict[str, Any] | None = None
    sort: list[tuple[str, bool]] = field(default_factory=list)
    limit: int | None = None
    offset: int = 0
    deep: dict[str, DeepQuery] = field(default_factory=dict)


@dataclass(frozen=True)
class _Bounds:
    max_limit: int  # of ``_limit``
    max_depth: int  # relations ``deep`` nests
    max_segments: int  # of a ``_fields`` name


# Where a relation's filter[...] bracket entries wait: an object, so no JSON key can be it.
_BRACKETS: Any = object()


def parse_deep(entries: list[tuple[list[str], str]], max_limit: int, nesting: int = MAX_NESTING) -> dict[str, DeepQuery]:
    """``deep`` from the ``deep`` keys' ``(segments, value)`` entries: relation -> ``DeepQuery``;
    nested at most ``MAX_DEEP_DEPTH`` relations, or ``nesting`` where the read nests deeper."""
    path = ["query", "deep"]
    bounds = _Bounds(max_limit, max(MAX_DEEP_DEPTH, nesting), field_segments(nesting))
    json_form = next((v for segments, v in reversed(entries) if not segments and v.strip()), None)
    if json_form is not None:
        try:
            obj = load_json(json_form)
        except (MalformedJSON, OverBound):
            raise ApiError.validation("'deep' is not valid JSON", path=path) from None
        if not isinstance(obj, dict):
            raise ApiError.validation("'deep' must be an object of relations", path=path)
        return _deep_level(obj, path, 1, bounds)
    tree: dict[str, Any] = {}
    for segments, value in entries:
        if segments:
            _deep_bracket(tree, segments, value, path)
    return _deep_level(tree, path, 1, bounds)


def _param_name(key: str) -> str | None:
    name = key[1:] if key.startswith("_") else key
    if key.startswith("_") or key in DEEP_PARAMS:
        return name
    return None


def _deep_bracket(tree: dict[str, Any], segments: list[str], value: str, path: list[Any]) -> None:
    """Place one ``deep[...]`` key into a JSON-like tree; filter keys stay as bracket entries."""
    node = tree
    if _param_name(segments[0]) is not None:
        return  # malformed: a deep key starts with a relation
    for i, segment in enumerate(segments):
        param = _param_name(segment)
        if param is None:
            if not SEGMENT.fullmatch(segment):
                return  # malformed: ignored
            node = node.setdefault(segment, {})
            if not isinstance(node, dict):
                return
            continue
        rest = segments[i + 1:]
        if param == "filter":
            if rest:
                node.setdefault(_BRACKETS, []).append((rest, value))
            else:
                node["_filter"] = value
        elif not rest or (len(rest) == 1 and LIST_SEGMENT.fullmatch(rest[0])):
            if param in ("fields", "sort") and rest:
                node.setdefault(f"_{param}", []).append(value)
            else:
                node[f"_{param}"] = value
        return


def _deep_level(obj: dict[str, Any], path: list[Any], depth: int, bounds: _Bounds) -> dict[str, DeepQuery]:
    if depth > bounds.max_depth:
        raise ApiError.validation(f"'deep' is nested deeper than {bounds.max_depth} relations", path=path)
    out: dict[str, DeepQuery] = {}
    for relation, spec in obj.items():
        here = [*path, relation]
        if not isinstance(relation, str) or not SEGMENT.fullmatch(relation) or relation.startswith("_"):
            raise ApiError.validation(f"'{str(relation)[:80]}' is not a relation name", path=here)
        if not isinstance(spec, dict):
            raise ApiError.validation("A 'deep' entry must be an object of parameters", path=here)
        out[relation] = _deep_query(spec, here, depth, bounds)
    return out


def _deep_query(spec: dict[str, Any], path: list[Any], depth: int, bounds: _Bounds) -> DeepQuery:
    values: dict[str, Any] = {}
    nested: dict[str, Any] = {}
    brackets = spec.get(_BRACKETS)
    for key, value in spec.items():
        if key == _BRACKETS:
            continue
        param = _param_name(key)
        if param is None:
            nested[key] = value
        elif param not in DEEP_PARAMS:
            raise ApiError.validation(f"Unknown deep parameter '{key[:40]}'", path=[*path, key])
        else:
            values[param] = (key, value)

    def here(param: str) -> list[Any]:
        return [*path, values[param][0]] if param in values else [*path, f"_{param}"]

    def raw(param: str) -> Any:
        return values[param][1] if param in values else None

    flt = raw("filter")
    if isinstance(flt, str):
        flt = parse_json_filter(flt, here("filter")) if flt.strip() else None
    elif flt is not None:
        flt = check_filter(flt, here("filter")) if isinstance(flt, dict) else _not_object(here("filter"))
    elif brackets:
        flt = check_filter(bracket_filter(brackets, here("filter")), here("filter"))
    fields = raw("fields")
    names = flatten_names(fields, here("fields")) if fields is not None else []
    sort_names = flatten_names(raw("sort"), here("sort")) if raw("sort") is not None else []
    limit = bounded_int(_strip(raw("limit")), here("limit"), 1, bounds.max_limit)
    offset = bounded_int(_strip(raw("offset")), here("offset"), 0, MAX_OFFSET) or 0
    page = bounded_int(_strip(raw("page")), here("page"), 1, MAX_OFFSET)
    if page is not None:
        offset = (page - 1) * (limit or 25)
    return DeepQuery(
        fields=list(dict.fromkeys(name_path(n, here("fields"), star=True, max_segments=bounds.max_segments)
                                  for n in names)) or None,
        filter=flt,
        sort=sort_tokens(sort_names, here("sort")),
        limit=limit,
        offset=offset,
        deep=_deep_level(nested, path, depth + 1, bounds) if nested else {},
    )


def _strip(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip() or None
    return value


def _not_object(path: list[Any]) -> Any:
    raise ApiError.validation("A 'deep' filter must be an object", path=path)
