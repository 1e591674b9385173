"""The search index ``svc_search``: one row per (site, collection, item, searchable field).

A row holds the field's distinct folded words (``body``, from ``search_text.index_text``), a
length norm for ranking, and ``scope``, a token naming (site, collection id, field). On SQLite
the rows feed an external-content FTS5 table, ``svc_search_fts(scope, body)``, through
triggers (migration ``items_0002_search``); on PostgreSQL a stored generated ``tsv`` column
(``array_to_tsvector`` of the words, GIN-indexed) is matched. Either way this module writes
only the ordinary table, through ``SiteDB`` (``upsert`` stamps the site's id on every row the
way ``SiteDB.insert`` does), so every write is site-scoped by construction.

Rows mirror ``svc_items``: written in the item's transaction by the bus filters
(``search_events``), removed with the item, and rebuilt per field on schema changes.
``reindex_collection`` and ``index_missing`` rebuild from the items themselves (maintenance,
and items written before the index existed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from sqlalchemy import Column, Float, String, Table, Text, bindparam, func, select
from sqlalchemy.dialects.postgresql import ARRAY

from kernel.db.meta import dialect_insert, metadata, site_column
from kernel.tenancy.scope import SiteDB
from plugins.items.core.rows import live_values
from plugins.items.search.text import index_text
from plugins.items.tables import items
from plugins.schema.api import load_schema

# The field types whose values are searched (``hash``, ``code``, ``uuid``... are not prose).
SEARCHABLE_TYPES = frozenset({"string", "text"})
INSERT_BATCH = 500

search = Table(
    "svc_search",
    metadata,
    site_column(primary_key=True, foreign_key=False),
    Column("collection_id", String(36), primary_key=True),
    Column("item_id", String(64), primary_key=True),
    Column("field", String(64), primary_key=True),
    Column("scope", String(32), nullable=False),
    Column("body", Text, nullable=False),
    Column("norm", Float, nullable=False),
)


def scope_token(site_id: str, collection_id: str, field: str) -> str:
    """The token FTS5 matches in the ``scope`` column for one (site, collection, field).

    Putting the scope into the full-text index lets SQLite intersect "these sites' readable
    fields" with the words inside FTS5, instead of fetching every row of every tenant that has
    the word and filtering afterwards. Letters and digits only, so it is one FTS5 token.
    """
    digest = hashlib.blake2b(f"{site_id}\x00{collection_id}\x00{field}".encode(), digest_size=12)
    return "s" + digest.hexdigest()


def searchable_fields(coll: Any) -> list[str]:
    """The names of ``coll``'s fields that search reads, in the collection's order (never a
    ``sensitive`` one: matching on it would be an oracle, and its stored value may be encrypted)."""
    return [name for name, fdef in coll.fields.items() if fdef.type in SEARCHABLE_TYPES and not fdef.sensitive]


def entries(site_id: str, coll: Any, item_id: str, data: Mapping[str, Any],
            names: list[str] | None = None) -> list[dict[str, Any]]:
    """The index rows of one item (only ``names`` when given; searchable fields otherwise)."""
    rows = []
    for name in searchable_fields(coll) if names is None else names:
        value = data.get(name)
        indexed = index_text(value) if isinstance(value, str) else None
        if indexed is not None:
            rows.append({"collection_id": coll.id, "item_id": item_id, "field": name,
                         "scope": scope_token(site_id, coll.id, name), "body": indexed.body,
                         "norm": indexed.norm})
    return rows


_ROW_COLUMNS = ("collection_id", "item_id", "field", "scope", "body", "norm")


@lru_cache(maxsize=2)
def _upsert_statement(dialect: str) -> Any:
    """One statement per dialect, built once (building it cost more than running it).

    On PostgreSQL the rows go as one array per column through ``unnest``: one statement of
    the same text whatever the number of rows (psycopg prepares it after a few runs) and one
    execution on the server, where an executemany of an item's two or three rows went through
    psycopg's pipeline (in process, 5% less CPU per create, inside the noise over HTTP). On
    SQLite an executemany is one call on the connection's thread."""
    stmt = dialect_insert(dialect)(search)
    if dialect == "postgresql":
        types = {"norm": ARRAY(Float)}
        rows = func.unnest(*(bindparam(name, type_=types.get(name, ARRAY(Text))) for name in _ROW_COLUMNS)) \
            .table_valued(*_ROW_COLUMNS).render_derived()
        stmt = stmt.from_select(["site_id", *_ROW_COLUMNS],
                                select(bindparam("site_id", type_=String), *(rows.c[n] for n in _ROW_COLUMNS)))
    return stmt.on_conflict_do_update(
        index_elements=[search.c.site_id, search.c.collection_id, search.c.item_id, search.c.field],
        set_={"scope": stmt.excluded.scope, "body": stmt.excluded.body, "norm": stmt.excluded.norm})


async def upsert(db: SiteDB, rows: list[dict[str, Any]]) -> None:
    """Insert index rows of this site; a row already there (same item and field) is replaced.

    Two transactions creating the same item id both get here before the items table refuses
    one of them (409); a plain insert would fail first, as a 500. Like ``SiteDB.insert``, every
    row is stamped with the site's id and the rows go as one executemany (``SiteDB.execute``
    binds only ``arg_*`` arguments, never rows, and a multi-row ``VALUES`` is compiled afresh
    every time); on PostgreSQL as one ``unnest`` of column arrays (``_upsert_statement``).
    """
    if not rows:
        return
    dialect = db.conn.dialect.name
    if dialect == "postgresql":
        columns = {name: [row[name] for row in rows] for name in _ROW_COLUMNS}
        await db.conn.execute(_upsert_statement(dialect), {"site_id": db.site_id, **columns})
    else:
        await db.conn.execute(_upsert_statement(dialect), [{**row, "site_id": db.site_id} for row in rows])


