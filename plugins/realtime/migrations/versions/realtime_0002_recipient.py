"""realtime: a notification may name one recipient user (none: every session of the site)"""

import sqlalchemy as sa
from alembic import op

revision = "realtime_0002_recipient"
down_revision = "realtime_0001_tables"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("svc_notifications", sa.Column("recipient_id", sa.String(36), nullable=True))
    op.create_index("ix_svc_notifications_site_recipient", "svc_notifications", ["site_id", "recipient_id"])


def downgrade() -> None:
    op.drop_index("ix_svc_notifications_site_recipient", "svc_notifications")
    op.drop_column("svc_notifications", "recipient_id")
