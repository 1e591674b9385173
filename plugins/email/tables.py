"""The email plugin's tables: layouts, templates, suppressions and queued batches (all per site)."""

from sqlalchemy import Column, DateTime, ForeignKey, Index, Integer, String, Table, Text, UniqueConstraint

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamp_column, timestamps

layouts = Table(
    "svc_email_layouts",
    metadata,
    id_column(),
    site_column(),
    Column("name", String(200), nullable=False),
    Column("html", Text, nullable=False),
    *timestamps(),
    Index("ix_svc_email_layouts_site", "site_id"),
)

templates = Table(
    "svc_email_templates",
    metadata,
    id_column(),
    site_column(),
    Column("key", String(100), nullable=False),
    Column("name", String(200), nullable=False),
    Column("subject", String(998), nullable=False),
    Column("html", Text, nullable=True),
    Column("text", Text, nullable=True),
    Column("layout_id", String(36), ForeignKey("svc_email_layouts.id"), nullable=True),
    *timestamps(),
    UniqueConstraint("site_id", "key", name="uq_svc_email_templates_site_key"),
)

# ``email`` is stored lower-cased: suppression compares addresses ignoring case (docs/email.md,
# Suppressions and unsubscribe).
suppressions = Table(
    "svc_email_suppressions",
    metadata,
    site_column(primary_key=True),
    Column("email", String(320), primary_key=True),
    Column("reason", String(300), nullable=True),
    Column("source", String(20), nullable=False),  # admin | unsubscribe
    timestamp_column("created_at"),
)

# A large send: the rendered message once; one job per recipient refers to it.
batches = Table(
    "svc_email_batches",
    metadata,
    id_column(),
    site_column(),
    Column("category", String(20), nullable=False),
    Column("message", json_type, nullable=False),
    Column("total", Integer, nullable=False),
    timestamp_column("created_at"),
    # -- govern43 (email_0003): each recipient's outcome counted by its job, the time it was
    # scheduled for (``sendAt``), its subject and who sent it (GET /email/batches)
    Column("sent", Integer, nullable=False, server_default="0"),
    Column("failed", Integer, nullable=False, server_default="0"),
    Column("skipped", Integer, nullable=False, server_default="0"),
    Column("send_at", DateTime(timezone=True), nullable=True),
    Column("subject", String(998), nullable=True),
    Column("created_by", String(36), nullable=True),
    Column("cancelled_at", DateTime(timezone=True), nullable=True),  # -- more43 (email_0004): cancelled before it started
)

# A site's own SMTP server (docs/email.md, "Per-site SMTP"): one row per site, the password
# sealed with kernel.secrets (purpose ``email.smtp_password``), never returned.
smtp_settings = Table(
    "svc_email_smtp",
    metadata,
    site_column(primary_key=True),
    Column("host", String(253), nullable=False),
    Column("port", Integer, nullable=False),
    Column("username", String(320), nullable=True),
    Column("password", Text, nullable=True),
    Column("tls", String(10), nullable=False),
    Column("sender", String(320), nullable=True),
    timestamp_column("updated_at"),
)
