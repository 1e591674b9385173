"""Grouped counts on PostgreSQL without reading every item: counts kept per value by triggers.

``?aggregate[count]=*&groupBy=<field>`` with no filter and no row condition ("how many of each")
makes PostgreSQL evaluate ``data ->> 'field'`` on every live item of the collection: an
expression index cannot be read index-only there, so it is a scan, about 1 µs a row (10 ms at
10,000 items, 1 s at 1,000,000). Directus groups a real column. So, as ``counts.py`` keeps
each collection's number of items, this keeps each value's, for the (collection, field) pairs
that are asked for (docs/decisions/items-group-counts.md has the designs measured):

- ``svc_item_group_fields`` names the pairs; statement triggers on ``svc_items`` (migration
  ``items_0006_group_counts``) append ``(value, ±n)`` delta rows to ``svc_item_group_counts``
  for every statement's live rows, in the writing transaction, so a value's sum is exact in every
  snapshot.
- The first such query of a pair answers by the scan and registers the pair in the background
  (``Registry.is_ready``). Registration never blocks writers: it inserts the pair (from then on
  the triggers count), waits until every transaction of this database that could have written
  before the triggers saw the pair has ended, and then, in one statement (one snapshot), stores each value's
  scanned count minus the deltas that snapshot already holds. The pair is then ``ready``.
- Only text, boolean and date/time fields (grouped by the text ``data ->> 'field'`` itself;
  numeric fields group by a numeric cast, "1" and "1.0" being one group) and at most
  ``MAX_FIELDS_PER_COLLECTION`` pairs per collection: each pair costs every write of its
  collection a delta row.
- Deltas are folded like the item counts' (``sweep``, every ``COMPACT_EVERY`` item writes of this
  process and at startup), which also drops the rows of pairs that are gone.

SQLite needs none of it: its expression index covers the grouped count (1 ms at 10,000 items).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import Any

from sqlalchemy import delete, exists, func, insert, literal, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from plugins.items.core import write_triggered
from plugins.items.core.write_triggered import WriteTriggered
from plugins.items.query import ListQuery
from plugins.items.query.resolve import STRUCTURAL, TYPE_CATEGORY
from plugins.items.query.sql import sqlexpr as sx
from plugins.items.tables import group_counts, group_fields
from plugins.schema.api import CollectionDef

log = logging.getLogger("svc.items")

STATE = "items.group_counts"
SWEEP_STATE = "items.group_counts.sweep"
KEPT_CATEGORIES = frozenset({"text", "boolean", "temporal", "instant"})
MAX_FIELDS_PER_COLLECTION = 8
COMPACT_EVERY = 200  # item writes of this process between sweeps
MAX_DELTAS = 64  # rows a pair may hold beyond one per value before a sweep folds it
RECHECK_SECONDS = 10.0  # how often a process asks the database whether a pair it lacks is ready
SETTLE_SECONDS = 30.0  # how long registration waits for older transactions before trying later
READY_ENTRIES = 10_000  # ready pairs a process remembers (oldest out)

Pair = tuple[str, str, str]  # (site_id, collection_id, field)


def kept_field(query: ListQuery, coll: CollectionDef, where: list[Any], dialect: str) -> str | None:
    """The field whose kept counts can answer ``query``, or ``None``: PostgreSQL, ``count`` of
    ``*`` alone grouped by one top-level field of a kept category, no filter, no row condition."""
    if dialect != sx.PG or where or len(query.group_by) != 1 or query.aggregate != {"count": ["*"]}:
        return None
    name = query.group_by[0]
    field = coll.field(name)
    if name in STRUCTURAL or field is None or TYPE_CATEGORY.get(field.type) not in KEPT_CATEGORIES:
        return None
    return name


def kept_statement(db: Any, coll: CollectionDef, name: str, query: ListQuery) -> Any:
    """The page of groups from the kept counts, in the labels and order of the scan's plan
    (``g0``, ``a0``; by value, NULL first)."""
    value = group_counts.c.value
    total = func.sum(group_counts.c.n)
    return (db.select(group_counts, value.label("g0"), total.label("a0"))
            .where(group_counts.c.collection_id == literal(coll.id, literal_execute=True),
                   group_counts.c.field == literal(name, literal_execute=True))
            .group_by(value).having(total != 0).order_by(sx.ordered(sx.PG, value))
            .limit(query.limit).offset(query.offset))


class Registry:
    """This process's view of the pairs: the ready ones (remembered), when each missing one was
    last looked up, and the registrations it is running."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.ready: OrderedDict[Pair, None] = OrderedDict()
        self.checked: dict[Pair, float] = {}
        self.tasks: dict[Pair, asyncio.Task[None]] = {}

    async def is_ready(self, pair: Pair) -> bool:
        """Whether the kept counts of ``pair`` answer; when not, look it up at most every
        ``RECHECK_SECONDS`` and start its registration when it is not there."""
        if pair in self.ready:
            self.ready.move_to_end(pair)
            return True
        now = time.monotonic()
        if now - self.checked.get(pair, -RECHECK_SECONDS) < RECHECK_SECONDS:
            return False
        if len(self.checked) >= READY_ENTRIES:
            self.checked.clear()
        self.checked[pair] = now
        site_id, collection_id, field = pair
        async with self.kernel.db.connect() as conn:
            state = await conn.scalar(select(group_fields.c.ready).where(
                group_fields.c.site_id == site_id, group_fields.c.collection_id == collection_id,
                group_fields.c.field == field))
        if state:
            self._remember(pair)
            return True
        if pair not in self.tasks:  # absent, or left unready by a registration that gave up
            task = asyncio.get_running_loop().create_task(self._register(pair))
            self.tasks[pair] = task
            task.add_done_callback(lambda _t: self.tasks.pop(pair, None))
        return False

    def _remember(self, pair: Pair) -> None:
        self.ready[pair] = None
        self.checked.pop(pair, None)
        while len(self.ready) > READY_ENTRIES:
            self.ready.popitem(last=False)

    async def _register(self, pair: Pair) -> None:
        try:
            if await register(self.kernel, *pair):
                self._remember(pair)
        except Exception:  # noqa: BLE001 - the scan still answers; a later query tries again
            log.exception("registering the kept group counts of %s failed", pair)

    async def stop(self) -> None:
        for task in list(self.tasks.values()):
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)


