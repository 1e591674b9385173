"""kernel: sites

Revision ID: k0001_sites
Revises:
Create Date: 2026-11-21
"""
import sqlalchemy as sa
from alembic import op

revision = "k0001_sites"
down_revision = None
branch_labels = ("kernel",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "svc_sites",
        sa.Column("id", sa.String(63), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("svc_sites")
