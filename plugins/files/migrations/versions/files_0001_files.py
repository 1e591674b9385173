"""files: files, tags, pending uploads, transform presets"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "files_0001_files"
down_revision = None
branch_labels = ("files",)
depends_on = ("kernel_0001_sites",)


def upgrade() -> None:
    op.create_table(
        "svc_files",
        id_column(),
        site_column(),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("storage_key", sa.String(1024), nullable=False),
        sa.Column("title", sa.String(255), nullable=True),
        sa.Column("type", sa.String(127), nullable=False),
        sa.Column("filesize", sa.BigInteger, nullable=False),
        sa.Column("width", sa.Integer, nullable=True),
        sa.Column("height", sa.Integer, nullable=True),
        sa.Column("checksum", sa.String(64), nullable=False),
        sa.Column("folder", sa.String(255), nullable=True),
        sa.Column("tags", JSON, nullable=False),
        sa.Column("uploaded_by", sa.String(64), nullable=True),
        *timestamps(),
        sa.UniqueConstraint("site_id", "key", name="uq_svc_files_site_key"),
    )
    op.create_index("ix_svc_files_site_created", "svc_files", ["site_id", "created_at"])
    op.create_table(
        "svc_file_tags",
        site_column(),
        sa.Column("file_id", sa.String(36), sa.ForeignKey("svc_files.id", ondelete="CASCADE"), nullable=False),
        sa.Column("tag", sa.String(100), nullable=False),
        sa.UniqueConstraint("file_id", "tag", name="uq_svc_file_tags_file_tag"),
    )
    op.create_index("ix_svc_file_tags_site_tag", "svc_file_tags", ["site_id", "tag"])
    op.create_table(
        "svc_file_uploads",
        id_column(),
        site_column(),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("type", sa.String(127), nullable=False),
        sa.Column("storage_key", sa.String(1024), nullable=False),
        sa.Column("created_by", sa.String(64), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        timestamp_column("created_at"),
    )
    op.create_table(
        "svc_transform_presets",
        id_column(),
        site_column(),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("dsl", sa.String(1000), nullable=False),
        *timestamps(),
        sa.UniqueConstraint("site_id", "key", name="uq_svc_transform_presets_site_key"),
    )


def downgrade() -> None:
    for table in ("svc_transform_presets", "svc_file_uploads", "svc_file_tags", "svc_files"):
        op.drop_table(table)
