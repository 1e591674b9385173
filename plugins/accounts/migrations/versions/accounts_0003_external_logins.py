"""accounts: OpenID Connect logins waiting for their authorization code"""

import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column

revision = "accounts_0003_external_logins"
down_revision = "accounts_0002_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "svc_external_logins",
        id_column(),
        site_column(),
        sa.Column(
            "issuer_id", sa.String(36), sa.ForeignKey("svc_issuers.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("state_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("redirect_uri", sa.String(2000), nullable=False),
        timestamp_column("created_at"),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("code_hash", sa.String(64), nullable=True),
    )
    op.create_index("ix_svc_external_logins_site_expires", "svc_external_logins", ["site_id", "expires_at"])


def downgrade() -> None:
    op.drop_table("svc_external_logins")
