"""extensions: installed bundles, per-site enablement and grants, stored publisher keys"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "extensions_0001_extensions"
down_revision = None
branch_labels = ("extensions",)
depends_on = ("kernel_0001_sites",)


def upgrade() -> None:
    op.create_table(
        "svc_extensions",
        id_column(),
        sa.Column("name", sa.String(63), nullable=False, unique=True),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("publisher", sa.String(63), nullable=False),
        sa.Column("manifest", JSON, nullable=False),
        sa.Column("bundle", sa.LargeBinary, nullable=False),
        sa.Column("signature", sa.Text, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("signature_state", sa.String(16), nullable=False),
        sa.Column("is_official", sa.Boolean, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("status_reason", sa.Text, nullable=True),
        sa.Column("installed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("installed_by", sa.String(36), nullable=True),
    )
    op.create_table(
        "svc_extension_sites",
        site_column(),
        sa.Column("extension_id", sa.String(36), sa.ForeignKey("svc_extensions.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("granted", JSON, nullable=False),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.Column("disabled_reason", sa.Text, nullable=True),
        timestamp_column("updated_at"),
        sa.PrimaryKeyConstraint("site_id", "extension_id", name="pk_svc_extension_sites"),
    )
    op.create_index("ix_svc_extension_sites_extension", "svc_extension_sites", ["extension_id"])
    op.create_table(
        "svc_extension_keys",
        id_column(),
        sa.Column("publisher", sa.String(63), nullable=False),
        sa.Column("public_key", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        *timestamps(),
        sa.UniqueConstraint("publisher", "public_key", name="uq_svc_extension_keys"),
    )


def downgrade() -> None:
    op.drop_table("svc_extension_keys")
    op.drop_index("ix_svc_extension_sites_extension", "svc_extension_sites")
    op.drop_table("svc_extension_sites")
    op.drop_table("svc_extensions")
