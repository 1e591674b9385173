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
made only once its collection holds ``N`` live items: the field action skips it below that,
and ``ensure_grown`` (at startup and every ``GROWN_EVERY`` item writes of a process) makes the
missing indexes of the collections that reached it, in one query over the item counts. Below
``N`` items the ``(site_id, collection_id)`` index already narrows a read to the collection.
A ``unique`` field's index is always made at once: it backs the uniqueness check.
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any

from sqlalchemy import Column, DateTime, Index, MetaData, String, Table, func, select, text
from sqlalchemy.schema import CreateIndex

from kernel.db.meta import json_type
from plugins.items.query.jsonpath import FIELD_KEY, field_expr
from plugins.items.query.sqlexpr import ordered
from plugins.items.tables import item_counts
from plugins.items.upkeep import pg_statistics, write_triggered
from plugins.items.upkeep.write_triggered import WriteTriggered
from plugins.schema.api import is_indexed, load_schema

log = logging.getLogger("svc.items")
COLLECTION_ID = re.compile(r"^[0-9a-f-]{1,36}$")
MAX_NAME = 63  # PostgreSQL's identifier limit
GROWN_STATE = "items.grown_indexes"
GROWN_EVERY = 200  # item writes of a process between two ensure_grown sweeps


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
        async with kernel.db.connect() as conn:
            snap = await load_schema(conn, ctx.site_id)
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


async def existing_indexes(conn: Any) -> set[str]:
    """The names of the items table's indexes."""
    if conn.dialect.name == "postgresql":
        rows = await conn.execute(text("SELECT indexname FROM pg_indexes WHERE tablename = 'svc_items'"))
    else:
        rows = await conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'svc_items'"))
    return {name for (name,) in rows}


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


async def _grown_job(kernel: Any) -> None:
    await ensure_grown(kernel)


def register(bus: Any, kernel: Any) -> None:
    """With ``SVC_ITEMS_INDEX_MIN_ITEMS`` set, look for grown collections every ``GROWN_EVERY``
    item writes of this process (the ``register_event_handlers`` hook)."""
    if min_items(kernel) > 0:
        write_triggered.install(bus, kernel, GROWN_STATE, WriteTriggered(
            kernel, _grown_job, GROWN_EVERY, "making the indexes of grown collections failed"))


def start(kernel: Any) -> None:
    """Look once at startup, in the background."""
    write_triggered.start(kernel, GROWN_STATE)


async def stop(kernel: Any) -> None:
    await write_triggered.stop(kernel, GROWN_STATE)
