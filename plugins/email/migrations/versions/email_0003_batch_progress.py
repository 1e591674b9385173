"""email: a batch's progress and schedule (sent, failed, skipped; send_at, subject, who sent it)"""

import sqlalchemy as sa
from alembic import op

revision = "email_0003_batch_progress"
down_revision = "email_0002_smtp"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for name in ("sent", "failed", "skipped"):
        op.add_column("svc_email_batches", sa.Column(name, sa.Integer, nullable=False, server_default="0"))
    op.add_column("svc_email_batches", sa.Column("send_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("svc_email_batches", sa.Column("subject", sa.String(998), nullable=True))
    op.add_column("svc_email_batches", sa.Column("created_by", sa.String(36), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("svc_email_batches") as batch:
        for name in ("created_by", "subject", "send_at", "skipped", "failed", "sent"):
            batch.drop_column(name)
