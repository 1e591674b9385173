"""Schema tables: collections, fields, relations and the per-site schema version.

Every table carries ``site_id`` (FK to ``svc_sites`` with ``ON DELETE CASCADE``, so deleting a
site removes its schema without a ``site_deleted`` hook). A collection has a surrogate ``id``
because a soft-deleted collection keeps its row (and its fields) while a new live collection
may take the same name; the partial unique index keeps live names unique per site.
"""

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    UniqueConstraint,
    text,
)

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamp_column, timestamps

LIVE = text("deleted_at IS NULL")

collections = Table(
    "svc_collections",
    metadata,
    id_column(),
    site_column(),
    Column("name", String(64), nullable=False),
    Column("meta", json_type, nullable=False),
    # Relations detached by a soft delete, re-attached by a restore where they still fit.
    Column("detached_relations", json_type, nullable=True),
    Column("deleted_at", DateTime(timezone=True), nullable=True),
    *timestamps(),
    Index("uq_svc_collections_live_name", "site_id", "name", unique=True,
          sqlite_where=LIVE, postgresql_where=LIVE),
)

fields = Table(
    "svc_fields",
    metadata,
    site_column(),
    Column("collection_id", String(36), ForeignKey("svc_collections.id", ondelete="CASCADE"),
           primary_key=True),
    Column("field", String(64), primary_key=True),
    # The collection's name, copied (collections are never renamed) so reads need no join.
    Column("collection", String(64), nullable=False),
    Column("type", String(20), nullable=False),
    Column("interface", String(200), nullable=True),
    Column("display", String(200), nullable=True),
    Column("options", json_type, nullable=False),
    Column("required", Boolean, nullable=False, default=False),
    Column("sort", Integer, nullable=False, default=0),
    *timestamps(),
    Index("ix_svc_fields_site_collection", "site_id", "collection"),
)

relations = Table(
    "svc_relations",
    metadata,
    id_column(),
    site_column(),
    Column("type", String(8), nullable=False),
    Column("collection", String(64), nullable=False),
    Column("field", String(64), nullable=False),
    Column("related_collection", String(64), nullable=True),
    Column("related_collections", json_type, nullable=True),
    Column("related_field", String(64), nullable=True),
    Column("on_delete", String(10), nullable=False),
    *timestamps(),
    UniqueConstraint("site_id", "collection", "field", name="uq_svc_relations_site_collection_field"),
)

schema_versions = Table(
    "svc_schema_versions",
    metadata,
    site_column(primary_key=True),
    Column("version", Integer, nullable=False),
    timestamp_column("updated_at"),
)
