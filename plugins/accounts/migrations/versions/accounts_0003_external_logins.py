"""accounts: OpenID Connect logins waiting for their authorization code

Revision ID: accounts_0003_external_logins
Revises: accounts_0002_sessions
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

from kernel.db.meta import site_column

revision = "accounts_0003_external_logins"
down_revision = "accounts_0002_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "svc_external_logins",
        sa.Column("id", sa.String(36), primary_key=True),
        site_column(),
        sa.Column(
            "issuer_id", sa.String(36), sa.ForeignKey("svc_issuers.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("state_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("redirect_uri", sa.String(2000), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("code_hash", sa.String(64), nullable=True),
    )
    op.create_index("ix_svc_external_logins_site_expires", "svc_external_logins", ["site_id", "expires_at"])


def downgrade() -> None:
    op.drop_table("svc_external_logins")
