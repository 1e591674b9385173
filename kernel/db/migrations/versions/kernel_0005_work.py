"""kernel: a site's long work with its progress (GET /work, kernel/admin/work.py)"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column

revision = "kernel_0005_work"
down_revision = "kernel_0004_events"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "svc_work",
        id_column(),
        site_column(),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("label", sa.String(200), nullable=False),
        sa.Column("target_type", sa.String(40), nullable=True),
        sa.Column("target_id", sa.String(255), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("done", sa.Integer, nullable=True),
        sa.Column("total", sa.Integer, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("started_by", sa.String(36), nullable=True),
        sa.Column("started_by_email", sa.String(320), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        timestamp_column("updated_at"),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_svc_work_site_started", "svc_work", ["site_id", "started_at"])


def downgrade() -> None:
    op.drop_index("ix_svc_work_site_started", "svc_work")
    op.drop_table("svc_work")
