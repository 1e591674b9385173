"""The site-scoped query helper: the one way plugin code reaches site data.

Every statement it builds filters on ``site_id``; every row it inserts carries it. Statements
it did not build are refused, so a forgotten ``WHERE site_id = ...`` cannot reach the
database through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Delete, Select, Table, Update, delete, insert, select, update
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection

_SCOPE_OPTION = "svc_site_scope"


class TenancyError(RuntimeError):
    """A statement would touch site data without being scoped to a site."""


def _site_col(table: Table) -> Any:
    if "site_id" not in table.c:
        raise TenancyError(f"table {table.name!r} has no site_id column")
    return table.c.site_id


class SiteDB:
    """Queries bound to one site and one connection (or transaction)."""

    def __init__(self, site_id: str, conn: AsyncConnection) -> None:
        self.site_id = site_id
        self.conn = conn

    # ------------------------------------------------------------------ building

    def select(self, table: Table, *columns: Any) -> Select[Any]:
        """``SELECT`` (all columns, or ``columns``) from ``table`` where ``site_id`` is this site."""
        stmt = select(*columns) if columns else select(table)
        if columns:
            stmt = stmt.select_from(table)
        return self.scope(stmt, table)

    def scope(self, stmt: Any, *tables: Table) -> Any:
        """Add this site's filter for each of ``tables`` (for joins) and mark ``stmt`` scoped."""
        for table in tables:
            stmt = stmt.where(_site_col(table) == self.site_id)
        return stmt.execution_options(**{_SCOPE_OPTION: self.site_id})

    def update(self, table: Table) -> Update:
        return self.scope(update(table), table)

    def delete(self, table: Table) -> Delete:
        return self.scope(delete(table), table)

    # ------------------------------------------------------------------ running

    def _check(self, stmt: Any) -> None:
        if stmt.get_execution_options().get(_SCOPE_OPTION) != self.site_id:
            raise TenancyError("statement was not built by this site's SiteDB")

    async def execute(self, stmt: Any) -> Any:
        self._check(stmt)
        return await self.conn.execute(stmt)

    async def all(self, stmt: Any) -> Sequence[RowMapping]:
        return (await self.execute(stmt)).mappings().all()

    async def one(self, stmt: Any) -> RowMapping | None:
        return (await self.execute(stmt)).mappings().first()

    async def scalar(self, stmt: Any) -> Any:
        return (await self.execute(stmt)).scalar()

    async def insert(self, table: Table, values: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> None:
        """Insert one row or many, each stamped with this site's id (a given site_id must match)."""
        _site_col(table)
        rows = [values] if isinstance(values, Mapping) else list(values)
        if not rows:
            return
        stamped = []
        for row in rows:
            if row.get("site_id", self.site_id) != self.site_id:
                raise TenancyError("refusing to insert a row of another site")
            stamped.append({**row, "site_id": self.site_id})
        await self.conn.execute(insert(table), stamped)
