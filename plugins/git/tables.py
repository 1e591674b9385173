"""Git tables: integrations, single-use OAuth states, webhook deliveries seen, and the cached
pull requests and CI runs.

``token`` and ``webhook_secret`` are sealed (``kernel.secrets``, purposes ``git.token`` and
``git.webhook_secret``), never returned. An OAuth ``state`` is stored as its SHA-256 only.
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
    Text,
    UniqueConstraint,
)

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamps

integrations = Table(
    "svc_git_integrations",
    metadata,
    id_column(),
    site_column(),
    Column("provider", String(10), nullable=False),
    Column("repo_full_name", String(200), nullable=False),
    Column("display_name", String(100), nullable=False),
    Column("auth_method", String(5), nullable=False),
    Column("token", Text, nullable=True),
    Column("installation_id", String(40), nullable=True),
    Column("webhook_secret", Text, nullable=False),
    Column("status", String(12), nullable=False),
    Column("sync_config", json_type, nullable=False),
    Column("gitops_snapshot", json_type, nullable=True),
    Column("gitops_synced_at", DateTime(timezone=True), nullable=True),
    *timestamps(),
    UniqueConstraint("site_id", "provider", "repo_full_name", name="uq_svc_git_integrations_repo"),
)

oauth_states = Table(
    "svc_git_oauth_states",
    metadata,
    Column("state_hash", String(64), primary_key=True),
    site_column(),
    Column("integration_id", String(36), ForeignKey("svc_git_integrations.id", ondelete="CASCADE"),
           nullable=False),
    Column("provider", String(10), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("used_at", DateTime(timezone=True), nullable=True),
)

deliveries = Table(
    "svc_git_deliveries",
    metadata,
    site_column(),
    Column("integration_id", String(36), ForeignKey("svc_git_integrations.id", ondelete="CASCADE"),
           primary_key=True),
    Column("delivery_id", String(100), primary_key=True),
    Column("event", String(60), nullable=False),
    Column("received_at", DateTime(timezone=True), nullable=False),
)

pull_requests = Table(
    "svc_git_pull_requests",
    metadata,
    site_column(),
    Column("integration_id", String(36), ForeignKey("svc_git_integrations.id", ondelete="CASCADE"),
           primary_key=True),
    Column("number", Integer, primary_key=True),
    Column("title", String(300), nullable=False),
    Column("state", String(12), nullable=False),
    Column("head_sha", String(64), nullable=False),
    Column("head_ref", String(255), nullable=False),
    Column("base_ref", String(255), nullable=False),
    Column("author", String(100), nullable=True),
    Column("url", String(500), nullable=True),
    Column("fetched_at", DateTime(timezone=True), nullable=False),
)

ci_runs = Table(
    "svc_git_ci_runs",
    metadata,
    site_column(),
    Column("integration_id", String(36), ForeignKey("svc_git_integrations.id", ondelete="CASCADE"),
           primary_key=True),
    Column("run_id", String(40), primary_key=True),
    Column("number", Integer, nullable=False),
    Column("name", String(200), nullable=False),
    Column("status", String(20), nullable=False),
    Column("conclusion", String(20), nullable=True),
    Column("head_sha", String(64), nullable=False),
    Column("url", String(500), nullable=True),
    Column("log", Text, nullable=True),
    Column("log_truncated", Boolean, nullable=False),
    Column("log_fetched_at", DateTime(timezone=True), nullable=True),
    Column("fetched_at", DateTime(timezone=True), nullable=False),
    Index("ix_svc_git_ci_runs_number", "integration_id", "number"),
)

# A preview site's own marker, in the preview's tenancy (its site_id is the preview): it says
# whose preview the site is, so git only ever deletes a site it made, and an orphan (parent
# deleted) is found by the sweep.
previews = Table(
    "svc_git_previews",
    metadata,
    site_column(primary_key=True),
    Column("parent_site_id", String(63), nullable=False),
    Column("integration_id", String(36), nullable=False),
    Column("number", Integer, nullable=False),
    Column("sha", String(64), nullable=False),
    Column("seeded_at", DateTime(timezone=True), nullable=False),
)
