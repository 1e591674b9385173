"""git: integrations, OAuth states, webhook deliveries, cached pull requests and CI runs, preview markers"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "git_0001_integrations"
down_revision = None
branch_labels = ("git",)
depends_on = ("kernel_0001_sites",)


def _integration(primary: bool) -> sa.Column:
    return sa.Column("integration_id", sa.String(36), sa.ForeignKey("svc_git_integrations.id", ondelete="CASCADE"),
                     primary_key=primary, nullable=False)


def upgrade() -> None:
    op.create_table(
        "svc_git_integrations",
        id_column(),
        site_column(),
        sa.Column("provider", sa.String(10), nullable=False),
        sa.Column("repo_full_name", sa.String(200), nullable=False),
        sa.Column("display_name", sa.String(100), nullable=False),
        sa.Column("auth_method", sa.String(5), nullable=False),
        sa.Column("token", sa.Text, nullable=True),
        sa.Column("installation_id", sa.String(40), nullable=True),
        sa.Column("webhook_secret", sa.Text, nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("sync_config", JSON, nullable=False),
        sa.Column("gitops_snapshot", JSON, nullable=True),
        sa.Column("gitops_synced_at", sa.DateTime(timezone=True), nullable=True),
        *timestamps(),
        sa.UniqueConstraint("site_id", "provider", "repo_full_name", name="uq_svc_git_integrations_repo"),
    )
    op.create_table(
        "svc_git_oauth_states",
        sa.Column("state_hash", sa.String(64), primary_key=True),
        site_column(),
        _integration(False),
        sa.Column("provider", sa.String(10), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "svc_git_deliveries",
        site_column(),
        _integration(True),
        sa.Column("delivery_id", sa.String(100), primary_key=True),
        sa.Column("event", sa.String(60), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "svc_git_pull_requests",
        site_column(),
        _integration(True),
        sa.Column("number", sa.Integer, primary_key=True),
        sa.Column("title", sa.String(300), nullable=False),
        sa.Column("state", sa.String(12), nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("head_ref", sa.String(255), nullable=False),
        sa.Column("base_ref", sa.String(255), nullable=False),
        sa.Column("author", sa.String(100), nullable=True),
        sa.Column("url", sa.String(500), nullable=True),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "svc_git_ci_runs",
        site_column(),
        _integration(True),
        sa.Column("run_id", sa.String(40), primary_key=True),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("conclusion", sa.String(20), nullable=True),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("url", sa.String(500), nullable=True),
        sa.Column("log", sa.Text, nullable=True),
        sa.Column("log_truncated", sa.Boolean, nullable=False),
        sa.Column("log_fetched_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "svc_git_previews",
        site_column(primary_key=True),
        sa.Column("parent_site_id", sa.String(63), nullable=False),
        sa.Column("integration_id", sa.String(36), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("sha", sa.String(64), nullable=False),
        sa.Column("seeded_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_svc_git_ci_runs_number", "svc_git_ci_runs", ["integration_id", "number"])


def downgrade() -> None:
    for name in ("svc_git_previews", "svc_git_ci_runs", "svc_git_pull_requests", "svc_git_deliveries", "svc_git_oauth_states",
                 "svc_git_integrations"):
        op.drop_table(name)
