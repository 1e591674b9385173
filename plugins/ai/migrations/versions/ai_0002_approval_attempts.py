"""ai: approvals count their runs (a transient failure is retried through jobs)"""

import sqlalchemy as sa
from alembic import op

revision = "ai_0002_approval_attempts"
down_revision = "ai_0001_ai"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("svc_ai_approvals", sa.Column("attempts", sa.Integer, nullable=False, server_default="0"))


def downgrade() -> None:
    op.drop_column("svc_ai_approvals", "attempts")
