"""realtime: tickets, notifications, push subscriptions"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "realtime_0001_tables"
down_revision = None
branch_labels = ("realtime",)
depends_on = "kernel_0001_sites"


def upgrade() -> None:
    op.create_table(
        "svc_realtime_tickets",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        site_column(),
        sa.Column("audience", sa.String(10), nullable=False),
        sa.Column("principal", JSON, nullable=False),
        sa.Column("collections", JSON, nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_svc_realtime_tickets_expires", "svc_realtime_tickets", ["expires_at"])
    op.create_table(
        "svc_notifications",
        id_column(),
        site_column(),
        sa.Column("kind", sa.String(100), nullable=False),
        sa.Column("severity", sa.String(10), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("body", sa.Text, nullable=True),
        sa.Column("deep_link", sa.String(2000), nullable=True),
        sa.Column("entity_id", sa.String(200), nullable=True),
        timestamp_column("created_at"),
        sa.Column("handled_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_svc_notifications_site_created", "svc_notifications", ["site_id", "created_at"])
    op.create_table(
        "svc_push_subscriptions",
        id_column(),
        site_column(),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("realm", sa.String(10), nullable=False),
        sa.Column("endpoint", sa.String(2000), nullable=False),
        sa.Column("p256dh", sa.String(100), nullable=False),
        sa.Column("auth", sa.String(40), nullable=False),
        *timestamps(),
        sa.UniqueConstraint("site_id", "user_id", "endpoint", name="uq_svc_push_subscriptions_user_endpoint"),
    )


def downgrade() -> None:
    op.drop_table("svc_push_subscriptions")
    op.drop_index("ix_svc_notifications_site_created", table_name="svc_notifications")
    op.drop_table("svc_notifications")
    op.drop_index("ix_svc_realtime_tickets_expires", table_name="svc_realtime_tickets")
    op.drop_table("svc_realtime_tickets")
