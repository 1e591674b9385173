"""Store-sync tables: the pipelines and their log of sync attempts.

A pipeline's position in the event log is the kernel checkpoint ``store_sync:<id>`` (the
event dispatcher moves it). ``credentials`` is the sealed JSON of the target's credentials
(``kernel.secrets``, purpose ``store_sync.credentials``), never returned. ``backfill_*`` is where
a truncated backfill resumes.
"""

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamps

pipelines = Table(
    "svc_store_sync_pipelines",
    metadata,
    id_column(),
    site_column(),
    Column("name", String(100), nullable=False),
    Column("target", String(10), nullable=False),
    Column("status", String(10), nullable=False),
    Column("project_id", String(100), nullable=True),
    Column("credentials", Text, nullable=False),
    Column("collections", json_type, nullable=False),
    Column("target_path", String(300), nullable=False),
    Column("sync_on_create", Boolean, nullable=False),
    Column("sync_on_update", Boolean, nullable=False),
    Column("sync_on_delete", Boolean, nullable=False),
    Column("role_id", String(36), nullable=False),
    Column("last_sync_at", DateTime(timezone=True), nullable=True),
    Column("last_sync_item_count", Integer, nullable=True),
    Column("last_error", String(500), nullable=True),
    Column("backfill_collection", String(100), nullable=True),
    Column("backfill_after", String(255), nullable=True),
    *timestamps(),
    UniqueConstraint("site_id", "name", name="uq_svc_store_sync_pipelines_site_name"),
)

sync_log = Table(
    "svc_store_sync_log",
    metadata,
    Column("id", Integer().with_variant(BigInteger, "postgresql"), primary_key=True, autoincrement=True),
    site_column(),
    Column("pipeline_id", String(36), ForeignKey("svc_store_sync_pipelines.id", ondelete="CASCADE"),
           nullable=False),
    Column("kind", String(10), nullable=False),
    Column("status", String(10), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("pushed", Integer, nullable=False),
    Column("failed", Integer, nullable=False),
    Column("skipped", Integer, nullable=False),
    Column("error", String(500), nullable=True),
    Column("duration_ms", Integer, nullable=False),
    Column("first_event", String(60), nullable=True),
    Column("last_event", String(60), nullable=True),
    Column("attempted_at", DateTime(timezone=True), nullable=False),
    Index("ix_svc_store_sync_log_pipeline", "pipeline_id", "id"),
)

dead_letters = Table(
    "svc_store_sync_dead_letters",
    metadata,
    id_column(),
    site_column(),
    Column("pipeline_id", String(36), ForeignKey("svc_store_sync_pipelines.id", ondelete="CASCADE"),
           nullable=False),
    # [[collection, itemId, last event type], ...]: identifiers only, never values (a replay reads
    # the items as they are then).
    Column("items", json_type, nullable=False),
    Column("event_count", Integer, nullable=False),
    Column("first_event", String(60), nullable=True),
    Column("last_event", String(60), nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("error", String(500), nullable=True),
    Column("status", String(10), nullable=False),  # pending | replayed
    *timestamps(),
    Column("replayed_at", DateTime(timezone=True), nullable=True),
    Index("ix_svc_store_sync_dead_letters_pipeline", "site_id", "pipeline_id", "created_at"),
)
