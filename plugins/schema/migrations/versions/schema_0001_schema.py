"""schema: collections, fields, relations, schema versions"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "schema_0001_schema"
down_revision = None
branch_labels = ("schema",)
depends_on = ("kernel_0001_sites",)
# The id this revision had before the `<plugin>_NNNN_<slug>` naming; kernel.db.migrate
# rewrites it in alembic_version so databases stamped with it keep upgrading.
renamed_from = "s0001_schema"

LIVE = sa.text("deleted_at IS NULL")


def upgrade() -> None:
    op.create_table(
        "svc_collections",
        id_column(),
        site_column(),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("meta", JSON, nullable=False),
        sa.Column("detached_relations", JSON, nullable=True),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        *timestamps(),
    )
    op.create_index("uq_svc_collections_live_name", "svc_collections", ["site_id", "name"], unique=True,
                    sqlite_where=LIVE, postgresql_where=LIVE)
    op.create_table(
        "svc_fields",
        site_column(),
        sa.Column("collection_id", sa.String(36), sa.ForeignKey("svc_collections.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("field", sa.String(64), primary_key=True),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("type", sa.String(20), nullable=False),
        sa.Column("interface", sa.String(200), nullable=True),
        sa.Column("display", sa.String(200), nullable=True),
        sa.Column("options", JSON, nullable=False),
        sa.Column("required", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("sort", sa.Integer, nullable=False, server_default="0"),
        *timestamps(),
    )
    op.create_index("ix_svc_fields_site_collection", "svc_fields", ["site_id", "collection"])
    op.create_table(
        "svc_relations",
        id_column(),
        site_column(),
        sa.Column("type", sa.String(8), nullable=False),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("field", sa.String(64), nullable=False),
        sa.Column("related_collection", sa.String(64), nullable=True),
        sa.Column("related_collections", JSON, nullable=True),
        sa.Column("related_field", sa.String(64), nullable=True),
        sa.Column("on_delete", sa.String(10), nullable=False),
        *timestamps(),
        sa.UniqueConstraint("site_id", "collection", "field", name="uq_svc_relations_site_collection_field"),
    )
    op.create_table(
        "svc_schema_versions",
        site_column(primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
        timestamp_column("updated_at"),
    )


def downgrade() -> None:
    for name in ("svc_schema_versions", "svc_relations", "svc_fields", "svc_collections"):
        op.drop_table(name)
