"""store_sync: the dead-letter list of batches a target refused too many times"""

import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "store_sync_0002_dead_letters"
down_revision = "store_sync_0001_pipelines"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "svc_store_sync_dead_letters",
        id_column(),
        site_column(),
        sa.Column(
            "pipeline_id",
            sa.String(36),
            sa.ForeignKey("svc_store_sync_pipelines.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("items", JSON, nullable=False),
        sa.Column("event_count", sa.Integer, nullable=False),
        sa.Column("first_event", sa.String(60), nullable=True),
        sa.Column("last_event", sa.String(60), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("status", sa.String(10), nullable=False),
        *timestamps(),
        sa.Column("replayed_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index(
        "ix_svc_store_sync_dead_letters_pipeline",
        "svc_store_sync_dead_letters",
        ["site_id", "pipeline_id", "created_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_svc_store_sync_dead_letters_pipeline", table_name="svc_store_sync_dead_letters")
    op.drop_table("svc_store_sync_dead_letters")
