"""Access-control tables: roles, memberships, policies, permission rules, attachments, teams.

Every table carries ``site_id``: a role, policy or team belongs to one site, and a user's
membership of a site (with its one role there) is a row here, not on the global identity.

A ``user_id`` is accounts' ``svc_users.id``, held without a foreign key: accounts stands on access,
never the other way (docs/decisions/accounts-over-access.md), and removes a deleted identity's
rows here through ``api.forget_user`` (migration access_0002_users_apart dropped the keys).
"""

from sqlalchemy import Boolean, Column, ForeignKey, Index, String, Table, UniqueConstraint

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamp_column

roles = Table(
    "svc_roles",
    metadata,
    id_column(),
    site_column(),
    Column("name", String(200), nullable=False),
    Column("parent_id", String(36), nullable=True),
    Column("admin_access", Boolean, nullable=False, default=False),
    Column("system_key", String(40), nullable=True),
    timestamp_column("created_at"),
    UniqueConstraint("site_id", "name", name="uq_svc_roles_site_name"),
    UniqueConstraint("site_id", "system_key", name="uq_svc_roles_site_system_key"),
)

memberships = Table(
    "svc_memberships",
    metadata,
    site_column(primary_key=True),
    Column("user_id", String(36), primary_key=True),  # accounts' svc_users.id, no foreign key (the module's note)
    Column("role_id", String(36), ForeignKey("svc_roles.id"), nullable=False),
    timestamp_column("created_at"),
    Index("ix_svc_memberships_user", "user_id"),
)

policies = Table(
    "svc_policies",
    metadata,
    id_column(),
    site_column(),
    Column("name", String(200), nullable=False),
    Column("admin_access", Boolean, nullable=False, default=False),
    Column("system_key", String(40), nullable=True),
    timestamp_column("created_at"),
    UniqueConstraint("site_id", "name", name="uq_svc_policies_site_name"),
)

permissions = Table(
    "svc_permissions",
    metadata,
    id_column(),
    site_column(),
    Column("policy_id", String(36), ForeignKey("svc_policies.id", ondelete="CASCADE"), nullable=False),
    Column("collection", String(64), nullable=False),
    Column("action", String(20), nullable=False),
    Column("fields", json_type, nullable=False),
    Column("conditions", json_type, nullable=True),
    timestamp_column("created_at"),
    Index("ix_svc_permissions_policy", "policy_id"),
)

# Exactly one of role_id, user_id, team_id is set.
attachments = Table(
    "svc_policy_attachments",
    metadata,
    id_column(),
    site_column(),
    Column("policy_id", String(36), ForeignKey("svc_policies.id", ondelete="CASCADE"), nullable=False),
    Column("role_id", String(36), ForeignKey("svc_roles.id", ondelete="CASCADE"), nullable=True),
    Column("user_id", String(36), nullable=True),  # accounts' svc_users.id
    Column("team_id", String(36), ForeignKey("svc_teams.id", ondelete="CASCADE"), nullable=True),
    timestamp_column("created_at"),
    UniqueConstraint("policy_id", "role_id", "user_id", "team_id", name="uq_svc_policy_attachments_target"),
)

teams = Table(
    "svc_teams",
    metadata,
    id_column(),
    site_column(),
    Column("name", String(200), nullable=False),
    timestamp_column("created_at"),
    UniqueConstraint("site_id", "name", name="uq_svc_teams_site_name"),
)

team_members = Table(
    "svc_team_members",
    metadata,
    site_column(),
    Column("team_id", String(36), ForeignKey("svc_teams.id", ondelete="CASCADE"), primary_key=True),
    Column("user_id", String(36), primary_key=True),  # accounts' svc_users.id, no foreign key (the module's note)
)
