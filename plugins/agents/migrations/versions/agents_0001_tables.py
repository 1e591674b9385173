"""agents: roles, goals, stagings, actions, incidents, promotions, constitutions, freezes, intents"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "agents_0001_tables"
down_revision = None
branch_labels = ("agents",)
depends_on = "kernel_0001_sites"


def upgrade() -> None:
    op.create_table(
        "svc_agent_roles",
        id_column(),
        site_column(),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("description", sa.String(2000), nullable=False),
        sa.Column("skills", JSON, nullable=False),
        sa.Column("collections", JSON, nullable=False),
        sa.Column("level", sa.String(12), nullable=False),
        sa.Column("level_changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("budget", JSON, nullable=False),
        *timestamps(),
        sa.UniqueConstraint("site_id", "name", name="uq_svc_agent_roles_name"),
    )
    op.create_table(
        "svc_agent_goals",
        id_column(),
        site_column(),
        sa.Column("parent_id", sa.String(36), nullable=True),
        sa.Column("root_id", sa.String(36), nullable=False),
        sa.Column("intent_id", sa.String(36), nullable=True),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("role", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("execution", sa.String(8), nullable=False),
        sa.Column("budget", JSON, nullable=False),
        sa.Column("used", JSON, nullable=False),
        sa.Column("reserved", JSON, nullable=False),
        sa.Column("principal", JSON, nullable=False),
        sa.Column("owner", sa.String(80), nullable=False),
        sa.Column("steps", JSON, nullable=False),
        sa.Column("error", JSON, nullable=True),
        *timestamps(),
    )
    op.create_index("ix_svc_agent_goals_site", "svc_agent_goals", ["site_id", "created_at"])
    op.create_index("ix_svc_agent_goals_root", "svc_agent_goals", ["site_id", "root_id"])
    op.create_table(
        "svc_agent_stagings",
        id_column(),
        site_column(),
        sa.Column("goal_id", sa.String(36), nullable=False),
        sa.Column("role", sa.String(64), nullable=True),
        sa.Column("operation", sa.String(8), nullable=False),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("item_id", sa.String(200), nullable=True),
        sa.Column("before", JSON, nullable=True),
        sa.Column("after", JSON, nullable=True),
        sa.Column("base_marker", sa.String(80), nullable=True),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("level", sa.String(12), nullable=False),
        sa.Column("apply_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reason", sa.String(500), nullable=True),
        sa.Column("decided_by", sa.String(80), nullable=True),
        *timestamps(),
    )
    op.create_index("ix_svc_agent_stagings_status", "svc_agent_stagings", ["site_id", "status", "created_at"])
    op.create_table(
        "svc_agent_actions",
        id_column(),
        site_column(),
        sa.Column("goal_id", sa.String(36), nullable=False),
        sa.Column("role", sa.String(64), nullable=True),
        sa.Column("operation", sa.String(8), nullable=False),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("item_id", sa.String(200), nullable=True),
        sa.Column("data", JSON, nullable=True),
        sa.Column("outcome", sa.String(12), nullable=False),
        timestamp_column("created_at"),
    )
    op.create_index("ix_svc_agent_actions_site", "svc_agent_actions", ["site_id", "created_at"])
    op.create_table(
        "svc_agent_incidents",
        id_column(),
        site_column(),
        sa.Column("role", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("weight", sa.Integer, nullable=False),
        sa.Column("detail", JSON, nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        timestamp_column("created_at"),
    )
    op.create_index("ix_svc_agent_incidents_role", "svc_agent_incidents", ["site_id", "role", "created_at"])
    op.create_table(
        "svc_agent_promotions",
        id_column(),
        site_column(),
        sa.Column("role", sa.String(64), nullable=False),
        sa.Column("from_level", sa.String(12), nullable=False),
        sa.Column("level", sa.String(12), nullable=False),
        sa.Column("reason", sa.String(2000), nullable=True),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("proposed_by", sa.String(80), nullable=False),
        sa.Column("decided_by", sa.String(80), nullable=True),
        timestamp_column("created_at"),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_svc_agent_promotions_site", "svc_agent_promotions", ["site_id", "status", "created_at"])
    op.create_table(
        "svc_agent_constitutions",
        id_column(),
        site_column(),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("note", sa.String(500), nullable=True),
        sa.Column("rules", JSON, nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("created_by", sa.String(80), nullable=False),
        timestamp_column("created_at"),
        sa.Column("compiled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("activated_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("site_id", "version", name="uq_svc_agent_constitutions_version"),
    )
    op.create_table(
        "svc_agent_freezes",
        id_column(),
        site_column(),
        sa.Column("scope", sa.String(8), nullable=False),
        sa.Column("target", sa.String(64), nullable=True),
        sa.Column("reason", sa.String(500), nullable=True),
        sa.Column("created_by", sa.String(80), nullable=False),
        timestamp_column("created_at"),
        sa.Column("lifted_by", sa.String(80), nullable=True),
        sa.Column("lifted_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_svc_agent_freezes_active", "svc_agent_freezes", ["site_id", "lifted_at"])
    op.create_table(
        "svc_agent_intents",
        id_column(),
        site_column(),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("role", sa.String(64), nullable=True),
        sa.Column("trigger", JSON, nullable=False),
        sa.Column("budget", JSON, nullable=True),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("principal", JSON, nullable=False),
        sa.Column("next_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_goal_id", sa.String(36), nullable=True),
        *timestamps(),
        sa.UniqueConstraint("site_id", "key", name="uq_svc_agent_intents_key"),
    )
    op.create_index("ix_svc_agent_intents_due", "svc_agent_intents", ["status", "next_run_at"])
    op.create_table(
        "svc_agent_approval_links",
        sa.Column("approval_id", sa.String(36), primary_key=True),
        site_column(),
        sa.Column("goal_id", sa.String(36), nullable=False),
        sa.Column("root_id", sa.String(36), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("svc_agent_approval_links")
    op.drop_table("svc_agent_intents")
    op.drop_table("svc_agent_freezes")
    op.drop_table("svc_agent_constitutions")
    op.drop_table("svc_agent_promotions")
    op.drop_table("svc_agent_incidents")
    op.drop_table("svc_agent_actions")
    op.drop_table("svc_agent_stagings")
    op.drop_table("svc_agent_goals")
    op.drop_table("svc_agent_roles")
