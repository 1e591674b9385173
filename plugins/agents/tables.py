"""The agents plugin's tables, every one by site (docs/decisions/agents.md is the model)."""

from sqlalchemy import Column, DateTime, Index, Integer, String, Table, Text, UniqueConstraint

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamp_column, timestamps

# The role library; ``level`` is the role's grant (the trust ledger), ``level_changed_at`` when it
# last moved (incidents after it count towards the next demotion).
roles = Table(
    "svc_agent_roles", metadata,
    id_column(), site_column(),
    Column("name", String(64), nullable=False),
    Column("description", String(2000), nullable=False),
    Column("skills", json_type, nullable=False),
    Column("collections", json_type, nullable=False),
    Column("level", String(12), nullable=False),
    Column("level_changed_at", DateTime(timezone=True), nullable=False),
    Column("budget", json_type, nullable=False),
    *timestamps(),
    UniqueConstraint("site_id", "name", name="uq_svc_agent_roles_name"),
)

goals = Table(
    "svc_agent_goals", metadata,
    id_column(), site_column(),
    Column("parent_id", String(36), nullable=True),
    Column("root_id", String(36), nullable=False),
    Column("intent_id", String(36), nullable=True),
    Column("title", String(200), nullable=False),
    Column("description", Text, nullable=False),
    Column("role", String(64), nullable=True),
    Column("status", String(16), nullable=False),
    Column("execution", String(8), nullable=False),
    Column("budget", json_type, nullable=False),
    Column("used", json_type, nullable=False),
    Column("reserved", json_type, nullable=False),
    Column("principal", json_type, nullable=False),
    Column("owner", String(80), nullable=False),
    Column("steps", json_type, nullable=False),
    Column("error", json_type, nullable=True),
    *timestamps(),
    Index("ix_svc_agent_goals_site", "site_id", "created_at"),
    Index("ix_svc_agent_goals_root", "site_id", "root_id"),
)

stagings = Table(
    "svc_agent_stagings", metadata,
    id_column(), site_column(),
    Column("goal_id", String(36), nullable=False),
    Column("role", String(64), nullable=True),
    Column("operation", String(8), nullable=False),
    Column("collection", String(64), nullable=False),
    Column("item_id", String(200), nullable=True),
    Column("before", json_type, nullable=True),
    Column("after", json_type, nullable=True),
    Column("base_marker", String(80), nullable=True),
    Column("status", String(12), nullable=False),
    Column("level", String(12), nullable=False),
    Column("apply_at", DateTime(timezone=True), nullable=True),
    Column("reason", String(500), nullable=True),
    Column("decided_by", String(80), nullable=True),
    *timestamps(),
    Index("ix_svc_agent_stagings_status", "site_id", "status", "created_at"),
)

# Every agent write attempt (applied, staged or blocked): the constitution's rate limits and the
# dry-run read it.
actions = Table(
    "svc_agent_actions", metadata,
    id_column(), site_column(),
    Column("goal_id", String(36), nullable=False),
    Column("role", String(64), nullable=True),
    Column("operation", String(8), nullable=False),
    Column("collection", String(64), nullable=False),
    Column("item_id", String(200), nullable=True),
    Column("data", json_type, nullable=True),
    Column("outcome", String(12), nullable=False),
    timestamp_column("created_at"),
    Index("ix_svc_agent_actions_site", "site_id", "created_at"),
)

incidents = Table(
    "svc_agent_incidents", metadata,
    id_column(), site_column(),
    Column("role", String(64), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("weight", Integer, nullable=False),
    Column("detail", json_type, nullable=False),
    Column("status", String(12), nullable=False),
    timestamp_column("created_at"),
    Index("ix_svc_agent_incidents_role", "site_id", "role", "created_at"),
)

promotions = Table(
    "svc_agent_promotions", metadata,
    id_column(), site_column(),
    Column("role", String(64), nullable=False),
    Column("from_level", String(12), nullable=False),
    Column("level", String(12), nullable=False),
    Column("reason", String(2000), nullable=True),
    Column("status", String(12), nullable=False),
    Column("proposed_by", String(80), nullable=False),
    Column("decided_by", String(80), nullable=True),
    timestamp_column("created_at"),
    Column("decided_at", DateTime(timezone=True), nullable=True),
    Index("ix_svc_agent_promotions_site", "site_id", "status", "created_at"),
)

constitutions = Table(
    "svc_agent_constitutions", metadata,
    id_column(), site_column(),
    Column("version", Integer, nullable=False),
    Column("note", String(500), nullable=True),
    Column("rules", json_type, nullable=False),
    Column("status", String(12), nullable=False),
    Column("created_by", String(80), nullable=False),
    timestamp_column("created_at"),
    Column("compiled_at", DateTime(timezone=True), nullable=True),
    Column("activated_at", DateTime(timezone=True), nullable=True),
    UniqueConstraint("site_id", "version", name="uq_svc_agent_constitutions_version"),
)

freezes = Table(
    "svc_agent_freezes", metadata,
    id_column(), site_column(),
    Column("scope", String(8), nullable=False),
    Column("target", String(64), nullable=True),
    Column("reason", String(500), nullable=True),
    Column("created_by", String(80), nullable=False),
    timestamp_column("created_at"),
    Column("lifted_by", String(80), nullable=True),
    Column("lifted_at", DateTime(timezone=True), nullable=True),
    Index("ix_svc_agent_freezes_active", "site_id", "lifted_at"),
)

intents = Table(
    "svc_agent_intents", metadata,
    id_column(), site_column(),
    Column("key", String(64), nullable=False),
    Column("title", String(200), nullable=False),
    Column("description", Text, nullable=False),
    Column("role", String(64), nullable=True),
    Column("trigger", json_type, nullable=False),
    Column("budget", json_type, nullable=True),
    Column("status", String(8), nullable=False),
    Column("source", String(200), nullable=False),
    Column("principal", json_type, nullable=False),
    Column("next_run_at", DateTime(timezone=True), nullable=True),
    Column("last_goal_id", String(36), nullable=True),
    *timestamps(),
    UniqueConstraint("site_id", "key", name="uq_svc_agent_intents_key"),
    Index("ix_svc_agent_intents_due", "status", "next_run_at"),
)

# Approvals an agent's goal requested: self-review is judged on the goal tree.
approval_links = Table(
    "svc_agent_approval_links", metadata,
    Column("approval_id", String(36), primary_key=True), site_column(),
    Column("goal_id", String(36), nullable=False),
    Column("root_id", String(36), nullable=False),
)
