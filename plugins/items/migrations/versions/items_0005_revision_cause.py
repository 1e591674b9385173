"""items: the cause of a write on its revision (svc_item_revisions.caused_by)

``release:<id>``, ``flow-run:<id>``, ``revert:<revisionId>``, ``promote:<version>``: the
``cause=`` given to ``plugins.items.api`` (see plugins/items/history/revisions.py). Null for writes
without one (REST) and for revisions written before this column existed.
"""
import sqlalchemy as sa
from alembic import op

revision = "items_0005_revision_cause"
down_revision = "items_0004_counts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("svc_item_revisions", sa.Column("caused_by", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("svc_item_revisions") as batch:
        batch.drop_column("caused_by")
