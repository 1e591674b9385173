"""Expression indexes for ``indexed`` and ``unique`` fields, kept in step with the schema.

An index covers ``(site_id, collection_id, <field expression>)`` over the collection's live rows, where the
expression is ``jsonpath.field_expr`` (so the compiler's and the list's comparisons use it);
a ``unique`` field's index is UNIQUE, which makes the database refuse a duplicate that two
concurrent writers might both have checked for. Collection ids are unique across sites, so
one index serves one collection of one site.

Indexes are created and dropped by bus *actions* (after the schema change commits), once,
on the worker where the change happened (``ctx.remote`` is skipped). A failure is logged:
the field works without its index, only slower. ``CREATE INDEX`` locks writes to the items
table on PostgreSQL while it builds; for very large tables build it ``CONCURRENTLY`` by hand
first (``index_ddl`` prints the statement).

**Small collections, many sites.** Every index is one more index on the one ``svc_items``
table, which every insert checks (each partial index's predicate) and every plan on the table
weighs, so 10,000 sites of five small collections made some 150,000 of them: writes and plans
slow down with the number of sites, not with the data (docs/performance.md, "Scale: 10,000
sites"). With ``SVC_ITEMS_INDEX_MIN_ITEMS`` set to ``N`` > 0, a non-unique field's index is
made only once its collection holds ``N`` live items (the default is 1,000): the field action
skips it below that. ``ensure_grown`` makes, at startup, the missing indexes of every collection
that reached it, in one query over the item counts. While a process runs, ``GrowthWatch`` follows
the items it creates: each collection it writes to is counted (one query, in the background)
every ``N // CHECK_PARTS`` creates (fewer when the collection is closer to ``N``), so a
collection crossing ``N`` gets its indexes within that many
further creates of each process writing to it, however the creates come (one at a time, or 10,000
items seeded in arrays of 200), and a site's writes only ever count and index that site's
collections. Below ``N`` items the ``(site_id, collection_id)`` index already narrows a read to
the collection. A ``unique`` field's index is always made at once: it backs the uniqueness check.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections import OrderedDict
from typing import Any

from sqlalchemy import Column, DateTime, Index, MetaData, String, Table, bindparam, func, select, text
from sqlalchemy.schema import CreateIndex

from kernel.db.meta import json_type
from plugins.items.core import write_triggered
from plugins.items.query.sql.jsonpath import FIELD_KEY, field_expr
from plugins.items.query.sql.sqlexpr import ordered
from plugins.items.tables import item_counts
from plugins.items.upkeep import pg_statistics
from plugins.schema.api import get_schema, is_indexed, load_schema

log = logging.getLogger("svc.items")
COLLECTION_ID = re.compile(r"^[0-9a-f-]{1,36}$")
MAX_NAME = 63  # PostgreSQL's identifier limit
GROWN_STATE = "items.grown_indexes"
CHECK_PARTS = 10  # a watched collection is counted again every threshold // CHECK_PARTS creates
MAX_WATCHED = 10_000  # collections a process remembers the distance of (least recently written forgotten)


def index_name(collection_id: str, field: str) -> str:
    """``ix_items_<10 hex of the collection id's hash>_<field>`` (hashed too when too long)."""
    short = hashlib.sha1(collection_id.encode()).hexdigest()[:10]
    name = f"ix_items_{short}_{field}"
    if len(name) > MAX_NAME or not FIELD_KEY.match(field):
        name = f"ix_items_{short}_{field[:30]}_{hashlib.sha1(field.encode()).hexdigest()[:8]}"
    return name


def _shadow_table() -> Table:
    # A private Table so the index never attaches to the shared metadata's svc_items.
    return Table("svc_items", MetaData(), Column("site_id", String(63)), Column("collection_id", String(36)),
                 Column("data", json_type), Column("deleted_at", DateTime(timezone=True)))


