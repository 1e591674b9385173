"""access: roles, memberships, policies, permissions, attachments, teams"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column
from kernel.db.meta import json_type as JSON

revision = "access_0001_access"
down_revision = None
branch_labels = ("access",)
depends_on = ("kernel_0001_sites", "accounts_0001_users")
# The id this revision had before the `<plugin>_NNNN_<slug>` naming; kernel.db.migrate
# rewrites it in alembic_version so databases stamped with it keep upgrading.
renamed_from = "c0001_access"


def upgrade() -> None:
    op.create_table(
        "svc_roles",
        id_column(),
        site_column(),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("parent_id", sa.String(36), nullable=True),
        sa.Column("admin_access", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("system_key", sa.String(40), nullable=True),
        timestamp_column("created_at"),
        sa.UniqueConstraint("site_id", "name", name="uq_svc_roles_site_name"),
        sa.UniqueConstraint("site_id", "system_key", name="uq_svc_roles_site_system_key"),
    )
    op.create_table(
        "svc_memberships",
        site_column(primary_key=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("svc_users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("role_id", sa.String(36), sa.ForeignKey("svc_roles.id"), nullable=False),
        timestamp_column("created_at"),
    )
    op.create_index("ix_svc_memberships_user", "svc_memberships", ["user_id"])
    op.create_table(
        "svc_policies",
        id_column(),
        site_column(),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("admin_access", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("system_key", sa.String(40), nullable=True),
        timestamp_column("created_at"),
        sa.UniqueConstraint("site_id", "name", name="uq_svc_policies_site_name"),
    )
    op.create_table(
        "svc_permissions",
        id_column(),
        site_column(),
        sa.Column("policy_id", sa.String(36), sa.ForeignKey("svc_policies.id", ondelete="CASCADE"), nullable=False),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("action", sa.String(20), nullable=False),
        sa.Column("fields", JSON, nullable=False),
        sa.Column("conditions", JSON, nullable=True),
        timestamp_column("created_at"),
    )
    op.create_index("ix_svc_permissions_policy", "svc_permissions", ["policy_id"])
    op.create_table(
        "svc_teams",
        id_column(),
        site_column(),
        sa.Column("name", sa.String(200), nullable=False),
        timestamp_column("created_at"),
        sa.UniqueConstraint("site_id", "name", name="uq_svc_teams_site_name"),
    )
    op.create_table(
        "svc_team_members",
        site_column(),
        sa.Column("team_id", sa.String(36), sa.ForeignKey("svc_teams.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("svc_users.id", ondelete="CASCADE"), primary_key=True),
    )
    op.create_table(
        "svc_policy_attachments",
        id_column(),
        site_column(),
        sa.Column("policy_id", sa.String(36), sa.ForeignKey("svc_policies.id", ondelete="CASCADE"), nullable=False),
        sa.Column("role_id", sa.String(36), sa.ForeignKey("svc_roles.id", ondelete="CASCADE"), nullable=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("svc_users.id", ondelete="CASCADE"), nullable=True),
        sa.Column("team_id", sa.String(36), sa.ForeignKey("svc_teams.id", ondelete="CASCADE"), nullable=True),
        timestamp_column("created_at"),
        sa.UniqueConstraint("policy_id", "role_id", "user_id", "team_id", name="uq_svc_policy_attachments_target"),
    )


def downgrade() -> None:
    for name in ("svc_policy_attachments", "svc_team_members", "svc_teams", "svc_permissions",
                 "svc_policies", "svc_memberships", "svc_roles"):
        op.drop_table(name)