async def register(kernel: Any, site_id: str, collection_id: str, field: str) -> bool:
    """Make ``(site_id, collection_id, field)`` a counted pair and fill its counts; ``True`` once
    ready. ``False`` when the collection has ``MAX_FIELDS_PER_COLLECTION`` pairs already, or
    older transactions outlast ``SETTLE_SECONDS`` (the pair stays, unready, for a later try)."""
    key = (group_fields.c.site_id == site_id, group_fields.c.collection_id == collection_id)
    async with kernel.db.begin() as conn:
        taken = await conn.scalar(select(func.count()).select_from(group_fields).where(*key))
        if taken >= MAX_FIELDS_PER_COLLECTION:
            return False
        await conn.execute(pg_insert(group_fields).values(
            site_id=site_id, collection_id=collection_id, field=field, ready=False).on_conflict_do_nothing())
    # From here every statement's trigger counts the pair. A transaction of this database that
    # holds a transaction id now may have written before the triggers saw it: wait for those.
    # (One that takes its id later writes after, and its statement trigger counts what it wrote.)
    writers = text("SELECT pid, backend_xid::text FROM pg_stat_activity WHERE datname = current_database() "
                   "AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()")
    deadline = time.monotonic() + SETTLE_SECONDS
    async with kernel.db.connect() as conn:
        older = set(await conn.execute(writers))
    while older:
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
        async with kernel.db.connect() as conn:
            older &= set(await conn.execute(writers))
    async with kernel.db.begin() as conn:
        state = await conn.scalar(select(group_fields.c.ready).where(*key, group_fields.c.field == field)
                                  .with_for_update())
        if state is None:  # the collection or site went meanwhile
            return False
        if state:
            return True
        await conn.execute(text(
            "INSERT INTO svc_item_group_counts (site_id, collection_id, field, value, n) "
            "SELECT :site, :coll, :field, value, sum(n) FROM ("
            "  SELECT data ->> :field AS value, count(*) AS n FROM svc_items WHERE site_id = :site "
            "  AND collection_id = :coll AND deleted_at IS NULL GROUP BY 1"
            "  UNION ALL SELECT value, -sum(n) FROM svc_item_group_counts WHERE site_id = :site "
            "  AND collection_id = :coll AND field = :field GROUP BY value) AS x "
            "GROUP BY value HAVING sum(n) <> 0"), {"site": site_id, "coll": collection_id, "field": field})
        await conn.execute(update(group_fields).where(*key, group_fields.c.field == field).values(ready=True))
    return True


