"""store_sync: pipelines and their sync log"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "store_sync_0001_pipelines"
down_revision = None
branch_labels = ("store_sync",)
depends_on = ("kernel_0001_sites",)


def upgrade() -> None:
    op.create_table(
        "svc_store_sync_pipelines",
        id_column(),
        site_column(),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("target", sa.String(10), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("project_id", sa.String(100), nullable=True),
        sa.Column("credentials", sa.Text, nullable=False),
        sa.Column("collections", JSON, nullable=False),
        sa.Column("target_path", sa.String(300), nullable=False),
        sa.Column("sync_on_create", sa.Boolean, nullable=False),
        sa.Column("sync_on_update", sa.Boolean, nullable=False),
        sa.Column("sync_on_delete", sa.Boolean, nullable=False),
        sa.Column("role_id", sa.String(36), nullable=False),
        sa.Column("last_sync_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_sync_item_count", sa.Integer, nullable=True),
        sa.Column("last_error", sa.String(500), nullable=True),
        sa.Column("backfill_collection", sa.String(100), nullable=True),
        sa.Column("backfill_after", sa.String(255), nullable=True),
        *timestamps(),
        sa.UniqueConstraint("site_id", "name", name="uq_svc_store_sync_pipelines_site_name"),
    )
    op.create_table(
        "svc_store_sync_log",
        sa.Column("id", sa.Integer().with_variant(sa.BigInteger, "postgresql"), primary_key=True, autoincrement=True),
        site_column(),
        sa.Column("pipeline_id", sa.String(36),
                  sa.ForeignKey("svc_store_sync_pipelines.id", ondelete="CASCADE"), nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("pushed", sa.Integer, nullable=False),
        sa.Column("failed", sa.Integer, nullable=False),
        sa.Column("skipped", sa.Integer, nullable=False),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("duration_ms", sa.Integer, nullable=False),
        sa.Column("first_event", sa.String(60), nullable=True),
        sa.Column("last_event", sa.String(60), nullable=True),
        sa.Column("attempted_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_svc_store_sync_log_pipeline", "svc_store_sync_log", ["pipeline_id", "id"])


def downgrade() -> None:
    op.drop_table("svc_store_sync_log")
    op.drop_table("svc_store_sync_pipelines")
