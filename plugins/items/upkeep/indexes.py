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
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any

from sqlalchemy import Column, DateTime, Index, MetaData, String, Table, text
from sqlalchemy.schema import CreateIndex

from kernel.db.meta import json_type
from plugins.items.query.jsonpath import FIELD_KEY, field_expr
from plugins.items.query.sqlexpr import ordered
from plugins.items.upkeep import pg_statistics
from plugins.schema.api import is_indexed, load_schema

log = logging.getLogger("svc.items")
COLLECTION_ID = re.compile(r"^[0-9a-f-]{1,36}$")
MAX_NAME = 63  # PostgreSQL's identifier limit


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
                await ensure_index(kernel, coll.id, fdef)
                await pg_statistics.ensure(kernel, name, fdef.type)
            if event == "fields.delete":
                await pg_statistics.drop_unused(kernel, name)
        except Exception:  # noqa: BLE001 - the field works without its index; say why it has none
            log.exception("could not maintain the index of %s.%s", coll.name, name)

    return handler
