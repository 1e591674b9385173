"""The one ``items`` table: structural columns plus a JSON ``data`` column.

Every collection's items live here (ARCHITECTURE rule 6): JSONB with a GIN index on
PostgreSQL, JSON1 text on SQLite. Items are keyed by the collection's surrogate ``id``
(``CollectionDef.id``), not its name, so a soft-deleted collection's items never leak into a
new collection that takes the same name.

Indexes: the primary key (site_id, collection_id, id) serves get-by-id and the default
id-ordered list; the partial index on live rows serves lists and counts; fields marked
``indexed`` get expression indexes over their JSON path (created by the items plugin when the
field is created, named ``ix_items_<collection_id>_<field>``).
"""

from sqlalchemy import BigInteger, Boolean, Column, DateTime, Index, Integer, String, Table, Text, text

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamp_column, timestamps

LIVE = text("deleted_at IS NULL")

items = Table(
    "svc_items",
    metadata,
    site_column(primary_key=True, foreign_key=False),
    Column("collection_id", String(36), primary_key=True),
    Column("id", String(64), primary_key=True),
    Column("status", String(40), nullable=False),
    Column("sort", Integer, nullable=True),
    Column("data", json_type, nullable=False),
    *timestamps(),
    Column("user_created", String(36), nullable=True),
    Column("user_updated", String(36), nullable=True),
    Column("deleted_at", DateTime(timezone=True), nullable=True),
    Index("ix_svc_items_live", "site_id", "collection_id", "id", sqlite_where=LIVE, postgresql_where=LIVE),
)

# Live items per collection, kept by triggers on svc_items (migration items_0004_counts, counts.py):
# the sum of a collection's rows is its number of live items.
item_counts = Table(
    "svc_item_counts",
    metadata,
    site_column(primary_key=True, foreign_key=False),
    Column("collection_id", String(36), primary_key=True),
    Column("slot", BigInteger, primary_key=True, autoincrement=True),  # PostgreSQL: an identity
    Column("n", BigInteger, nullable=False),
)

# PostgreSQL's kept group counts (read/group_counts.py, migration items_0006_group_counts): the
# (collection, field) pairs whose live items are counted per value, and the counts, kept by
# triggers on svc_items as delta rows (the sum of a value's rows is its number of live items).
group_fields = Table(
    "svc_item_group_fields",
    metadata,
    site_column(primary_key=True, foreign_key=False),
    Column("collection_id", String(36), primary_key=True),
    Column("field", String(64), primary_key=True),
    Column("ready", Boolean, nullable=False),
)

group_counts = Table(
    "svc_item_group_counts",
    metadata,
    site_column(primary_key=True, foreign_key=False),
    Column("collection_id", String(36), primary_key=True),
    Column("field", String(64), primary_key=True),
    Column("slot", BigInteger, primary_key=True, autoincrement=True),  # PostgreSQL: an identity
    Column("value", Text, nullable=True),
    Column("n", BigInteger, nullable=False),
    Index("ix_svc_item_group_counts_value", "site_id", "collection_id", "field", "value"),
)

# ---------------------------------------------------------------------- history
# Tables of an item's history: revisions, named versions and field pins.
#
# Keyed like ``svc_items`` by (site, collection id, item id): a soft-deleted collection's history
# never reaches a new collection of the same name. Rows of an item that was hard-deleted are
# removed after the delete (``history_events``), so history never passes to a new item of that id.

revisions = Table(
    "svc_item_revisions",
    metadata,
    site_column(primary_key=True, foreign_key=False),
    id_column(),
    Column("collection_id", String(36), nullable=False),
    Column("item_id", String(64), nullable=False),
    # update, revert, promote (written by a write; create: by the first update) or prepared
    Column("kind", String(20), nullable=False),
    Column("staged", Boolean, nullable=False),
    Column("data", json_type, nullable=False),  # the whole item after the change
    Column("delta", json_type, nullable=False),  # { field: { from, to } }
    Column("origin", json_type, nullable=True),  # { revisionId } | { version } | { cause }
    Column("caused_by", String(200), nullable=True),  # the write's cause: release:<id>, flow-run:<id>
    Column("actor_kind", String(20), nullable=True),
    Column("actor_id", String(36), nullable=True),
    Column("api_key_id", String(36), nullable=True),
    Column("impersonator_id", String(36), nullable=True),
    timestamp_column("created_at"),
    Column("committed_at", DateTime(timezone=True), nullable=True),
    Index("ix_svc_item_revisions_item", "site_id", "collection_id", "item_id", "created_at"),
)

versions = Table(
    "svc_item_versions",
    metadata,
    site_column(primary_key=True, foreign_key=False),
    Column("collection_id", String(36), primary_key=True),
    Column("item_id", String(64), primary_key=True),
    Column("key", String(63), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("data", json_type, nullable=False),  # the version's content fields
    Column("base", json_type, nullable=False),  # main's content when created or last promoted
    Column("base_updated_at", DateTime(timezone=True), nullable=False),  # main's updatedAt then
    *timestamps(),
    Column("user_created", String(36), nullable=True),
    Column("user_updated", String(36), nullable=True),
)

pins = Table(
    "svc_item_pins",
    metadata,
    site_column(primary_key=True, foreign_key=False),
    Column("collection_id", String(36), primary_key=True),
    Column("item_id", String(64), primary_key=True),
    Column("field", String(64), primary_key=True),
    Column("holder_kind", String(20), nullable=False),  # user, api_key, release, version
    Column("holder_id", String(64), nullable=False),
    Column("reason", String(500), nullable=True),
    timestamp_column("created_at"),
    Column("expires_at", DateTime(timezone=True), nullable=True),
)

HISTORY_TABLES = (revisions, versions, pins)