def index_for(dialect: str, collection_id: str, fdef: Any) -> Index:
    """The index object of one field (not created).

    The index is partial on *this collection's* live rows: its expression casts (numeric
    fields) must never be evaluated on another collection's rows, where the same key may hold
    a value of another type (PostgreSQL would refuse that row's insert), and a UNIQUE index
    must only compare values of this collection. The collection id is a server-made UUID, so
    it is safe as a literal in the predicate.
    """
    table = _shadow_table()
    if not COLLECTION_ID.match(collection_id):
        raise ValueError(f"not a collection id: {collection_id!r}")
    where = text(f"collection_id = '{collection_id}' AND deleted_at IS NULL")
    # Stored in the order ``sort`` reads (NULL first), so an index scan serves it either way.
    value = ordered(dialect, field_expr(dialect, table, fdef))
    return Index(index_name(collection_id, fdef.name), table.c.site_id, table.c.collection_id,
                 value, unique=fdef.unique, postgresql_where=where, sqlite_where=where)


def index_ddl(dialect_obj: Any, collection_id: str, fdef: Any) -> str:
    """The ``CREATE INDEX IF NOT EXISTS`` statement, for operators and tests."""
    return str(CreateIndex(index_for(dialect_obj.name, collection_id, fdef), if_not_exists=True)
               .compile(dialect=dialect_obj))


async def ensure_index(kernel: Any, collection_id: str, fdef: Any) -> None:
    """Create the field's index if it does not exist."""
    async with kernel.db.begin() as conn:
        ddl = CreateIndex(index_for(kernel.db.dialect, collection_id, fdef), if_not_exists=True)
        await conn.execute(ddl)


async def drop_index(kernel: Any, collection_id: str, field: str) -> None:
    """Drop the field's index if it exists (the name is ours: hex and a checked field name)."""
    async with kernel.db.begin() as conn:
        await conn.execute(text(f'DROP INDEX IF EXISTS "{index_name(collection_id, field)}"'))


def _wants_index(record: dict[str, Any] | None) -> bool:
    return record is not None and is_indexed(record.get("type"), record.get("options"))


def _index_shape(record: dict[str, Any] | None) -> tuple[Any, ...]:
    options = (record or {}).get("options") or {}
    return (_wants_index(record), (record or {}).get("type"), bool(options.get("unique")))


def on_field_change(kernel: Any) -> Any:
    """The action handler for ``fields.create|update|delete``: create, rebuild or drop the index
    (and, on PostgreSQL, the field name's expression statistics: pg_statistics.py)."""

    async def handler(event: str, payload: Any, ctx: Any) -> None:
        if ctx.remote or not isinstance(payload, dict) or not ctx.site_id:
            return
        before, after = payload.get("before"), payload.get("after")
        if _index_shape(before) == _index_shape(after) and event != "fields.delete":
            return
        if not (_wants_index(before) or _wants_index(after)):
            return
        # After commit: the cached snapshot (``schema.changed`` ran first and dropped the old
        # one), so the fields of one import read the schema once, not once each.
        snap = await get_schema(kernel, ctx.site_id)
        coll = snap.collection(payload.get("collection", ""))
        if coll is None:
            return
        name = payload.get("field", "")
        try:
            if _wants_index(before):
                await drop_index(kernel, coll.id, name)
            fdef = coll.field(name)
            if _wants_index(after) and fdef is not None:
                if fdef.unique or await _big_enough(kernel, ctx.site_id, coll.id):
                    await ensure_index(kernel, coll.id, fdef)
                await pg_statistics.ensure(kernel, name, fdef.type)
            if event == "fields.delete":
                await pg_statistics.drop_unused(kernel, name)
        except Exception:  # noqa: BLE001 - the field works without its index; say why it has none
            log.exception("could not maintain the index of %s.%s", coll.name, name)

    return handler


def min_items(kernel: Any) -> int:
    """``SVC_ITEMS_INDEX_MIN_ITEMS``: live items a collection holds before its non-unique field
    indexes are made (0: with the field)."""
    return int(kernel.settings.get("items_index_min_items"))


def _count_stmt() -> Any:
    return select(item_counts.c.site_id, item_counts.c.collection_id).group_by(
        item_counts.c.site_id, item_counts.c.collection_id)


