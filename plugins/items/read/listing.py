"""Listing items: a ``ListQuery`` in, one page (with its total) or the aggregate rows out.

The statements come from a ``readplan.ReadPlan`` (built once per schema version, permissions
and query, then cached): live rows of the collection, the permission's row condition
(``compile_row_filter``), the list ``filter`` (``compile_filter``), the order (``compile_sort``),
the page; the count, when asked, runs the same conditions; aggregates run
``compile_aggregate``'s plan. Items are shaped from the columns the projection selected, then
their nested relations are read (``nested``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernel.policy.access import Decision
from kernel.tenancy.scope import SiteDB
from plugins.items.core.guard import readable
from plugins.items.core.records import item_record, mask, project
from plugins.items.query import ListQuery
from plugins.items.read.nested import attach, shape_rows

DEFAULT_LIMIT = 25
MAX_LIMIT = 200


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


# An item plan's statement is built once per plan and bound to the id per request (SQLAlchemy
# memoizes a statement's cache key: a statement built again per request paid for it each time).
ITEM_ARG = "arg_item"


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
