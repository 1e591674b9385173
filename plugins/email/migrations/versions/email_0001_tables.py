"""email: layouts, templates, suppressions, queued batches

Revision ID: email_0001_tables
Revises:
Create Date: 2026-11-26
"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import json_type as JSON
from kernel.db.meta import site_column

revision = "email_0001_tables"
down_revision = None
branch_labels = ("email",)
depends_on = ("kernel_0001_sites",)


def upgrade() -> None:
    op.create_table(
        "svc_email_layouts",
        sa.Column("id", sa.String(36), primary_key=True),
        site_column(),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("html", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_svc_email_layouts_site", "svc_email_layouts", ["site_id"])
    op.create_table(
        "svc_email_templates",
        sa.Column("id", sa.String(36), primary_key=True),
        site_column(),
        sa.Column("key", sa.String(100), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("subject", sa.String(998), nullable=False),
        sa.Column("html", sa.Text, nullable=True),
        sa.Column("text", sa.Text, nullable=True),
        sa.Column("layout_id", sa.String(36), sa.ForeignKey("svc_email_layouts.id"), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("site_id", "key", name="uq_svc_email_templates_site_key"),
    )
    op.create_table(
        "svc_email_suppressions",
        site_column(primary_key=True),
        sa.Column("email", sa.String(320), primary_key=True),
        sa.Column("reason", sa.String(300), nullable=True),
        sa.Column("source", sa.String(20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "svc_email_batches",
        sa.Column("id", sa.String(36), primary_key=True),
        site_column(),
        sa.Column("category", sa.String(20), nullable=False),
        sa.Column("message", JSON, nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("svc_email_batches")
    op.drop_table("svc_email_suppressions")
    op.drop_table("svc_email_templates")
    op.drop_index("ix_svc_email_layouts_site", "svc_email_layouts")
    op.drop_table("svc_email_layouts")
