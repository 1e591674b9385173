"""access: a user id is a plain column, without a foreign key to accounts' svc_users

accounts stands on access, never the other way (docs/decisions/accounts-over-access.md): the
memberships, team memberships and policy attachments of a user are removed by accounts through
``access.api.forget_user`` when it deletes the identity, where the foreign keys' ON DELETE
CASCADE used to remove them.
"""

from alembic import op

revision = "access_0002_users_apart"
down_revision = "access_0001_access"
branch_labels = None
depends_on = None

# (table, foreign key name: the metadata's naming convention, as access_0001 created them)
USER_KEYS = (
    ("svc_memberships", "fk_svc_memberships_user_id_svc_users"),
    ("svc_team_members", "fk_svc_team_members_user_id_svc_users"),
    ("svc_policy_attachments", "fk_svc_policy_attachments_user_id_svc_users"),
)


def upgrade() -> None:
    # batch mode: SQLite drops a foreign key only by rebuilding the table.
    for table, name in USER_KEYS:
        with op.batch_alter_table(table) as batch:
            batch.drop_constraint(name, type_="foreignkey")


def downgrade() -> None:
    for table, name in USER_KEYS:
        with op.batch_alter_table(table) as batch:
            batch.create_foreign_key(name, "svc_users", ["user_id"], ["id"], ondelete="CASCADE")
