"""accounts: refresh tokens, one-time tokens, API keys, trusted issuers, external identities"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column
from kernel.db.meta import json_type as JSON

revision = "accounts_0002_sessions"
down_revision = "accounts_0001_users"
branch_labels = None
depends_on = None
# The id this revision had before the `<plugin>_NNNN_<slug>` naming; kernel.db.migrate
# rewrites it in alembic_version so databases stamped with it keep upgrading.
renamed_from = "a0002_sessions_keys_issuers"


def _ts(name, nullable=True):
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _user():
    return sa.Column("user_id", sa.String(36), sa.ForeignKey("svc_users.id", ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "svc_refresh_tokens",
        id_column(),
        site_column(nullable=True, foreign_key=False),
        _user(),
        sa.Column("family_id", sa.String(36), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        _ts("created_at", False), _ts("expires_at", False), _ts("last_used_at"), _ts("rotated_at"), _ts("revoked_at"),
        sa.Column("user_agent", sa.String(300), nullable=True),
        sa.Column("ip", sa.String(64), nullable=True),
        sa.Column("impersonator_id", sa.String(36), nullable=True),
    )
    op.create_index("ix_svc_refresh_tokens_user", "svc_refresh_tokens", ["user_id"])
    op.create_index("ix_svc_refresh_tokens_family", "svc_refresh_tokens", ["family_id"])
    op.create_table(
        "svc_one_time_tokens",
        id_column(),
        site_column(nullable=True, foreign_key=False),
        _user(),
        sa.Column("purpose", sa.String(30), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        _ts("created_at", False), _ts("expires_at", False), _ts("used_at"),
    )
    op.create_table(
        "svc_api_keys",
        id_column(),
        site_column(),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("key_prefix", sa.String(16), nullable=False),
        sa.Column("role_id", sa.String(36), nullable=True),
        sa.Column("created_by", sa.String(36), nullable=True),
        _ts("created_at", False), _ts("expires_at"), _ts("last_used_at"),
    )
    op.create_table(
        "svc_issuers",
        id_column(),
        site_column(),
        sa.Column("issuer", sa.String(500), nullable=False),
        sa.Column("config", JSON, nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
        _ts("created_at", False), _ts("updated_at", False),
        sa.UniqueConstraint("site_id", "issuer", name="uq_svc_issuers_site_issuer"),
    )
    op.create_table(
        "svc_external_identities",
        site_column(primary_key=True),
        sa.Column("issuer_id", sa.String(36), sa.ForeignKey("svc_issuers.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("subject", sa.String(300), primary_key=True),
        _user(),
        _ts("created_at", False),
    )


def downgrade() -> None:
    for name in ("svc_external_identities", "svc_issuers", "svc_api_keys", "svc_one_time_tokens",
                 "svc_refresh_tokens"):
        op.drop_table(name)
