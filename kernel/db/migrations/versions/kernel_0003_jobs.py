"""kernel: the job queue (svc_jobs) and periodic ticks (svc_job_ticks)"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import site_column, timestamps

revision = "kernel_0003_jobs"
down_revision = "kernel_0002_audit"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "svc_jobs",
        sa.Column("id", sa.String(32), primary_key=True),
        site_column(nullable=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("args", sa.JSON().with_variant(sa.dialects.postgresql.JSONB(), "postgresql"), nullable=False),
        sa.Column("dedupe", sa.String(600), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("claimed_by", sa.String(100), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text, nullable=True),
        *timestamps(),
    )
    op.create_index("ix_svc_jobs_status_due", "svc_jobs", ["status", "due_at"])
    op.create_index("ix_svc_jobs_site", "svc_jobs", ["site_id"])
    op.create_index("uq_svc_jobs_pending_dedupe", "svc_jobs", ["dedupe"], unique=True,
                    postgresql_where=sa.text("status = 'pending'"), sqlite_where=sa.text("status = 'pending'"))
    op.create_table(
        "svc_job_ticks",
        sa.Column("name", sa.String(200), primary_key=True),
        site_column(nullable=True, foreign_key=False),
        sa.Column("slot", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("svc_job_ticks")
    op.drop_table("svc_jobs")
