"""files: a file's description (free text beside its title)"""

import sqlalchemy as sa
from alembic import op

revision = "files_0004_description"
down_revision = "files_0003_folders"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("svc_files", sa.Column("description", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("svc_files") as batch:
        batch.drop_column("description")
