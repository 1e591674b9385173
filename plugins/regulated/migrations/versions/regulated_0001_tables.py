"""regulated: key state, data keys, field-access log"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column

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
        timestamp_column("updated_at"),
    )
    op.create_table(
        "svc_regulated_keys",
        site_column(primary_key=True),
        sa.Column("key_id", sa.String(32), primary_key=True),
        sa.Column("status", sa.String(10), nullable=False),
        timestamp_column("created_at"),
        sa.Column("retired_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "svc_regulated_data_keys",
        site_column(primary_key=True),
        sa.Column("collection", sa.String(64), primary_key=True),
        sa.Column("item_id", sa.String(64), primary_key=True),
        sa.Column("key_id", sa.String(32), nullable=True),
        sa.Column("wrapped", sa.Text, nullable=True),
        timestamp_column("created_at"),
        sa.Column("shredded_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_svc_regulated_data_keys_key", "svc_regulated_data_keys", ["site_id", "key_id"])
    op.create_table(
        "svc_regulated_field_access",
        id_column(),
        site_column(),
        sa.Column("actor_id", sa.String(64), nullable=True),
        sa.Column("actor_kind", sa.String(20), nullable=True),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("item_id", sa.String(64), nullable=False),
        sa.Column("field", sa.String(64), nullable=False),
        sa.Column("purpose", sa.String(10), nullable=False),
        sa.Column("request_id", sa.String(64), nullable=True),
        timestamp_column("created_at"),
    )
    op.create_index("ix_svc_regulated_field_access_site", "svc_regulated_field_access", ["site_id", "created_at"])


def downgrade() -> None:
    op.drop_table("svc_regulated_field_access")
    op.drop_table("svc_regulated_data_keys")
    op.drop_table("svc_regulated_keys")
    op.drop_table("svc_regulated_state")
