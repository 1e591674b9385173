"""A site's named records that consume the event log, each from its own checkpoint.

The change feed's subscriptions, store sync's pipelines and git's integrations share one shape:
a site-scoped table of records with an ``id``, a per-site cap, names that are unique in their
site, a 404 for an id the site does not hold, a listing in creation order, and (for those that
consume the event log) a kernel checkpoint named ``<group>:<id>`` that starts at the log's tail
and goes with the record. ``SubscriptionTable`` owns that shape; the plugin keeps its bodies,
its records and everything its feature adds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Table, func

from kernel.base.errors import ApiError


class SubscriptionTable:
    """The shared operations on ``table`` (site-scoped, with ``id`` and ``created_at``).

    ``plural`` names a site's records in the cap's message ("change-feed subscriptions"),
    ``missing`` is the 404 message, and ``group`` the kernel consumer group of the records'
    checkpoints (``None``: they have none)."""

    def __init__(
        self, table: Table, *, plural: str, missing: str, max_per_site: int, group: str | None = None
    ) -> None:
        self.table = table
        self.plural = plural
        self.missing = missing
        self.max_per_site = max_per_site
        self.group = group

    def not_found(self) -> ApiError:
        return ApiError(404, "RECORD_NOT_FOUND", self.missing)

    def checkpoint_name(self, record_id: str) -> str:
        """The kernel checkpoint of one record: ``<group>:<id>``."""
        return f"{self.group}:{record_id}"

    async def row(self, db: Any, record_id: str, *, lock: bool = False) -> Any:
        """The row of ``record_id`` in ``db``'s site (``FOR UPDATE`` with ``lock``); 404 without."""
        stmt = db.select(self.table).where(self.table.c.id == record_id)
        row = await db.one(stmt.with_for_update() if lock else stmt)
        if row is None:
            raise self.not_found()
        return row

    async def rows(self, db: Any) -> list[Any]:
        """Every row of ``db``'s site, oldest first."""
        return list(await db.all(db.select(self.table).order_by(self.table.c.created_at, self.table.c.id)))

    async def check_room(
        self, db: Any, unique: Mapping[str, Any], duplicate: str, *, other_than: str | None = None
    ) -> None:
        """409 ``duplicate`` when another row of the site has the ``unique`` column values; on a
        new record (``other_than`` None), 403 when the site already holds ``max_per_site``."""
        taken = db.select(self.table, self.table.c.id).where(
            *(self.table.c[column] == value for column, value in unique.items())
        )
        if other_than is not None:
            taken = taken.where(self.table.c.id != other_than)
        if await db.one(taken) is not None:
            raise ApiError.conflict(duplicate)
        if other_than is None:
            count = await db.scalar(db.select(self.table, func.count()))
            if int(count or 0) >= self.max_per_site:
                raise ApiError.forbidden(
                    f"A site has at most {self.max_per_site} {self.plural}", limit=self.max_per_site
                )

    async def start_at_tail(self, kernel: Any, uow: Any, record_id: str, tail: Any = None) -> None:
        """Place the record's checkpoint at ``tail`` (default: the log's head now), in ``uow``:
        it consumes what happens from now on."""
        if tail is None:
            tail = await kernel.events.head(uow.site_id)
        await kernel.events.set_checkpoint(uow.conn, uow.site_id, self.checkpoint_name(record_id), tail)

    async def forget(self, kernel: Any, uow: Any, record_id: str) -> None:
        """Remove the record's checkpoint, in ``uow`` (the record is being deleted)."""
        await kernel.events.remove_checkpoint(uow.conn, uow.site_id, self.checkpoint_name(record_id))
