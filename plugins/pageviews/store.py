"""Writing and reading the rollup tables (both dialects: ON CONFLICT on PostgreSQL and SQLite)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from sqlalchemy import and_, delete, select

from plugins.pageviews.tables import daily, salts, visitors

KEEP_VISITOR_DAYS = 1  # today and yesterday: late flushes of yesterday still deduplicate


def _insert(kernel: Any, table: Any) -> Any:
    if kernel.db.dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)


async def insert_ignore(kernel: Any, conn: Any, table: Any, rows: list[dict[str, Any]]) -> int:
    """Insert ``rows``, skipping those whose key exists; returns how many were new."""
    if not rows:
        return 0
    stmt = _insert(kernel, table).on_conflict_do_nothing().returning(table.c.site_id)
    # One statement for the batch (SQLAlchemy's "insertmanyvalues"); RETURNING names only the
    # rows that were inserted, so the count is what was new.
    return len((await conn.execute(stmt, rows)).all())


async def add_counts(kernel: Any, conn: Any, site_id: str, day: str, path: str, views: int,
                     seen: Iterable[str]) -> None:
    """Add ``views`` and the visitors of ``seen`` not yet counted that day to (day, path)."""
    new = await insert_ignore(kernel, conn, visitors, [
        {"site_id": site_id, "day": day, "path": path, "visitor": v} for v in sorted(set(seen))])
    stmt = _insert(kernel, daily).values(site_id=site_id, day=day, path=path, views=views, uniques=new)
    stmt = stmt.on_conflict_do_update(
        index_elements=[daily.c.site_id, daily.c.day, daily.c.path],
        set_={"views": daily.c.views + views, "uniques": daily.c.uniques + new})
    await conn.execute(stmt)


async def forget_old(conn: Any, site_id: str, today: dt.date) -> None:
    """Drop the visitor hashes and salts older than yesterday: old hashes can no longer be
    linked to a visitor, and what the stats need is in ``svc_pageview_daily``."""
    cutoff = (today - dt.timedelta(days=KEEP_VISITOR_DAYS)).isoformat()
    await conn.execute(delete(visitors).where(and_(visitors.c.site_id == site_id, visitors.c.day < cutoff)))
    await conn.execute(delete(salts).where(and_(salts.c.site_id == site_id, salts.c.day < cutoff)))


async def read_daily(kernel: Any, site_id: str, start: str, end: str, path: str) -> dict[str, tuple[int, int]]:
    """``{day: (views, uniques)}`` of (site, path) from ``start`` to ``end`` inclusive."""
    stmt = select(daily.c.day, daily.c.views, daily.c.uniques).where(
        daily.c.site_id == site_id, daily.c.path == path, daily.c.day >= start, daily.c.day <= end)
    async with kernel.db.connect() as conn:
        rows = (await conn.execute(stmt)).all()
        await conn.rollback()
    return {row[0]: (int(row[1]), int(row[2])) for row in rows}


async def paths_of_visitor(kernel: Any, site_id: str, day: str, visitor: str) -> list[str]:
    """The paths (not the site total) ``visitor`` was counted on that day, sorted."""
    stmt = select(visitors.c.path).where(visitors.c.site_id == site_id, visitors.c.day == day,
                                         visitors.c.visitor == visitor, visitors.c.path != "").order_by(visitors.c.path)
    async with kernel.db.connect() as conn:
        rows = (await conn.execute(stmt)).scalars().all()
        await conn.rollback()
    return list(rows)
