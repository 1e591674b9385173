"""Listing items: a ``ListQuery`` in, one page (with its total) or the aggregate rows out.

The statements come from a ``readplan.ReadPlan`` (built once per schema version, permissions
and query, then cached): live rows of the collection, the permission's row condition
(``compile_row_filter``), the list ``filter`` (``compile_filter``), the order (``compile_sort``),
the page; the count, when asked, runs the same conditions; aggregates run
``compile_aggregate``'s plan. Items are shaped from the columns the projection selected, then
their nested relations are read (``nested``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import literal

from kernel.access import Decision
from kernel.tenancy.scope import SiteDB
from plugins.items.core.guard import readable
from plugins.items.core.records import item_record, mask, project
from plugins.items.query import ListQuery
from plugins.items.read.nested import attach, shape_rows
from plugins.items.tables import items

DEFAULT_LIMIT = 25
MAX_LIMIT = 200
LIVE_PAGE = 500  # live_values' page


@dataclass
class ListPage:
    """One page of items (masked, projected, relations nested) with the paging facts; for an
    aggregate query, ``items`` are the aggregate rows and ``aggregated`` is set."""

    items: list[dict[str, Any]] = field(default_factory=list)
    total: int | None = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0
    aggregated: bool = False

    def meta(self) -> dict[str, int] | None:
        """``{ total?, limit, offset }`` (``total`` only when counted); ``None`` for aggregates."""
        if self.aggregated:
            return None
        out = {"limit": self.limit, "offset": self.offset}
        if self.total is not None:
            out = {"total": self.total, **out}
        return out


def live_rows(db: SiteDB, coll: Any, *columns: Any) -> Any:
    """``SELECT`` over the collection's live items in this site.

    The collection id is rendered into the SQL (it is a server-made UUID), not bound: the
    expression indexes of ``indexed`` fields are partial on ``collection_id = '<id>'``, and a
    PostgreSQL generic plan of a prepared statement cannot prove a bound parameter matches
    that predicate, so it would fall back to a scan.
    """
    stmt = db.select(items, *columns) if columns else db.select(items)
    return stmt.where(*live_in(literal(coll.id, literal_execute=True)))


# An item plan's statement is built once per plan and bound to the id per request (SQLAlchemy
# memoizes a statement's cache key: a statement built again per request paid for it each time).
ITEM_ARG = "arg_item"


def live_in(collection_id: Any) -> tuple[Any, Any]:
    """The conditions of a live item of the collection ``collection_id`` names (rendered into
    the SQL, ``literal_execute``, for the partial indexes: see ``live_rows``)."""
    return items.c.collection_id == collection_id, items.c.deleted_at.is_(None)


def shape(row: Any, read: Decision, fields: tuple[str, ...] | None) -> dict[str, Any]:
    """A whole row as the caller sees it: masked by the read permission, projected by
    top-level ``fields`` (for readers that select every column, such as search)."""
    return project(mask(item_record(row), readable(read)), fields)


async def run_list(db: SiteDB, plan: Any, query: ListQuery, dialect: str, kept_counts: Any = None) -> ListPage:
    """Execute a list plan: the page (and the count when ``meta`` asks), or the aggregates
    (from the kept group counts when ``kept_counts``, the registry, has the plan's pair ready)."""
    if plan.aggregate is not None:
        kept = (plan.kept is not None and kept_counts is not None
                and await kept_counts.is_ready((db.site_id, *plan.kept_pair)))
        rows = await db.all(plan.kept if kept else plan.page)
        return ListPage(plan.aggregate.shape(rows), None, query.limit, query.offset, aggregated=True)
    rows = list(await db.all(plan.page))
    total = None
    if plan.count is not None:
        # A short page that is not past the end tells the total without counting.
        short = len(rows) < query.limit and (rows or query.offset == 0)
        total = query.offset + len(rows) if short else int(await db.scalar(plan.count) or 0)
    shaped = shape_rows(rows, plan.projection)
    if plan.projection.relations:
        await attach(db, dialect, plan.projection, rows, shaped)
    return ListPage(shaped, total, query.limit, query.offset)


async def run_one(db: SiteDB, plan: Any, item_id: str, dialect: str) -> dict[str, Any] | None:
    """Execute an item plan for ``item_id``: the item, or ``None`` when it is not visible."""
    row = await db.one(plan.page, {ITEM_ARG: item_id})
    if row is None:
        return None
    [shaped] = shape_rows([row], plan.projection)
    if plan.projection.relations:
        await attach(db, dialect, plan.projection, [row], [shaped])
    return shaped


async def live_values(db: SiteDB, coll: Any) -> AsyncIterator[tuple[Any, dict[str, Any]]]:
    """``(row id, data)`` of every live item, in pages by id (bounded memory)."""
    last = None
    while True:
        stmt = db.select(items, items.c.id, items.c.data).where(
            items.c.collection_id == coll.id, items.c.deleted_at.is_(None))
        if last is not None:
            stmt = stmt.where(items.c.id > last)
        rows = await db.all(stmt.order_by(items.c.id).limit(LIVE_PAGE))
        for row in rows:
            yield row["id"], dict(row["data"] or {})
        if len(rows) < LIVE_PAGE:
            return
        last = rows[-1]["id"]
