"""editorial: workflow states and review requests"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column

revision = "editorial_0001_tables"
down_revision = None
branch_labels = ("editorial",)
depends_on = "kernel_0001_sites"


def upgrade() -> None:
    op.create_table(
        "svc_editorial_states",
        site_column(primary_key=True),
        sa.Column("collection", sa.String(64), primary_key=True),
        sa.Column("item_id", sa.String(64), primary_key=True),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("review_id", sa.String(36), nullable=True),
        timestamp_column("updated_at"),
    )
    op.create_table(
        "svc_editorial_reviews",
        id_column(),
        site_column(),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("item_id", sa.String(64), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("reviewer_id", sa.String(36), nullable=False),
        sa.Column("submitted_by", sa.String(36), nullable=True),
        sa.Column("author_id", sa.String(36), nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        timestamp_column("created_at"),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("decided_by", sa.String(36), nullable=True),
    )
    op.create_index("ix_svc_editorial_reviews_site", "svc_editorial_reviews", ["site_id", "state", "created_at"])
    op.create_index("ix_svc_editorial_reviews_item", "svc_editorial_reviews", ["site_id", "collection", "item_id"])


def downgrade() -> None:
    op.drop_table("svc_editorial_reviews")
    op.drop_table("svc_editorial_states")
