"""Running a PanelQuery: the whitelist check, the items API's aggregate, the panel's rows.

One data path: a PanelQuery becomes an items ``ListQuery`` (``aggregate``, ``groupBy``, the
``dateRange`` as the time bucket ``trunc_<interval>(<field>)`` first in ``groupBy`` and its bounds
ANDed into ``filter``) and runs through ``plugins.items.api`` as the caller, so permissions and
row conditions apply exactly as for ``GET /items/<collection>?aggregate...``.

Before anything runs (and before the cache is asked), every name the query references is
checked with ``items.unlisted_name``: a name that does not exist and a name the caller may not
read both answer 400 ``INVALID_FIELD`` with the same message and the path of the name in the
body, so a panel is never a predicate oracle over hidden fields.

Rows (``data``): one per group, ``{ bucket?, group?, value }``: ``bucket`` the first day
(``YYYY-MM-DD``) of the row's day, ISO week or month when there is a ``dateRange``; ``group``
the ``groupBy`` values by name; ``value`` the aggregate. Groups come ordered by their keys
(bucket first), at most ``limit`` of them; buckets without items are absent.
"""

from __future__ import annotations

import json
import time
from typing import Any

from kernel.base.errors import ApiError
from kernel.db.meta import iso, now_utc
from plugins.dashboards import cache
from plugins.dashboards.bodies import PanelQuery
from plugins.items import api as items

INVALID_FIELD = "INVALID_FIELD"


def bucket_of(q: PanelQuery) -> str | None:
    """The ``groupBy`` name of the query's time bucket."""
    r = q.date_range
    return None if r is None else f"trunc_{r.interval}({r.field})"


def items_query(q: PanelQuery) -> Any:
    """The items ``ListQuery`` of a PanelQuery."""
    bucket = bucket_of(q)
    group_by = ([bucket] if bucket else []) + list(q.group_by)
    return items.query(aggregate={q.aggregate: [q.field or "*"]}, groupBy=group_by or None,
                       filter=_filter(q), limit=q.limit, meta="none")


def _filter(q: PanelQuery) -> dict[str, Any] | None:
    r = q.date_range
    bounds = {} if r is None else {op: v for op, v in (("_gte", r.start), ("_lt", r.end)) if v is not None}
    if not bounds:
        return q.filter
    # The range comes first: ``body_path`` maps ``_and[0]`` to dateRange and ``_and[1]`` to filter.
    return {"_and": [{r.field: bounds}, *([q.filter] if q.filter else [])]}


def body_path(q: PanelQuery, path: list[Any], prefix: list[Any]) -> list[Any]:
    """Where an items query path (``["query", "filter", ...]``) points in the panel's body."""
    rest = list(path[1:]) if path[:1] == ["query"] else list(path)
    head = rest[:1]
    if head == ["filter"] and _filter(q) is not q.filter:
        if rest[2:3] == [0]:  # the range's own bounds: its field, or one bound's operand
            rest = ["dateRange", {"_gte": "from", "_lt": "to"}.get(rest[4], "field") if len(rest) > 4 else "field"]
        else:
            rest = ["filter", *rest[3:]]
    elif head == ["groupBy"] and len(rest) > 1:
        rest = ["dateRange", "field"] if rest[1] == bucket_of(q) else ["groupBy", *_index(q, rest[1])]
    elif head == ["aggregate"]:
        rest = ["field"] if q.field else ["aggregate"]
    return [*prefix, *rest]


def _index(q: PanelQuery, name: Any) -> list[Any]:
    return [q.group_by.index(name)] if name in q.group_by else []


def _translated(exc: ApiError, q: PanelQuery, prefix: list[Any]) -> ApiError:
    """An items error in the panel body's terms: paths into the PanelQuery; an unknown
    collection (only an admin gets that far: others are refused before the lookup) is a bad
    ``collection``."""
    detail = exc.details[0]
    if exc.status == 404:
        return ApiError.validation(detail.message, path=[*prefix, "collection"])
    if exc.status == 400 and detail.path:
        return ApiError(400, detail.code, detail.message, path=body_path(q, list(detail.path), prefix),
                        extensions=detail.extensions)
    return exc


async def check(ctx: Any, q: PanelQuery, prefix: list[Any]) -> Any:
    """The items query of ``q`` when every name it references is on the caller's whitelist;
    400 ``INVALID_FIELD`` otherwise (unknown and hidden alike), 403 without read permission."""
    try:
        query = items_query(q)
        unlisted = await items.unlisted_name(ctx, q.collection, query)
    except ApiError as exc:
        raise _translated(exc, q, prefix) from None
    if unlisted is not None:
        raise ApiError(400, INVALID_FIELD, f"The panel query names a field outside the whitelist of "
                                           f"'{q.collection}' (fields that exist and that you may read)",
                       path=body_path(q, unlisted, prefix))
    return query


def shape(rows: list[dict[str, Any]], q: PanelQuery) -> list[dict[str, Any]]:
    """The panel's rows from the items aggregate rows."""
    bucket = bucket_of(q)
    out = []
    for row in rows:
        value = row.get(q.aggregate)
        if isinstance(value, dict):
            value = value.get(q.field or "*")
        entry: dict[str, Any] = {}
        if bucket is not None:
            entry["bucket"] = row.get(bucket)
        if q.group_by:
            entry["group"] = {name: row.get(name) for name in q.group_by}
        entry["value"] = value
        out.append(entry)
    return out


async def run(ctx: Any, site_id: str, q: PanelQuery, prefix: list[Any], *,
              panel_id: str | None) -> tuple[dict[str, Any], bool]:
    """``({data, meta: {executedAt, rowCount, durationMs}}, from_cache)``. A stored panel's
    answer is cached per (site, panel, query, the caller's access fingerprint, the content
    generations of what it reads); a preview (``panel_id`` None) never is."""
    query = await check(ctx, q, prefix)
    key = None if panel_id is None else await cache.key_for(ctx, site_id, panel_id, q)
    if key is not None:
        hit = await ctx.kernel.cache.get(key)
        if hit is not None:
            return json.loads(hit), True
    started, executed = time.perf_counter(), now_utc()
    try:
        rows = await items.aggregate(ctx, q.collection, query)
    except ApiError as exc:
        raise _translated(exc, q, prefix) from None
    data = shape(rows, q)
    result = {"data": data, "meta": {"executedAt": iso(executed), "rowCount": len(data),
                                     "durationMs": round((time.perf_counter() - started) * 1000, 3)}}
    if key is not None:
        await ctx.kernel.cache.set(key, json.dumps(result), ttl=cache.ttl(ctx.kernel))
    return result, False
