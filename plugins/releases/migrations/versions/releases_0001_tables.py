"""releases: releases and their entries"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "releases_0001_tables"
down_revision = None
branch_labels = ("releases",)
depends_on = "kernel_0001_sites"


def upgrade() -> None:
    op.create_table(
        "svc_releases",
        id_column(),
        site_column(),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("atomicity_mode", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("publish_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("maintenance_window", JSON, nullable=True),
        sa.Column("created_by", sa.String(36), nullable=True),
        sa.Column("scheduled_by", JSON, nullable=True),
        *timestamps(),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("next_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text, nullable=True),
    )
    op.create_index("ix_svc_releases_site_status", "svc_releases", ["site_id", "status", "created_at"])
    op.create_table(
        "svc_release_items",
        id_column(),
        site_column(),
        sa.Column("release_id", sa.String(36), sa.ForeignKey("svc_releases.id", ondelete="CASCADE"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("item_id", sa.String(64), nullable=False),
        sa.Column("target_status", sa.String(40), nullable=False),
        sa.Column("revision_id", sa.String(36), nullable=True),
        sa.Column("version_key", sa.String(64), nullable=True),
        sa.Column("outcome", sa.String(20), nullable=True),
        sa.Column("reason", sa.String(60), nullable=True),
        sa.Column("message", sa.String(500), nullable=True),
        sa.UniqueConstraint("release_id", "collection", "item_id", name="uq_svc_release_items_entry"),
    )
    op.create_index("ix_svc_release_items_release", "svc_release_items", ["site_id", "release_id", "position"])


def downgrade() -> None:
    op.drop_table("svc_release_items")
    op.drop_table("svc_releases")
