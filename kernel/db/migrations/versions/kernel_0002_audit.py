"""kernel: audit trail"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column

revision = "kernel_0002_audit"
down_revision = "kernel_0001_sites"
branch_labels = None
depends_on = None
# The id this revision had before the `<plugin>_NNNN_<slug>` naming; kernel.db.migrate
# rewrites it in alembic_version so databases stamped with it keep upgrading.
renamed_from = "k0002_audit"


def upgrade() -> None:
    op.create_table(
        "svc_audit",
        id_column(),
        site_column(nullable=True, foreign_key=False),
        sa.Column("action", sa.String(60), nullable=False),
        sa.Column("actor_id", sa.String(36), nullable=True),
        sa.Column("actor_kind", sa.String(20), nullable=True),
        sa.Column("impersonator_id", sa.String(36), nullable=True),
        sa.Column("target_type", sa.String(40), nullable=True),
        sa.Column("target_id", sa.String(300), nullable=True),
        sa.Column("details", sa.JSON().with_variant(sa.dialects.postgresql.JSONB(), "postgresql"), nullable=True),
        sa.Column("ip", sa.String(64), nullable=True),
        sa.Column("request_id", sa.String(128), nullable=True),
        timestamp_column("created_at"),
    )
    op.create_index("ix_svc_audit_site_created", "svc_audit", ["site_id", "created_at"])


def downgrade() -> None:
    op.drop_table("svc_audit")
