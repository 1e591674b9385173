"""dashboards: dashboards and their panels"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "dashboards_0001_tables"
down_revision = None
branch_labels = ("dashboards",)
depends_on = "kernel_0001_sites"


def upgrade() -> None:
    op.create_table(
        "svc_dashboards",
        id_column(),
        site_column(),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("icon", sa.String(64), nullable=True),
        sa.Column("color", sa.String(32), nullable=True),
        sa.Column("note", sa.Text, nullable=True),
        sa.Column("created_by", sa.String(36), nullable=True),
        *timestamps(),
    )
    op.create_index("ix_svc_dashboards_site", "svc_dashboards", ["site_id", "created_at"])
    op.create_table(
        "svc_dashboard_panels",
        id_column(),
        site_column(),
        sa.Column("dashboard_id", sa.String(36), sa.ForeignKey("svc_dashboards.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("type", sa.String(20), nullable=False),
        sa.Column("position", JSON, nullable=False),
        sa.Column("query", JSON, nullable=True),
        *timestamps(),
    )
    op.create_index("ix_svc_dashboard_panels_dashboard", "svc_dashboard_panels",
                    ["site_id", "dashboard_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_svc_dashboard_panels_dashboard", table_name="svc_dashboard_panels")
    op.drop_table("svc_dashboard_panels")
    op.drop_index("ix_svc_dashboards_site", table_name="svc_dashboards")
    op.drop_table("svc_dashboards")