async def write_item(db: SiteDB, coll: Any, item_id: str, data: Mapping[str, Any], *, new: bool = False) -> None:
    """Replace the item's rows with those of ``data`` (its whole content); ``new`` for a create,
    whose item has no rows yet (``upsert`` covers a repeated or racing id)."""
    if not new:
        # Lock the item first (PostgreSQL; SQLite serialises writers anyway): two concurrent
        # updates of one item then replace its rows one after the other, and the second delete
        # sees the first one's rows instead of leaving them behind.
        await db.execute(db.select(items, items.c.id).where(items.c.collection_id == coll.id, items.c.id == item_id)
                         .with_for_update())
        await drop_item(db, coll.id, item_id)
    await upsert(db, entries(db.site_id, coll, item_id, data))


async def drop_item(db: SiteDB, collection_id: str, item_id: str) -> None:
    """Remove an item from the index."""
    await db.execute(db.delete(search).where(search.c.collection_id == collection_id,
                                             search.c.item_id == item_id))


async def drop_field(db: SiteDB, collection_id: str, field: str) -> None:
    """Remove one field of every item of a collection from the index."""
    await db.execute(db.delete(search).where(search.c.collection_id == collection_id, search.c.field == field))


async def index_field(db: SiteDB, coll: Any, field: str) -> int:
    """Index ``field`` of every live item of ``coll`` from the stored data; returns the rows added."""
    return await _index_items(db, coll, [field], live_values(db, coll))


async def _index_items(db: SiteDB, coll: Any, names: list[str] | None, rows: Any) -> int:
    batch: list[dict[str, Any]] = []
    added = 0
    async for item_id, data in rows:
        batch.extend(entries(db.site_id, coll, item_id, data, names))
        if len(batch) >= INSERT_BATCH:
            await upsert(db, batch)
            added, batch = added + len(batch), []
    await upsert(db, batch)
    return added + len(batch)


async def reindex_collection(kernel: Any, site_id: str, collection: str) -> int:
    """Rebuild the index of one live collection from its items, in one transaction; returns
    the rows written (``0`` for an unknown collection)."""
    async with kernel.unit_of_work(site_id) as uow:
        coll = (await load_schema(uow.conn, site_id)).collection(collection)
        if coll is None:
            return 0
        db = uow.db
        await db.execute(db.delete(search).where(search.c.collection_id == coll.id))
        return await _index_items(db, coll, None, live_values(db, coll))


def _live_ids(db: SiteDB, coll: Any, after: str | None) -> Any:
    """Ids of ``coll``'s live items in id order, after ``after`` (a keyset page)."""
    stmt = db.select(items, items.c.id).where(items.c.collection_id == coll.id, items.c.deleted_at.is_(None))
    return (stmt if after is None else stmt.where(items.c.id > after)).order_by(items.c.id).limit(INSERT_BATCH)


async def _index_missing_items(kernel: Any, site_id: str, coll: Any) -> int:
    """Index ``coll``'s unindexed items: walk the live ids a page at a time and read the index's
    primary key over the page's id range, so each page costs two index range reads whatever the
    size of the collection or the planner's statistics. (With statistics taken while the index
    was nearly empty, a correlated ``NOT EXISTS`` was planned as a scan of the collection's
    index rows per item, 200 items a second at 1,000,000, and an ``IN`` list of the page's ids
    as a scan of them per page.) A page with missing items is indexed in its own short
    transaction (SQLite's write lock and PostgreSQL's row locks are held for one page); a site
    whose index is complete costs no write transaction."""
    added, after = 0, None
    while True:
        async with kernel.db.connect() as conn:
            db = SiteDB(site_id, conn)
            ids = [row["id"] for row in await db.all(_live_ids(db, coll, after))]
            if not ids:
                return added
            indexed = {row["item_id"] for row in await db.all(db.select(search, search.c.item_id).where(
                search.c.collection_id == coll.id, search.c.item_id.between(ids[0], ids[-1])).distinct())}
        missing = [item_id for item_id in ids if item_id not in indexed]
        if missing:
            async with kernel.unit_of_work(site_id) as uow:
                # FOR UPDATE (PostgreSQL): an item updated meanwhile is indexed by its writer after
                # this page commits, instead of this page overwriting its rows with older text.
                rows = await uow.db.all(uow.db.select(items, items.c.id, items.c.data).where(
                    items.c.collection_id == coll.id, items.c.deleted_at.is_(None), items.c.id.in_(missing))
                    .with_for_update())
                batch = [entry for row in rows
                         for entry in entries(site_id, coll, row["id"], dict(row["data"] or {}))]
                await upsert(uow.db, batch)
            added += len(batch)
        if len(ids) < INSERT_BATCH:
            return added
        after = ids[-1]


async def index_missing(kernel: Any, site_id: str) -> int:
    """Index the live items of every collection of a site that have no index row yet (items
    written before the index existed, or by a path that bypassed the item events); returns
    the rows written. Items without searchable text are looked at again on every call.
    ``search_backfill`` runs it for every site at startup, so the schema is read, not taken
    from (or left in) this process's cache."""
    async with kernel.db.connect() as conn:
        snap = await load_schema(conn, site_id)
    added = 0
    for coll in snap.collections.values():
        if searchable_fields(coll):
            added += await _index_missing_items(kernel, site_id, coll)
    return added
