"""The privacy tables, all keyed by site.

``svc_privacy_consents``: one row per (site, user, consent type): the latest decision and when
it was first granted or last withdrawn. ``svc_privacy_restrictions``: a user's restriction of
processing in a site. ``svc_privacy_erasures``: erasure requests; they keep a keyed hash of the
subject (never the filter's values), the matched item ids (ids are not personal values) and
who asked, confirmed and executed.
"""

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
)

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamp_column

consents = Table(
    "svc_privacy_consents",
    metadata,
    site_column(),
    Column("user_id", String(36), ForeignKey("svc_users.id", ondelete="CASCADE"), nullable=False),
    Column("consent_type", String(20), nullable=False),
    Column("granted", Boolean, nullable=False),
    Column("granted_at", DateTime(timezone=True), nullable=True),
    Column("withdrawn_at", DateTime(timezone=True), nullable=True),
    Column("source", String(200), nullable=False),
    Column("version", String(100), nullable=False),
    timestamp_column("updated_at"),
    PrimaryKeyConstraint("site_id", "user_id", "consent_type", name="pk_svc_privacy_consents"),
)

restrictions = Table(
    "svc_privacy_restrictions",
    metadata,
    site_column(),
    Column("user_id", String(36), ForeignKey("svc_users.id", ondelete="CASCADE"), nullable=False),
    Column("restricted", Boolean, nullable=False),
    Column("reason", String(500), nullable=True),
    timestamp_column("updated_at"),
    PrimaryKeyConstraint("site_id", "user_id", name="pk_svc_privacy_restrictions"),
)

erasures = Table(
    "svc_privacy_erasures",
    metadata,
    id_column(),
    site_column(),
    Column("collection", String(64), nullable=False),
    Column("subject_hash", String(64), nullable=False),
    Column("filter_fields", json_type, nullable=False),  # the field names the filter tests, never values
    Column("item_ids", json_type, nullable=False),
    Column("reason", String(500), nullable=False),
    Column("status", String(30), nullable=False),  # awaiting_confirmation, confirmed, executed
    Column("dual_control", Boolean, nullable=False),
    Column("requested_by", String(36), nullable=True),
    Column("confirmed_by", String(36), nullable=True),
    Column("executed_by", String(36), nullable=True),
    Column("record_count", Integer, nullable=True),
    timestamp_column("created_at"),
    Column("confirmed_at", DateTime(timezone=True), nullable=True),
    Column("executed_at", DateTime(timezone=True), nullable=True),
    Index("ix_svc_privacy_erasures_site_created", "site_id", "created_at"),
)
