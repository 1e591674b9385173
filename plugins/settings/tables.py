"""Tables of the settings plugin (migrations under ``migrations/``)."""

from sqlalchemy import (
    Column,
    Float,
    ForeignKey,
    Index,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamp_column, timestamps

# One row per (site, key). ``value`` holds the JSON value; a secret key keeps it sealed in
# ``sealed`` (AES-GCM, kernel.secrets) and ``value`` stays null.
settings = Table(
    "svc_settings",
    metadata,
    site_column(),
    Column("key", String(100), nullable=False),
    Column("value", json_type, nullable=True),
    Column("sealed", Text, nullable=True),
    timestamp_column("updated_at"),
    Column("updated_by", String(36), nullable=True),
    PrimaryKeyConstraint("site_id", "key", name="pk_svc_settings"),
)

# The site configuration beside the kernel's ``svc_sites`` row (which keeps ``name``): the
# ``domain`` in its own column, unique across the deployment (409 DOMAIN_TAKEN), the rest in
# ``config`` (camelCase keys: docs/settings-and-site.md, Site configuration).
site_config = Table(
    "svc_site_config",
    metadata,
    site_column(primary_key=True),
    Column("domain", String(253), nullable=True, unique=True),
    Column("config", json_type, nullable=False),
    timestamp_column("updated_at"),
)

# Preferences are identity-global (the same blob in every site: docs/settings-and-site.md, Preferences), so
# this table is
# keyed by user, not by site: the one table of this plugin without ``site_id``. A user's rows
# go with the user (ON DELETE CASCADE).
preferences = Table(
    "svc_user_preferences",
    metadata,
    Column("user_id", String(36), ForeignKey("svc_users.id", ondelete="CASCADE"), primary_key=True),
    Column("data", json_type, nullable=False),
    timestamp_column("updated_at"),
)

# View presets and bookmarks. Scope comes from ownership: ``user_id`` set is user scope,
# ``role_id`` set is role scope, neither is global. ``bookmark`` null: the default view of the
# collection for that scope (one per scope and collection); a name: a saved bookmark.
presets = Table(
    "svc_presets",
    metadata,
    id_column(),
    site_column(),
    Column("collection", String(64), nullable=False),
    Column("user_id", String(36), nullable=True),
    Column("role_id", String(36), nullable=True),
    Column("bookmark", String(200), nullable=True),
    Column("layout", String(64), nullable=True),
    Column("layout_query", json_type, nullable=True),
    Column("layout_options", json_type, nullable=True),
    Column("filter", json_type, nullable=True),
    Column("search", String(500), nullable=True),
    Column("icon", String(64), nullable=True),
    Column("color", String(32), nullable=True),
    *timestamps(),
    Index("ix_svc_presets_site_collection", "site_id", "collection"),
)

# Translation memory: one entry per (site, language pair, source text). ``source_hash`` is the
# SHA-256 of the source text (the upsert key; a text column cannot be a portable unique key).
tm_entries = Table(
    "svc_tm_entries",
    metadata,
    id_column(),
    site_column(),
    Column("source_lang", String(35), nullable=False),
    Column("target_lang", String(35), nullable=False),
    Column("source_hash", String(64), nullable=False),
    Column("source_text", Text, nullable=False),
    Column("target_text", Text, nullable=False),
    Column("quality", Float, nullable=True),
    Column("context", String(500), nullable=True),
    Column("source", String(64), nullable=False),
    *timestamps(),
    UniqueConstraint("site_id", "source_lang", "target_lang", "source_hash", name="uq_svc_tm_entries_text"),
    Index("ix_svc_tm_entries_pair_created", "site_id", "source_lang", "target_lang", "created_at"),
)

# The site glossary: terms translated the same way everywhere (the pipeline's second step).
glossary = Table(
    "svc_glossary",
    metadata,
    id_column(),
    site_column(),
    Column("source_lang", String(35), nullable=False),
    Column("target_lang", String(35), nullable=False),
    Column("term", String(200), nullable=False),
    Column("term_key", String(200), nullable=False),
    Column("translation", String(500), nullable=False),
    timestamp_column("created_at"),
    UniqueConstraint("site_id", "source_lang", "target_lang", "term_key", name="uq_svc_glossary_term"),
)
