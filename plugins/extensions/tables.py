"""Tables of the extensions plugin (migration ``extensions_0001_extensions``).

``svc_extensions`` (installed bundles) and ``svc_extension_keys`` (stored publisher keys) are
deployment-wide, like ``svc_sites``: an extension is installed once, by the instance admin,
and its code is the same for every site. Whether it runs in a site, and with which
capabilities, is ``svc_extension_sites`` (keyed by ``site_id``).
"""

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamp_column, timestamps

# One row per installed extension: the bundle's bytes and detached signature are kept, so every
# worker (and every start) unpacks and verifies the very bytes that were uploaded.
extensions = Table(
    "svc_extensions",
    metadata,
    id_column(),
    Column("name", String(63), nullable=False, unique=True),
    Column("version", String(64), nullable=False),
    Column("publisher", String(63), nullable=False),
    Column("manifest", json_type, nullable=False),
    Column("bundle", LargeBinary, nullable=False),
    Column("signature", Text, nullable=False),
    Column("sha256", String(64), nullable=False),
    # "verified" (a publisher key signs it) or "unverified" (installed under policy "warn").
    Column("signature_state", String(16), nullable=False),
    Column("is_official", Boolean, nullable=False),
    # "installed", or "blocked" when a later load failed verification (a revoked key).
    Column("status", String(16), nullable=False),
    Column("status_reason", Text, nullable=True),
    Column("installed_at", DateTime(timezone=True), nullable=False),
    Column("installed_by", String(36), nullable=True),
)

# Per site: enabled or not, the granted capabilities, the failures counted since enabling, and
# what the instance admin made available to it.
extension_sites = Table(
    "svc_extension_sites",
    metadata,
    site_column(),
    Column("extension_id", String(36), ForeignKey("svc_extensions.id", ondelete="CASCADE"), nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("granted", json_type, nullable=False),
    Column("failures", Integer, nullable=False),
    Column("disabled_reason", Text, nullable=True),
    timestamp_column("updated_at"),
    # What the instance admin offers the site (extensions_0002): a site admin enables it only
    # when available, and grants at most ``max_granted`` (null: nothing).
    Column("available", Boolean, nullable=False, server_default=false()),
    Column("max_granted", json_type, nullable=True),
    PrimaryKeyConstraint("site_id", "extension_id", name="pk_svc_extension_sites"),
    Index("ix_svc_extension_sites_extension", "extension_id"),
)

# Stored publisher keys: add to MARKETPLACE_PUBLIC_KEYS, and override an environment key's
# status ("trusted", "official" or "revoked").
extension_keys = Table(
    "svc_extension_keys",
    metadata,
    id_column(),
    Column("publisher", String(63), nullable=False),
    Column("public_key", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    *timestamps(),
    UniqueConstraint("publisher", "public_key", name="uq_svc_extension_keys"),
)
