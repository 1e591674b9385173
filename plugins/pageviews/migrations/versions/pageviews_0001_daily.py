"""pageviews: daily rollups, the day's visitor hashes and daily salts"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import site_column

revision = "pageviews_0001_daily"
down_revision = None
branch_labels = ("pageviews",)
depends_on = ("kernel_0001_sites",)


def upgrade() -> None:
    op.create_table(
        "svc_pageview_daily", site_column(),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("path", sa.String(512), nullable=False),
        sa.Column("views", sa.BigInteger, nullable=False),
        sa.Column("uniques", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("site_id", "day", "path", name="pk_svc_pageview_daily"),
    )
    op.create_table(
        "svc_pageview_visitors", site_column(),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("path", sa.String(512), nullable=False),
        sa.Column("visitor", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("site_id", "day", "path", "visitor", name="pk_svc_pageview_visitors"),
    )
    op.create_table(
        "svc_pageview_salts", site_column(),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("salt", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("site_id", "day", name="pk_svc_pageview_salts"),
    )


def downgrade() -> None:
    op.drop_table("svc_pageview_salts")
    op.drop_table("svc_pageview_visitors")
    op.drop_table("svc_pageview_daily")
