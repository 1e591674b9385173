"""email: a scheduled send can be cancelled before it starts (-- more43)"""

import sqlalchemy as sa
from alembic import op

revision = "email_0004_batch_cancel"
down_revision = "email_0003_batch_progress"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("svc_email_batches", sa.Column("cancelled_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("svc_email_batches") as batch:
        batch.drop_column("cancelled_at")
