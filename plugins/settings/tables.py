"""Tables of the settings plugin (migrations under ``migrations/``)."""

from sqlalchemy import Column, DateTime, ForeignKey, PrimaryKeyConstraint, String, Table, Text

from kernel.db.meta import json_type, metadata

# One row per (site, key). ``value`` holds the JSON value; a secret key keeps it sealed in
# ``sealed`` (AES-GCM, kernel.secrets) and ``value`` stays null.
settings = Table(
    "svc_settings",
    metadata,
    Column("site_id", String(63), ForeignKey("svc_sites.id", ondelete="CASCADE"), nullable=False),
    Column("key", String(100), nullable=False),
    Column("value", json_type, nullable=True),
    Column("sealed", Text, nullable=True),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("updated_by", String(36), nullable=True),
    PrimaryKeyConstraint("site_id", "key", name="pk_svc_settings"),
)
