"""The releases plugin's tables: releases and their entries (items to publish), both by site.

A release's scheduled run is a kernel job (``releases.publish``, dedupe key ``release:<id>``),
not a column here: the job row is what survives restarts and is claimed once.
"""

from sqlalchemy import Column, DateTime, ForeignKey, Index, Integer, String, Table, Text, UniqueConstraint

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamps

releases = Table(
    "svc_releases",
    metadata,
    id_column(),
    site_column(),
    Column("name", String(200), nullable=False),
    Column("atomicity_mode", String(20), nullable=False),
    Column("status", String(20), nullable=False),
    Column("publish_at", DateTime(timezone=True), nullable=True),
    Column("maintenance_window", json_type, nullable=True),
    Column("created_by", String(36), nullable=True),
    # Who set publishAt last: the scheduler publishes as this principal (re-checked when due).
    Column("scheduled_by", json_type, nullable=True),
    *timestamps(),
    Column("published_at", DateTime(timezone=True), nullable=True),
    Column("next_run_at", DateTime(timezone=True), nullable=True),
    Column("last_error", Text, nullable=True),
    Column("rolled_back_at", DateTime(timezone=True), nullable=True),
    Index("ix_svc_releases_site_status", "site_id", "status", "created_at"),
)

release_items = Table(
    "svc_release_items",
    metadata,
    id_column(),
    site_column(),
    Column("release_id", String(36), ForeignKey("svc_releases.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("collection", String(64), nullable=False),
    Column("item_id", String(64), nullable=False),
    Column("target_status", String(40), nullable=False),
    Column("revision_id", String(36), nullable=True),
    Column("version_key", String(64), nullable=True),
    Column("outcome", String(20), nullable=True),
    Column("reason", String(60), nullable=True),
    Column("message", String(500), nullable=True),
    # What a rollback returns the item to: its revision and status before the release's writes,
    # recorded in the publish transaction (plugins/releases/rollback.py).
    Column("previous_revision_id", String(36), nullable=True),
    Column("previous_status", String(40), nullable=True),
    UniqueConstraint("release_id", "collection", "item_id", name="uq_svc_release_items_entry"),
    Index("ix_svc_release_items_release", "site_id", "release_id", "position"),
)
