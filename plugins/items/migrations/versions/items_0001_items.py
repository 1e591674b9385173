"""items: the items table"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import site_column, timestamps

revision = "items_0001_items"
down_revision = None
branch_labels = ("items",)
depends_on = ("kernel_0001_sites", "schema_0001_schema")
# The id this revision had before the `<plugin>_NNNN_<slug>` naming; kernel.db.migrate
# rewrites it in alembic_version so databases stamped with it keep upgrading.
renamed_from = "i0001_items"

LIVE = sa.text("deleted_at IS NULL")


def upgrade() -> None:
    op.create_table(
        "svc_items",
        site_column(primary_key=True),
        sa.Column("collection_id", sa.String(36), sa.ForeignKey("svc_collections.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("status", sa.String(40), nullable=False),
        sa.Column("sort", sa.Integer, nullable=True),
        sa.Column("data", sa.JSON().with_variant(sa.dialects.postgresql.JSONB(), "postgresql"), nullable=False),
        *timestamps(),
        sa.Column("user_created", sa.String(36), nullable=True),
        sa.Column("user_updated", sa.String(36), nullable=True),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_svc_items_live", "svc_items", ["site_id", "collection_id", "id"],
                    sqlite_where=LIVE, postgresql_where=LIVE)
    if op.get_bind().dialect.name == "postgresql":
        # Containment (@>) and key-existence (?, ?|, ?&) filters use this index.
        op.execute("CREATE INDEX ix_svc_items_data_gin ON svc_items USING gin (data jsonb_ops)")


def downgrade() -> None:
    op.drop_table("svc_items")
