"""files: a file's focal point (focal_x, focal_y: pixels of the original), used by cover crops"""

import sqlalchemy as sa
from alembic import op

revision = "files_0002_focal_point"
down_revision = "files_0001_files"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("svc_files", sa.Column("focal_x", sa.Integer, nullable=True))
    op.add_column("svc_files", sa.Column("focal_y", sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("svc_files") as batch:
        batch.drop_column("focal_y")
        batch.drop_column("focal_x")
