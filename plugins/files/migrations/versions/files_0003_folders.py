"""files: folders (nested, per site) and a file's folder_id"""

import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamps

revision = "files_0003_folders"
down_revision = "files_0002_focal_point"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "svc_file_folders",
        id_column(),
        site_column(),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("parent_id", sa.String(36), sa.ForeignKey("svc_file_folders.id"), nullable=True),
        *timestamps(),
    )
    op.create_index("ix_svc_file_folders_site_parent", "svc_file_folders", ["site_id", "parent_id"])
    # No foreign key on svc_files.folder_id: SQLite cannot add one to an existing table without
    # rebuilding it; plugins/files/folders.py checks the id, and refuses to delete a folder in use.
    op.add_column("svc_files", sa.Column("folder_id", sa.String(36), nullable=True))
    op.create_index("ix_svc_files_site_folder", "svc_files", ["site_id", "folder_id"])


def downgrade() -> None:
    op.drop_index("ix_svc_files_site_folder", "svc_files")
    with op.batch_alter_table("svc_files") as batch:
        batch.drop_column("folder_id")
    op.drop_index("ix_svc_file_folders_site_parent", "svc_file_folders")
    op.drop_table("svc_file_folders")
