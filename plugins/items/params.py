"""Query-string parameters of item reads: ``fields``, ``sort``, ``limit``, ``offset``, ``page``, ``meta``.

Both the plain forms (``sort=-a,b``) and Directus's repeated array forms (``sort[]=-a&sort[]=b``)
are read. Names are only shaped here; whether they exist and may be read is
``listing.check_query``'s question, so GraphQL gets the same answers. ``filter``,
``aggregate``, ``groupBy`` and ``deep`` are read by the query language once it is integrated;
until then they are not parsed here.
"""

from __future__ import annotations

from typing import Any

from kernel.errors import ApiError
from kernel.http.params import pagination
from plugins.items.listing import DEFAULT_LIMIT, MAX_LIMIT, ListQuery, SortKey

MAX_NAMES = 200
MAX_NAME = 200
META_TOTAL = frozenset({"total_count", "filter_count", "*"})


def _names(req: Any, param: str) -> list[str]:
    raw: list[str] = []
    for name in (param, f"{param}[]"):
        values = req.get_param_as_list(name) or []
        raw.extend(values)
    out = []
    for chunk in raw:
        out.extend(p.strip() for p in chunk.split(","))
    out = [p for p in out if p]
    if len(out) > MAX_NAMES or any(len(p) > MAX_NAME or "\x00" in p for p in out):
        raise ApiError.validation(f"'{param}' takes at most {MAX_NAMES} names of at most {MAX_NAME} characters",
                                  path=["query", param])
    return out


def parse_fields(req: Any) -> tuple[str, ...] | None:
    """``fields``: ``None`` for all (absent or ``*``); a dotted name selects its top-level field
    until nested reads exist (``author.name`` returns ``author`` as stored)."""
    names = _names(req, "fields")
    if not names or any(n == "*" or n.startswith("*.") for n in names):
        return None
    return tuple(dict.fromkeys(n.split(".", 1)[0] for n in names))


def parse_sort(req: Any) -> tuple[SortKey, ...]:
    """``sort``: names, ``-`` for descending."""
    keys = []
    for name in _names(req, "sort"):
        descending = name.startswith("-")
        bare = name[1:] if descending else name
        if not bare:
            raise ApiError.validation("'sort' has an empty name", path=["query", "sort"])
        keys.append(SortKey(bare, descending))
    return tuple(keys)


def parse_meta(req: Any) -> bool:
    """``meta``: ``total_count`` (default) counts, ``none`` does not."""
    raw = req.get_param("meta")
    if raw is None or raw == "" or raw in META_TOTAL:
        return True
    if raw == "none":
        return False
    raise ApiError.validation("'meta' must be total_count or none", path=["query", "meta"])


def parse_list_query(req: Any) -> ListQuery:
    """The ``ListQuery`` of a ``GET /items/{collection}`` request."""
    limit, offset = pagination(req, default_limit=DEFAULT_LIMIT, max_limit=MAX_LIMIT)
    return ListQuery(fields=parse_fields(req), sort=parse_sort(req), limit=limit, offset=offset,
                     with_total=parse_meta(req))
