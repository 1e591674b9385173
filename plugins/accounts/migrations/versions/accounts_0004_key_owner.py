"""accounts: the owner of a personal API key (made by /me/api-keys); null for a site key"""

import sqlalchemy as sa
from alembic import op

revision = "accounts_0004_key_owner"
down_revision = "accounts_0003_external_logins"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # batch mode: SQLite adds a column with a foreign key only by rebuilding the table.
    with op.batch_alter_table("svc_api_keys") as batch:
        batch.add_column(sa.Column("owner_id", sa.String(36), nullable=True))
        batch.create_foreign_key(
            "fk_svc_api_keys_owner", "svc_users", ["owner_id"], ["id"], ondelete="CASCADE"
        )
        batch.create_index("ix_svc_api_keys_owner", ["owner_id"])


def downgrade() -> None:
    with op.batch_alter_table("svc_api_keys") as batch:
        batch.drop_index("ix_svc_api_keys_owner")
        batch.drop_constraint("fk_svc_api_keys_owner", type_="foreignkey")
        batch.drop_column("owner_id")
