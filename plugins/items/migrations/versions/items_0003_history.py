"""items: revisions, named versions and field pins"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "items_0003_history"
down_revision = "items_0002_search"
branch_labels = None
depends_on = None
# The id this revision had before the `<plugin>_NNNN_<slug>` naming; kernel.db.migrate
# rewrites it in alembic_version so databases stamped with it keep upgrading.
renamed_from = "i0003_history"


def _keys(collection_in_key: bool) -> list[sa.Column]:
    """Site and collection columns: rows go with their site or collection, like the items."""
    return [
        site_column(primary_key=True),
        sa.Column("collection_id", sa.String(36), sa.ForeignKey("svc_collections.id", ondelete="CASCADE"),
                  nullable=False, primary_key=collection_in_key),
    ]


def upgrade() -> None:
    site, collection = _keys(False)
    op.create_table(
        "svc_item_revisions",
        site,
        id_column(),
        collection,
        sa.Column("item_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("staged", sa.Boolean, nullable=False),
        sa.Column("data", JSON, nullable=False),
        sa.Column("delta", JSON, nullable=False),
        sa.Column("origin", JSON, nullable=True),
        sa.Column("actor_kind", sa.String(20), nullable=True),
        sa.Column("actor_id", sa.String(36), nullable=True),
        sa.Column("api_key_id", sa.String(36), nullable=True),
        sa.Column("impersonator_id", sa.String(36), nullable=True),
        timestamp_column("created_at"),
        sa.Column("committed_at", sa.DateTime(timezone=True), nullable=True),
    )
    # An item's revisions, newest first (the list route), and the purge after a hard delete.
    op.create_index("ix_svc_item_revisions_item", "svc_item_revisions",
                    ["site_id", "collection_id", "item_id", "created_at"])
    site, collection = _keys(True)
    op.create_table(
        "svc_item_versions",
        site,
        collection,
        sa.Column("item_id", sa.String(64), primary_key=True),
        sa.Column("key", sa.String(63), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("data", JSON, nullable=False),
        sa.Column("base", JSON, nullable=False),
        sa.Column("base_updated_at", sa.DateTime(timezone=True), nullable=False),
        *timestamps(),
        sa.Column("user_created", sa.String(36), nullable=True),
        sa.Column("user_updated", sa.String(36), nullable=True),
    )
    site, collection = _keys(True)
    op.create_table(
        "svc_item_pins",
        site,
        collection,
        sa.Column("item_id", sa.String(64), primary_key=True),
        sa.Column("field", sa.String(64), primary_key=True),
        sa.Column("holder_kind", sa.String(20), nullable=False),
        sa.Column("holder_id", sa.String(64), nullable=False),
        sa.Column("reason", sa.String(500), nullable=True),
        timestamp_column("created_at"),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("svc_item_pins")
    op.drop_table("svc_item_versions")
    op.drop_index("ix_svc_item_revisions_item", table_name="svc_item_revisions")
    op.drop_table("svc_item_revisions")