async def compact(kernel: Any, site_id: str, collection_id: str, field: str) -> None:
    """Fold a pair's delta rows into one per value (dropping values at zero). Concurrent writers
    only add rows, so the sums never change."""
    where = (group_counts.c.site_id == site_id, group_counts.c.collection_id == collection_id,
             group_counts.c.field == field)
    async with kernel.db.begin() as conn:
        deleted = await conn.execute(delete(group_counts).where(*where)
                                     .returning(group_counts.c.value, group_counts.c.n))
        sums: dict[str | None, int] = {}
        for value, n in deleted:
            sums[value] = sums.get(value, 0) + n
        rows = [{"site_id": site_id, "collection_id": collection_id, "field": field, "value": v, "n": n}
                for v, n in sums.items() if n]
        if rows:
            await conn.execute(insert(group_counts), rows)


async def sweep(kernel: Any) -> int:
    """Drop the counts of pairs that are gone (their collection deleted) and fold every pair
    with ``MAX_DELTAS`` rows more than values; returns how many pairs were folded."""
    c = group_counts.c
    async with kernel.db.begin() as conn:
        await conn.execute(delete(group_counts).where(~exists().where(
            group_fields.c.site_id == c.site_id, group_fields.c.collection_id == c.collection_id,
            group_fields.c.field == c.field)))
    crowded_stmt = (select(c.site_id, c.collection_id, c.field)
                    .group_by(c.site_id, c.collection_id, c.field)
                    .having(func.count() - func.count(func.distinct(c.value)) > MAX_DELTAS))
    async with kernel.db.connect() as conn:
        crowded = list(await conn.execute(crowded_stmt))
    for site_id, collection_id, field in crowded:
        await compact(kernel, site_id, collection_id, field)
    return len(crowded)


async def forget_site(conn: Any, site_id: str) -> None:
    """A deleted site's pairs and counts (``site_deleted``, after its items went)."""
    for table in (group_counts, group_fields):
        await conn.execute(delete(table).where(table.c.site_id == site_id))


async def _sweep_job(kernel: Any) -> None:
    await sweep(kernel)


def registry(kernel: Any) -> Registry | None:
    return kernel.state.get(STATE)


def register_handlers(bus: Any, kernel: Any) -> None:
    """PostgreSQL only: the registry, and the sweep after item writes (``register_event_handlers``)."""
    if kernel.db.dialect == "postgresql":
        kernel.state[STATE] = Registry(kernel)
        write_triggered.install(bus, kernel, SWEEP_STATE, WriteTriggered(
            kernel, _sweep_job, COMPACT_EVERY, "folding the kept group counts failed"))


def start(kernel: Any) -> None:
    write_triggered.start(kernel, SWEEP_STATE)


async def stop(kernel: Any) -> None:
    found = registry(kernel)
    if found is not None:
        await found.stop()
    await write_triggered.stop(kernel, SWEEP_STATE)
