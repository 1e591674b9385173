"""cdc: change-feed subscriptions and their delivery attempts"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "cdc_0001_subscriptions"
down_revision = None
branch_labels = ("cdc",)
depends_on = ("kernel_0001_sites",)


def upgrade() -> None:
    op.create_table(
        "svc_cdc_subscriptions",
        id_column(),
        site_column(),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("url", sa.String(2048), nullable=True),
        sa.Column("secret", sa.Text, nullable=True),
        sa.Column("collections", JSON, nullable=False),
        sa.Column("operations", JSON, nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("status_reason", sa.String(300), nullable=True),
        sa.Column("cursor_txid", sa.BigInteger, nullable=True),
        sa.Column("cursor_id", sa.BigInteger, nullable=True),
        *timestamps(),
        sa.UniqueConstraint("site_id", "name", name="uq_svc_cdc_subscriptions_site_name"),
    )
    op.create_table(
        "svc_cdc_deliveries",
        sa.Column("id", sa.Integer().with_variant(sa.BigInteger, "postgresql"), primary_key=True, autoincrement=True),
        site_column(),
        sa.Column("subscription_id", sa.String(36),
                  sa.ForeignKey("svc_cdc_subscriptions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("delivery_id", sa.String(36), nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("status_code", sa.Integer, nullable=True),
        sa.Column("duration_ms", sa.Integer, nullable=False),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("event_count", sa.Integer, nullable=False),
        sa.Column("first_event", sa.String(60), nullable=True),
        sa.Column("last_event", sa.String(60), nullable=True),
        sa.Column("attempted_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_svc_cdc_deliveries_subscription", "svc_cdc_deliveries", ["subscription_id", "id"])
    op.create_index("ix_svc_cdc_deliveries_attempted_at", "svc_cdc_deliveries", ["attempted_at"])


def downgrade() -> None:
    op.drop_table("svc_cdc_deliveries")
    op.drop_table("svc_cdc_subscriptions")
