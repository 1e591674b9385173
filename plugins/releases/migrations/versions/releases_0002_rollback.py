"""releases: what a rollback returns each item to, and when a release was rolled back

``svc_release_items.previous_revision_id`` and ``previous_status``: the item's revision and
status before the release's writes, recorded in the publish transaction. Null for entries
published before this column existed (they cannot be rolled back) and for entries not published.
"""

import sqlalchemy as sa
from alembic import op

revision = "releases_0002_rollback"
down_revision = "releases_0001_tables"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("svc_release_items", sa.Column("previous_revision_id", sa.String(36), nullable=True))
    op.add_column("svc_release_items", sa.Column("previous_status", sa.String(40), nullable=True))
    op.add_column("svc_releases", sa.Column("rolled_back_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("svc_release_items") as batch:
        batch.drop_column("previous_status")
        batch.drop_column("previous_revision_id")
    with op.batch_alter_table("svc_releases") as batch:
        batch.drop_column("rolled_back_at")
