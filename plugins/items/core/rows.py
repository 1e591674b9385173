"""The live rows of a collection: the statements every reader and writer starts from.

``live_rows``/``live_in`` (the live items of a collection, its id rendered into the SQL for the
partial indexes), ``live_values`` (every live item's data, in pages) and ``fetch_row`` (one live
row the caller's row filter lets it see, for a write or a history route).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import bindparam, literal, or_, select

from kernel.db.meta import now_utc
from kernel.tenancy.scope import SiteDB
from plugins.items.core.grants import WriteGuard
from plugins.items.core.rowfilter import row_condition
from plugins.items.core.validation import is_item_id
from plugins.items.tables import items, pins

LIVE_PAGE = 500  # live_values' page


def live_rows(db: SiteDB, coll: Any, *columns: Any) -> Any:
    """``SELECT`` over the collection's live items in this site.

    The collection id is rendered into the SQL (it is a server-made UUID), not bound: the
    expression indexes of ``indexed`` fields are partial on ``collection_id = '<id>'``, and a
    PostgreSQL generic plan of a prepared statement cannot prove a bound parameter matches
    that predicate, so it would fall back to a scan.
    """
    stmt = db.select(items, *columns) if columns else db.select(items)
    return stmt.where(*live_in(literal(coll.id, literal_execute=True)))


def live_in(collection_id: Any) -> tuple[Any, Any]:
    """The conditions of a live item of the collection ``collection_id`` names (rendered into
    the SQL, ``literal_execute``, for the partial indexes: see ``live_rows``)."""
    return items.c.collection_id == collection_id, items.c.deleted_at.is_(None)



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


# fetch_row's statement when the caller may read every row: live_rows's, built once.
_LIVE_ROW = SiteDB.template(select(items).where(
    *live_in(bindparam("coll", literal_execute=True)), items.c.id == bindparam("item")), items)

# ``pinned``: whether a field of the row has an active pin, read with the row an update reads,
# so that the update's pin check (``history.events``) needs no query of its own when none has.
def _pinned(now: Any) -> Any:
    return select(pins.c.item_id).where(
        pins.c.site_id == items.c.site_id, pins.c.collection_id == items.c.collection_id, pins.c.item_id == items.c.id,
        or_(pins.c.expires_at.is_(None), pins.c.expires_at > now)).exists().label("pinned")


_LIVE_ROW_PINNED = SiteDB.template(select(items, _pinned(bindparam("now", type_=pins.c.expires_at.type))).where(
    *live_in(bindparam("coll", literal_execute=True)), items.c.id == bindparam("item")), items)
UNPINNED = "items.unpinned"  # uow.notes key (with the collection and item ids): the row read has no pin


async def fetch_row(db: Any, coll: Any, item_id: Any, decision: Any, dialect: str, snapshot: Any = None, *,
                    guard: WriteGuard | None = None, pinned: bool = False) -> Any:
    """The live row ``item_id`` of ``coll`` if ``decision``'s row filter lets the caller see it
    (``snapshot``: the site's schema, for conditions through relations); with ``guard``, also
    its pair columns, for ``writes.update_row(..., selected=True)``; with ``pinned``, also
    whether a field of it has an active pin (column ``pinned``)."""
    if not is_item_id(item_id):
        return None
    condition = row_condition(decision, dialect=dialect, table=items, coll=coll, snapshot=snapshot)
    columns = guard.columns(coll) if guard is not None else ()
    if condition is None and not columns:  # every row, no pairs: the statement built once
        if pinned:
            found = await db.run(_LIVE_ROW_PINNED, {"coll": coll.id, "item": item_id, "now": now_utc()})
        else:
            found = await db.run(_LIVE_ROW, {"coll": coll.id, "item": item_id})
        return found.mappings().first()
    stmt = live_rows(db, coll).where(items.c.id == item_id).add_columns(*columns)
    if pinned:
        stmt = stmt.add_columns(_pinned(now_utc()))
    return await db.one(stmt if condition is None else stmt.where(condition))
