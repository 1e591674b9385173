"""email: a site's own SMTP server (password sealed)"""

import sqlalchemy as sa
from alembic import op

from kernel.db.meta import site_column, timestamp_column

revision = "email_0002_smtp"
down_revision = "email_0001_tables"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "svc_email_smtp",
        site_column(primary_key=True),
        sa.Column("host", sa.String(253), nullable=False),
        sa.Column("port", sa.Integer, nullable=False),
        sa.Column("username", sa.String(320), nullable=True),
        sa.Column("password", sa.Text, nullable=True),
        sa.Column("tls", sa.String(10), nullable=False),
        sa.Column("sender", sa.String(320), nullable=True),
        timestamp_column("updated_at"),
    )


def downgrade() -> None:
    op.drop_table("svc_email_smtp")