async def _big_enough(kernel: Any, site_id: str, collection_id: str) -> bool:
    threshold = min_items(kernel)
    if threshold <= 0:
        return True
    async with kernel.db.connect() as conn:
        total = (await conn.execute(select(func.coalesce(func.sum(item_counts.c.n), 0)).where(
            item_counts.c.site_id == site_id, item_counts.c.collection_id == collection_id))).scalar_one()
        await conn.rollback()
    return int(total) >= threshold


async def existing_indexes(conn: Any, names: list[str] | None = None) -> set[str]:
    """The names of the items table's indexes (only those among ``names`` when given)."""
    if conn.dialect.name == "postgresql":
        stmt = text("SELECT indexname FROM pg_indexes WHERE tablename = 'svc_items'"
                    + (" AND indexname IN :names" if names is not None else ""))
    else:
        stmt = text("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'svc_items'"
                    + (" AND name IN :names" if names is not None else ""))
    if names is not None:
        if not names:
            return set()
        stmt = stmt.bindparams(bindparam("names", value=names, expanding=True))
    return {name for (name,) in await conn.execute(stmt)}


async def ensure_grown(kernel: Any) -> int:
    """Make the missing field indexes of every collection that holds ``SVC_ITEMS_INDEX_MIN_ITEMS``
    live items or more (one query over the item counts for all sites, one for the index names;
    a schema read only for the sites with an index to make). Returns the indexes made."""
    threshold = min_items(kernel)
    if threshold <= 0:
        return 0
    async with kernel.db.connect() as conn:
        big = list(await conn.execute(_count_stmt().having(func.sum(item_counts.c.n) >= threshold)))
        present = await existing_indexes(conn) if big else set()
        await conn.rollback()
    made = 0
    for site_id in sorted({site_id for site_id, _ in big}):
        wanted = {collection_id for s, collection_id in big if s == site_id}
        async with kernel.db.connect() as conn:
            snap = await load_schema(conn, site_id)
            await conn.rollback()
        for coll in snap.collections.values():
            if coll.id not in wanted:
                continue
            for fdef in coll.fields.values():
                if is_indexed(fdef.type, fdef.options) and index_name(coll.id, fdef.name) not in present:
                    await ensure_index(kernel, coll.id, fdef)
                    made += 1
    if made:
        log.info("made %d field indexes of collections that reached %d items", made, threshold)
    return made


async def grow(kernel: Any, site_id: str, names: set[str]) -> dict[str, int]:
    """Count the live items of ``site_id``'s collections ``names`` (one query) and make the missing
    field indexes of those that hold ``SVC_ITEMS_INDEX_MIN_ITEMS`` or more; returns each found
    collection's count."""
    threshold = min_items(kernel)
    snap = await get_schema(kernel, site_id)
    colls = {coll.id: coll for name in names if (coll := snap.collection(name)) is not None}
    if not colls:
        return {}
    async with kernel.db.connect() as conn:
        counted = dict((await conn.execute(
            select(item_counts.c.collection_id, func.sum(item_counts.c.n)).where(
                item_counts.c.site_id == site_id, item_counts.c.collection_id.in_(list(colls)))
            .group_by(item_counts.c.collection_id))).all())
        grown = [coll for coll_id, coll in colls.items() if int(counted.get(coll_id) or 0) >= threshold]
        wanted = {index_name(coll.id, f.name): (coll, f) for coll in grown for f in coll.fields.values()
                  if is_indexed(f.type, f.options)}
        present = await existing_indexes(conn, sorted(wanted)) if wanted else set()
        await conn.rollback()
    for name, (coll, fdef) in wanted.items():
        if name not in present:
            await ensure_index(kernel, coll.id, fdef)
            log.info("made index %s: collection %s of site %s reached %d items", name, coll.name, site_id, threshold)
    return {coll.name: int(counted.get(coll_id) or 0) for coll_id, coll in colls.items()}


