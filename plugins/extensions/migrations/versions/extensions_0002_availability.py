"""extensions: what the instance admin offers a site (available, the most it may be granted)"""

import sqlalchemy as sa
from alembic import op

from kernel.db.meta import json_type as JSON

revision = "extensions_0002_availability"
down_revision = "extensions_0001_extensions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Not available until the instance admin says so: a site admin can enable nothing before.
    op.add_column("svc_extension_sites", sa.Column("available", sa.Boolean, nullable=False,
                                                   server_default=sa.false()))
    op.add_column("svc_extension_sites", sa.Column("max_granted", JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("svc_extension_sites") as batch:
        batch.drop_column("max_granted")
        batch.drop_column("available")
