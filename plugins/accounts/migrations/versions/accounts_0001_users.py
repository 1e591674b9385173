"""accounts: users"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, timestamps

revision = "accounts_0001_users"
down_revision = None
branch_labels = ("accounts",)
depends_on = "kernel_0001_sites"
# The id this revision had before the `<plugin>_NNNN_<slug>` naming; kernel.db.migrate
# rewrites it in alembic_version so databases stamped with it keep upgrading.
renamed_from = "a0001_users"


def upgrade() -> None:
    op.create_table(
        "svc_users",
        id_column(),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=True),
        sa.Column("first_name", sa.String(200), nullable=True),
        sa.Column("last_name", sa.String(200), nullable=True),
        sa.Column("avatar", sa.String(500), nullable=True),
        sa.Column("status", sa.String(20), nullable=False, server_default="active"),
        sa.Column("is_instance_admin", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("token_version", sa.Integer, nullable=False, server_default="1"),
        *timestamps(),
        sa.UniqueConstraint("email", name="uq_svc_users_email"),
    )


def downgrade() -> None:
    op.drop_table("svc_users")
