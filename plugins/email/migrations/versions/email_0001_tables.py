"""email: layouts, templates, suppressions, queued batches"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "email_0001_tables"
down_revision = None
branch_labels = ("email",)
depends_on = ("kernel_0001_sites",)


def upgrade() -> None:
    op.create_table(
        "svc_email_layouts",
        id_column(),
        site_column(),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("html", sa.Text, nullable=False),
        *timestamps(),
    )
    op.create_index("ix_svc_email_layouts_site", "svc_email_layouts", ["site_id"])
    op.create_table(
        "svc_email_templates",
        id_column(),
        site_column(),
        sa.Column("key", sa.String(100), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("subject", sa.String(998), nullable=False),
        sa.Column("html", sa.Text, nullable=True),
        sa.Column("text", sa.Text, nullable=True),
        sa.Column("layout_id", sa.String(36), sa.ForeignKey("svc_email_layouts.id"), nullable=True),
        *timestamps(),
        sa.UniqueConstraint("site_id", "key", name="uq_svc_email_templates_site_key"),
    )
    op.create_table(
        "svc_email_suppressions",
        site_column(primary_key=True),
        sa.Column("email", sa.String(320), primary_key=True),
        sa.Column("reason", sa.String(300), nullable=True),
        sa.Column("source", sa.String(20), nullable=False),
        timestamp_column("created_at"),
    )
    op.create_table(
        "svc_email_batches",
        id_column(),
        site_column(),
        sa.Column("category", sa.String(20), nullable=False),
        sa.Column("message", JSON, nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        timestamp_column("created_at"),
    )


def downgrade() -> None:
    op.drop_table("svc_email_batches")
    op.drop_table("svc_email_suppressions")
    op.drop_table("svc_email_templates")
    op.drop_index("ix_svc_email_layouts_site", "svc_email_layouts")
    op.drop_table("svc_email_layouts")
