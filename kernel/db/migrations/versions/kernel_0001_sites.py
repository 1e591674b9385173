"""kernel: sites"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import timestamp_column

revision = "kernel_0001_sites"
down_revision = None
branch_labels = ("kernel",)
depends_on = None
# The id this revision had before the `<plugin>_NNNN_<slug>` naming; kernel.db.migrate
# rewrites it in alembic_version so databases stamped with it keep upgrading.
renamed_from = "k0001_sites"


def upgrade() -> None:
    op.create_table(
        "svc_sites",
        sa.Column("id", sa.String(63), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        timestamp_column("created_at"),
    )


def downgrade() -> None:
    op.drop_table("svc_sites")
