"""settings: the per-site settings table"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import json_type as JSON
from kernel.db.meta import site_column, timestamp_column

revision = "settings_0001_settings"
down_revision = None
branch_labels = ("settings",)
depends_on = ("kernel_0001_sites",)


def upgrade() -> None:
    op.create_table(
        "svc_settings",
        site_column(),
        sa.Column("key", sa.String(100), nullable=False),
        sa.Column("value", JSON, nullable=True),
        sa.Column("sealed", sa.Text, nullable=True),
        timestamp_column("updated_at"),
        sa.Column("updated_by", sa.String(36), nullable=True),
        sa.PrimaryKeyConstraint("site_id", "key", name="pk_svc_settings"),
    )


def downgrade() -> None:
    op.drop_table("svc_settings")
