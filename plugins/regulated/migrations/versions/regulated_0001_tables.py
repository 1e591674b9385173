"""regulated: key state, data keys, field-access log

Revision ID: regulated_0001_tables
Revises:
Create Date: 2026-11-26
"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import site_column

revision = "regulated_0001_tables"
down_revision = None
branch_labels = ("regulated",)
depends_on = "kernel_0001_sites"


def upgrade() -> None:
    op.create_table(
        "svc_regulated_state",
        site_column(primary_key=True),
        sa.Column("envelope_enabled", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("active_key_id", sa.String(32), nullable=True),
        sa.Column("migration", sa.String(10), nullable=True),
        sa.Column("cursor_collection", sa.String(64), nullable=True),
        sa.Column("cursor_item", sa.String(64), nullable=True),
        sa.Column("migrated", sa.Integer, nullable=False, server_default="0"),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "svc_regulated_keys",
        site_column(primary_key=True),
        sa.Column("key_id", sa.String(32), primary_key=True),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("retired_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "svc_regulated_data_keys",
        site_column(primary_key=True),
        sa.Column("collection", sa.String(64), primary_key=True),
        sa.Column("item_id", sa.String(64), primary_key=True),
        sa.Column("key_id", sa.String(32), nullable=True),
        sa.Column("wrapped", sa.Text, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("shredded_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_svc_regulated_data_keys_key", "svc_regulated_data_keys", ["site_id", "key_id"])
    op.create_table(
        "svc_regulated_field_access",
        sa.Column("id", sa.String(36), primary_key=True),
        site_column(),
        sa.Column("actor_id", sa.String(64), nullable=True),
        sa.Column("actor_kind", sa.String(20), nullable=True),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("item_id", sa.String(64), nullable=False),
        sa.Column("field", sa.String(64), nullable=False),
        sa.Column("purpose", sa.String(10), nullable=False),
        sa.Column("request_id", sa.String(64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_svc_regulated_field_access_site", "svc_regulated_field_access", ["site_id", "created_at"])


def downgrade() -> None:
    op.drop_table("svc_regulated_field_access")
    op.drop_table("svc_regulated_data_keys")
    op.drop_table("svc_regulated_keys")
    op.drop_table("svc_regulated_state")
