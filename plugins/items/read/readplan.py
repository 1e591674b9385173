"""Read plans: everything a list or item read derives from its request, built once and cached.

A ``ReadPlan`` holds the SQLAlchemy statements (page, count, or the aggregate query), the
``Projection`` that shapes rows and lists the nested relations, and the read ``Decision``. It
depends only on the site's schema version, the caller's permissions and the query, so it is
cached per (site, schema version, collection, access snapshot, query) in the kernel's
``read_plans`` site cache (bounded LRU; dropped per site on ``schema.changed``,
``access.changed`` and ``sites.changed``): a repeated request skips parsing names, resolving and compiling the filter and sort, and
building the statements, and SQLAlchemy's compiled cache then knows the statement object
(its cache key is memoised on it). Admins share one entry; other callers key on their access
snapshot object (``kernel.access`` replaces it when permissions change or its TTL ends), kept in
the entry and compared by identity. Rules reading ``$NOW`` are never cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func

from kernel.base.errors import ApiError
from kernel.cache.sitecache import SiteCacheSpec
from kernel.policy.access import Decision
from plugins.items.core.guard import ReadAccess
from plugins.items.core.rowfilter import row_condition
from plugins.items.core.rows import live_rows
from plugins.items.query import AggregatePlan, ListQuery, compile_aggregate, compile_filter, compile_sort
from plugins.items.read import counts, group_counts
from plugins.items.read.listing import ITEM_ARG, MAX_LIMIT
from plugins.items.read.projection import Projection, Projector, tree_of
from plugins.items.tables import items
from plugins.schema.api import CollectionDef, SchemaSnapshot

READ_PLAN_CACHE = SiteCacheSpec(
    "read_plans", max_entries=2_048, ttl=3600.0, invalidate_on=("schema.changed", "access.changed"),
    doc="Items read plans per (site, schema version, collection, caller's access, query).")
MAX_KEY_CHARS = 8192  # larger queries are planned every time rather than held in memory


@dataclass(frozen=True)
class ReadPlan:
    """``page``: the page statement of a list, the aggregate statement, or an item read's
    statement (the id bound per request: ``ITEM_ARG``). ``count``: when the total is asked; it is its own
    statement, so that the page keeps its own plan (an index walked in order that stops after
    the page), where a ``count(*) OVER ()`` beside the page would read every match first (3.9 s
    instead of 3 ms for a filtered, sorted page of 1,000,000 items on PostgreSQL)."""

    read: Decision
    page: Any
    projection: Projection | None = None
    count: Any = None
    aggregate: AggregatePlan | None = None
    # A grouped count the kept counts can answer (group_counts.py): their statement, and the
    # (collection id, field) pair, used once the registry says it is ready.
    kept: Any = None
    kept_pair: tuple[str, str] | None = None


def plan_for(kernel: Any, kind: str, db: Any, schema: SchemaSnapshot, coll: CollectionDef, query: ListQuery,
             access: ReadAccess, dialect: str) -> ReadPlan:
    """The cached plan of a ``list`` or ``item`` read, built on a miss. The query's variables
    (``$CURRENT_USER``, ``$NOW``...) are the caller's values first, so the key holds them; a
    query reading ``$NOW`` is never kept."""
    query, moving = access.bind(query)
    text = repr(query)
    key = (kind, schema.version, coll.id, id(access.owner), text)
    cache = kernel.site_caches[READ_PLAN_CACHE.name]
    entry = cache.get(db.site_id, key)
    if entry is not None and entry[0] is access.owner:
        return entry[1]
    build = list_plan if kind == "list" else item_plan
    plan = build(db, schema, coll, query, access, dialect)
    if len(text) <= MAX_KEY_CHARS and access.cacheable() and not moving:
        cache.put(db.site_id, key, (access.owner, plan))
    return plan


def conditions(schema: SchemaSnapshot, coll: CollectionDef, query: ListQuery, access: ReadAccess,
               dialect: str) -> list[Any]:
    """The permission's row condition and the list ``filter`` (403 ``field_policy`` for any
    name the caller may not read, through relations too)."""
    out = [row_condition(access.decision(coll.name), dialect=dialect, coll=coll, snapshot=schema)]
    out.append(compile_filter(query.filter, snapshot=schema, collection=coll, dialect=dialect, table=items,
                              can_read=access.can_filter, row_filter_for=access.row_filter_for))
    return [c for c in out if c is not None]


def list_plan(db: Any, schema: SchemaSnapshot, coll: CollectionDef, query: ListQuery, access: ReadAccess,
              dialect: str) -> ReadPlan:
    read = access.decision(coll.name)
    # REST's parser bounds these; a ListQuery built by other callers (GraphQL) is held to the same.
    if not 1 <= query.limit <= MAX_LIMIT or query.offset < 0:
        raise ApiError.validation(f"'limit' must be 1 to {MAX_LIMIT} and 'offset' not negative",
                                  path=["query", "limit" if not 1 <= query.limit <= MAX_LIMIT else "offset"])
    where = conditions(schema, coll, query, access, dialect)
    if query.is_aggregate:
        # Groups are ordered by their keys; ``sort``, ``fields`` and ``deep`` do not apply.
        agg = compile_aggregate(query.aggregate, query.group_by, snapshot=schema, collection=coll,
                                dialect=dialect, table=items, can_read=access.can_filter)
        stmt = live_rows(db, coll, *agg.columns).where(*where)
        if query.group_by:
            stmt = stmt.group_by(*agg.group_by).order_by(*agg.order_by).limit(query.limit).offset(query.offset)
        kept = group_counts.kept_field(query, coll, where, dialect)
        if kept is None:
            return ReadPlan(read, stmt, aggregate=agg)
        return ReadPlan(read, stmt, aggregate=agg, kept=group_counts.kept_statement(db, coll, kept, query),
                        kept_pair=(coll.id, kept))
    projection = Projector(schema, access, dialect, query.nesting).project(coll, tree_of(query.fields), query.deep)
    order = compile_sort(query.sort, snapshot=schema, collection=coll, dialect=dialect, table=items,
                         can_read=access.can_filter, row_filter_for=access.row_filter_for)
    count = None
    if query.with_total:  # with no filter and no row condition, the kept count (counts.py)
        count = live_rows(db, coll, func.count()).where(*where) if where else counts.total_stmt(db, coll)
    page = live_rows(db, coll, *projection.columns).where(*where).order_by(*order)
    return ReadPlan(read, page.limit(query.limit).offset(query.offset), projection, count)


def item_plan(db: Any, schema: SchemaSnapshot, coll: CollectionDef, query: ListQuery, access: ReadAccess,
              dialect: str) -> ReadPlan:
    """One item's read: its ``fields`` and ``deep``; the permission's row condition applies."""
    read = access.decision(coll.name)
    projection = Projector(schema, access, dialect, query.nesting).project(coll, tree_of(query.fields), query.deep)
    base = live_rows(db, coll, *projection.columns).where(items.c.id == bindparam(ITEM_ARG))
    condition = row_condition(read, dialect=dialect, coll=coll, snapshot=schema)
    return ReadPlan(read, base if condition is None else base.where(condition), projection)
