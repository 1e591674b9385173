"""privacy: consents, restrictions, erasure requests"""
import sqlalchemy as sa
import sqlalchemy.dialects.postgresql  # noqa: F401
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column

json_type = sa.JSON().with_variant(sa.dialects.postgresql.JSONB(), "postgresql")

revision = "privacy_0001_tables"
down_revision = None
branch_labels = ("privacy",)
depends_on = ("kernel_0001_sites", "accounts_0001_users")


def _user() -> sa.Column:
    return sa.Column("user_id", sa.String(36), sa.ForeignKey("svc_users.id", ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "svc_privacy_consents",
        site_column(), _user(),
        sa.Column("consent_type", sa.String(20), nullable=False),
        sa.Column("granted", sa.Boolean, nullable=False),
        sa.Column("granted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("withdrawn_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        timestamp_column("updated_at"),
        sa.PrimaryKeyConstraint("site_id", "user_id", "consent_type", name="pk_svc_privacy_consents"),
    )
    op.create_table(
        "svc_privacy_restrictions",
        site_column(), _user(),
        sa.Column("restricted", sa.Boolean, nullable=False),
        sa.Column("reason", sa.String(500), nullable=True),
        timestamp_column("updated_at"),
        sa.PrimaryKeyConstraint("site_id", "user_id", name="pk_svc_privacy_restrictions"),
    )
    op.create_table(
        "svc_privacy_erasures",
        id_column(),
        site_column(),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("subject_hash", sa.String(64), nullable=False),
        sa.Column("filter_fields", json_type, nullable=False),
        sa.Column("item_ids", json_type, nullable=False),
        sa.Column("reason", sa.String(500), nullable=False),
        sa.Column("status", sa.String(30), nullable=False),
        sa.Column("dual_control", sa.Boolean, nullable=False),
        sa.Column("requested_by", sa.String(36), nullable=True),
        sa.Column("confirmed_by", sa.String(36), nullable=True),
        sa.Column("executed_by", sa.String(36), nullable=True),
        sa.Column("record_count", sa.Integer, nullable=True),
        timestamp_column("created_at"),
        sa.Column("confirmed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("executed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Index("ix_svc_privacy_erasures_site_created", "site_id", "created_at"),
    )


def downgrade() -> None:
    for name in ("svc_privacy_erasures", "svc_privacy_restrictions", "svc_privacy_consents"):
        op.drop_table(name)