class GrowthWatch:
    """Follows the items this process creates and makes a collection's field indexes when it
    reaches the threshold (``grow``), in one background task that never slows a write.

    ``left`` holds, per (site, collection name), the creates before the collection is counted
    again: ``threshold // CHECK_PARTS`` when unknown (not written yet by this process, or
    forgotten: a collection already grown when the process started was handled by the startup
    pass, and one written only a few times is never counted); below the threshold, the distance
    to it, at most that step (other processes create items too); once grown,
    ``threshold`` (a collection made again under the same name, or an index that failed, is
    caught then). Counts happen in the background; creates that arrive meanwhile are queued in
    ``due``, and the task runs until nothing is due, so a crossing is never missed.
    """

    def __init__(self, kernel: Any, threshold: int) -> None:
        self.kernel, self.threshold = kernel, threshold
        self.step = max(1, threshold // CHECK_PARTS)
        self.left: OrderedDict[tuple[str, str], int] = OrderedDict()
        self.due: set[tuple[str, str]] = set()
        self.task: asyncio.Task[None] | None = None

    def count(self, event: str, payload: Any, ctx: Any) -> None:
        """The action handler of ``items.create``: one committed create of this process."""
        if ctx.remote or not isinstance(payload, dict):
            return
        site_id, collection = payload.get("siteId"), payload.get("collection")
        if not isinstance(site_id, str) or not isinstance(collection, str):
            return
        key = (site_id, collection)
        left = self.left.pop(key, self.step) - 1
        if left > 0:
            self.left[key] = left
            return
        self.due.add(key)
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while self.due:
            due, self.due = self.due, set()
            for site_id in sorted({site for site, _ in due}):
                names = {name for site, name in due if site == site_id}
                try:
                    counts = await grow(self.kernel, site_id, names)
                except Exception:  # noqa: BLE001 - the collection works without its indexes, only slower
                    log.exception("making the indexes of grown collections of site %s failed", site_id)
                    counts = {}
                for name in names:
                    self._remember((site_id, name), counts.get(name))

    def _remember(self, key: tuple[str, str], count: int | None) -> None:
        if count is None:  # gone, or the count failed: count again at its next create
            return
        self.left[key] = self.threshold if count >= self.threshold else min(self.threshold - count, self.step)
        while len(self.left) > MAX_WATCHED:
            self.left.popitem(last=False)

    async def settle(self) -> None:
        """Wait for the counts and indexes of the creates seen so far (tests, shutdown)."""
        while self.task is not None and not self.task.done():
            await asyncio.shield(self.task)

    async def stop(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


def register(bus: Any, kernel: Any) -> None:
    """With ``SVC_ITEMS_INDEX_MIN_ITEMS`` > 0, follow the items this process creates
    (the ``register_event_handlers`` hook)."""
    threshold = min_items(kernel)
    if threshold > 0:
        watch = GrowthWatch(kernel, threshold)
        kernel.state[GROWN_STATE] = watch
        bus.on_action("items.create", watch.count)


def start(kernel: Any) -> None:
    """Look once at startup, over every site, in the background (``ensure_grown``)."""
    if kernel.state.get(GROWN_STATE) is not None:
        task = asyncio.get_running_loop().create_task(write_triggered.in_startup_turn(kernel, _startup))
        kernel.state[GROWN_STATE + ".startup"] = task


async def _startup(kernel: Any) -> None:
    try:
        await ensure_grown(kernel)
    except Exception:  # noqa: BLE001 - maintenance costs speed when it fails, never correctness
        log.exception("making the indexes of grown collections failed")


async def settle(kernel: Any) -> None:
    """Wait until the startup pass and the counts of the creates seen so far are done."""
    startup: asyncio.Task[None] | None = kernel.state.get(GROWN_STATE + ".startup")
    if startup is not None:
        await asyncio.shield(startup)
    watch: GrowthWatch | None = kernel.state.get(GROWN_STATE)
    if watch is not None:
        await watch.settle()


async def stop(kernel: Any) -> None:
    startup: asyncio.Task[None] | None = kernel.state.get(GROWN_STATE + ".startup")
    if startup is not None and not startup.done():
        startup.cancel()
        await asyncio.gather(startup, return_exceptions=True)
    watch: GrowthWatch | None = kernel.state.get(GROWN_STATE)
    if watch is not None:
        await watch.stop()
