"""Listing items: a parsed ``ListQuery`` in, one page (and the total) out.

``list_page(db, coll, query, read=..., dialect=...)`` is the whole read path of a list, used by
REST, GraphQL and delivery alike. The statement is built in ``select_rows``: live rows of the
collection, then ``apply_row_filter`` (the permission's conditions), then
``query_conditions`` (the list's own ``filter``: the query compiler's output goes there), then
the order and the page. Field masks and ``fields`` projection happen on the rows after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.sql.elements import ColumnElement

from kernel.access import Decision
from kernel.errors import ApiError
from kernel.tenancy.scope import SiteDB
from plugins.items.guard import readable, require_readable
from plugins.items.jsonpath import field_expr
from plugins.items.records import STRUCTURAL_COLUMNS, item_record, mask, project
from plugins.items.rowfilter import apply_row_filter
from plugins.items.tables import items

DEFAULT_LIMIT = 25
MAX_LIMIT = 200


@dataclass(frozen=True)
class SortKey:
    """One ``sort`` entry: a structural key or a top-level content field."""

    name: str
    descending: bool = False


@dataclass(frozen=True)
class ListQuery:
    """A list request, already parsed (``params.parse_list_query`` for HTTP; GraphQL builds one).

    ``fields``: top-level names to return (``None``: every readable one). ``with_total``:
    whether to count (``meta=none`` turns it off). The list ``filter`` joins here once the
    query compiler is integrated (see ``query_conditions``).
    """

    fields: tuple[str, ...] | None = None
    sort: tuple[SortKey, ...] = ()
    limit: int = DEFAULT_LIMIT
    offset: int = 0
    with_total: bool = True


@dataclass
class ListPage:
    """One page of items (masked and projected) with the paging facts."""

    items: list[dict[str, Any]] = field(default_factory=list)
    total: int | None = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0

    def meta(self) -> dict[str, int]:
        """``{ total?, limit, offset }``: ``total`` only when it was counted."""
        out = {"limit": self.limit, "offset": self.offset}
        if self.total is not None:
            out = {"total": self.total, **out}
        return out


def known_name(coll: Any, name: str) -> bool:
    return name in STRUCTURAL_COLUMNS or name in coll.fields


def check_query(coll: Any, query: ListQuery, read: Decision) -> None:
    """Names in ``sort`` and ``fields`` must exist (400) and be readable (403 field_policy)."""
    for key in query.sort:
        if not known_name(coll, key.name):
            raise ApiError.validation(f"Cannot sort on unknown field '{key.name[:80]}'", path=["query", "sort"])
    require_readable([k.name for k in query.sort], read, ["query", "sort"])
    for name in query.fields or ():
        if not known_name(coll, name):
            raise ApiError.validation(f"Unknown field '{name[:80]}'", path=["query", "fields"])
    require_readable(query.fields or (), read, ["query", "fields"])


def live_rows(db: SiteDB, coll: Any, *columns: Any) -> Any:
    """``SELECT`` over the collection's live items in this site."""
    stmt = db.select(items, *columns) if columns else db.select(items)
    return stmt.where(items.c.collection_id == coll.id, items.c.deleted_at.is_(None))


def query_conditions(query: ListQuery, coll: Any, dialect: str) -> list[ColumnElement[bool]]:
    """The list's own filter as SQL conditions. The integration point of the query compiler:
    it adds ``filter`` to ``ListQuery`` and returns its compiled condition here. Empty today."""
    return []


def order_by(coll: Any, sort: tuple[SortKey, ...], dialect: str) -> list[Any]:
    """ORDER BY terms: the requested keys, nulls last ascending (first descending) on both
    dialects, then ``id`` as the tiebreaker so pages never overlap."""
    terms = []
    for key in sort:
        if key.name == "id":
            continue
        expr = STRUCTURAL_COLUMNS.get(key.name)
        if expr is None:
            expr = field_expr(dialect, items, coll.fields[key.name])
        terms.append(expr.desc().nulls_first() if key.descending else expr.asc().nulls_last())
    id_desc = any(k.name == "id" and k.descending for k in sort)
    terms.append(items.c.id.desc() if id_desc else items.c.id.asc())
    return terms


def select_rows(db: SiteDB, coll: Any, query: ListQuery, read: Decision, dialect: str) -> Any:
    """The filtered statement (no order, no page): live rows, permission, list filter."""
    stmt = apply_row_filter(live_rows(db, coll), read, dialect=dialect, table=items, coll=coll)
    for condition in query_conditions(query, coll, dialect):
        stmt = stmt.where(condition)
    return stmt


def shape(row: Any, read: Decision, fields: tuple[str, ...] | None) -> dict[str, Any]:
    """A row as the caller sees it: masked by the read permission, projected by ``fields``."""
    return project(mask(item_record(row), readable(read)), fields)


async def list_page(db: SiteDB, coll: Any, query: ListQuery, *, read: Decision, dialect: str) -> ListPage:
    """One page of ``coll``'s items visible to ``read`` (checked with ``check_query`` first)."""
    check_query(coll, query, read)
    stmt = select_rows(db, coll, query, read, dialect)
    page = stmt.order_by(*order_by(coll, query.sort, dialect)).limit(query.limit).offset(query.offset)
    rows = await db.all(page)
    total = None
    if query.with_total:
        counted = select(func.count()).select_from(stmt.subquery())
        total = int(await db.scalar(db.scope(counted)) or 0)
    return ListPage([shape(r, read, query.fields) for r in rows], total, query.limit, query.offset)
