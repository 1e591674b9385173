"""Tables of an item's history: revisions, named versions and field pins.

Keyed like ``svc_items`` by (site, collection id, item id): a soft-deleted collection's history
never reaches a new collection of the same name. Rows of an item that was hard-deleted are
removed after the delete (``history_events``), so history never passes to a new item of that id.
"""

from sqlalchemy import Boolean, Column, DateTime, Index, String, Table

from kernel.db.meta import json_type, metadata

revisions = Table(
    "svc_item_revisions",
    metadata,
    Column("site_id", String(63), primary_key=True),
    Column("id", String(36), primary_key=True),
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
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("committed_at", DateTime(timezone=True), nullable=True),
    Index("ix_svc_item_revisions_item", "site_id", "collection_id", "item_id", "created_at"),
)

versions = Table(
    "svc_item_versions",
    metadata,
    Column("site_id", String(63), primary_key=True),
    Column("collection_id", String(36), primary_key=True),
    Column("item_id", String(64), primary_key=True),
    Column("key", String(63), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("data", json_type, nullable=False),  # the version's content fields
    Column("base", json_type, nullable=False),  # main's content when created or last promoted
    Column("base_updated_at", DateTime(timezone=True), nullable=False),  # main's updatedAt then
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("user_created", String(36), nullable=True),
    Column("user_updated", String(36), nullable=True),
)

pins = Table(
    "svc_item_pins",
    metadata,
    Column("site_id", String(63), primary_key=True),
    Column("collection_id", String(36), primary_key=True),
    Column("item_id", String(64), primary_key=True),
    Column("field", String(64), primary_key=True),
    Column("holder_kind", String(20), nullable=False),  # user, api_key, release, version
    Column("holder_id", String(64), nullable=False),
    Column("reason", String(500), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=True),
)

HISTORY_TABLES = (revisions, versions, pins)
