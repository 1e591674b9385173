"""The regulated plugin's tables: per-site key state, data keys, and the field-access log.

- ``svc_regulated_state``: one row per site that used regulated content: envelope mode, the
  site's active key-encryption key (``None``: ``SVC_ENCRYPTION_KEY``'s), the migration's
  direction and cursor (committed with each batch, so a crash resumes where it stopped).
- ``svc_regulated_keys``: the keys a site has used: ``active`` or ``retired``, when.
- ``svc_regulated_data_keys``: one data key per item with encrypted values, wrapped by a
  key-encryption key (``kernel.secrets``, the site and the item as associated data).
  ``wrapped`` null and ``shredded_at`` set: crypto-shredded (its values read as null).
- ``svc_regulated_field_access``: who read which sensitive field of which item in clear, when.
"""

from sqlalchemy import Boolean, Column, DateTime, Index, Integer, String, Table, Text

from kernel.db.meta import id_column, metadata, site_column, timestamp_column

state = Table(
    "svc_regulated_state",
    metadata,
    site_column(primary_key=True),
    Column("envelope_enabled", Boolean, nullable=False, default=False),
    Column("active_key_id", String(32), nullable=True),
    Column("migration", String(10), nullable=True),  # encrypt | decrypt | None (idle)
    Column("cursor_collection", String(64), nullable=True),
    Column("cursor_item", String(64), nullable=True),
    Column("migrated", Integer, nullable=False, default=0),
    timestamp_column("updated_at"),
)

keys = Table(
    "svc_regulated_keys",
    metadata,
    site_column(primary_key=True),
    Column("key_id", String(32), primary_key=True),
    Column("status", String(10), nullable=False),  # active | retired
    timestamp_column("created_at"),
    Column("retired_at", DateTime(timezone=True), nullable=True),
)

data_keys = Table(
    "svc_regulated_data_keys",
    metadata,
    site_column(primary_key=True),
    Column("collection", String(64), primary_key=True),
    Column("item_id", String(64), primary_key=True),
    Column("key_id", String(32), nullable=True),
    Column("wrapped", Text, nullable=True),
    timestamp_column("created_at"),
    Column("shredded_at", DateTime(timezone=True), nullable=True),
    Index("ix_svc_regulated_data_keys_key", "site_id", "key_id"),
)

field_access = Table(
    "svc_regulated_field_access",
    metadata,
    id_column(),
    site_column(),
    Column("actor_id", String(64), nullable=True),
    Column("actor_kind", String(20), nullable=True),
    Column("collection", String(64), nullable=False),
    Column("item_id", String(64), nullable=False),
    Column("field", String(64), nullable=False),
    Column("purpose", String(10), nullable=False),  # read | sar
    Column("request_id", String(64), nullable=True),
    timestamp_column("created_at"),
    Index("ix_svc_regulated_field_access_site", "site_id", "created_at"),
)
