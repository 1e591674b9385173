"""kernel: the durable event log, consumer checkpoints, retention watermarks"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import site_column, timestamp_column

revision = "kernel_0004_events"
down_revision = "kernel_0003_jobs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    # The writing transaction's id (xid8, 64 bits, never wraps) on PostgreSQL; 0 on SQLite.
    txid_default = sa.text("(pg_current_xact_id()::text::bigint)") if postgres else sa.text("0")
    op.create_table(
        "svc_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True,
                  autoincrement=True),
        site_column(foreign_key=False),
        sa.Column("txid", sa.BigInteger, nullable=False, server_default=txid_default),
        sa.Column("type", sa.String(80), nullable=False),
        sa.Column("collection", sa.String(64), nullable=True),
        sa.Column("item_id", sa.String(255), nullable=True),
        sa.Column("fields", sa.JSON, nullable=True),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("request_id", sa.String(128), nullable=True),
        sa.Column("actor", sa.String(64), nullable=True),
        sa.Column("cause", sa.String(300), nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_svc_events_site_position", "svc_events", ["site_id", "txid", "id"])
    if postgres:
        # The dispatcher's scan for sites with new events, across sites, by transaction id.
        op.create_index("ix_svc_events_txid", "svc_events", ["txid"])
    op.create_table(
        "svc_event_checkpoints",
        site_column(foreign_key=False),
        sa.Column("consumer", sa.String(100), nullable=False),
        sa.Column("cursor_txid", sa.BigInteger, nullable=False),
        sa.Column("cursor_id", sa.BigInteger, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("retry_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.String(500), nullable=True),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        timestamp_column("updated_at"),
        sa.PrimaryKeyConstraint("site_id", "consumer", name="pk_svc_event_checkpoints"),
    )
    op.create_index("ix_svc_event_checkpoints_retry_at", "svc_event_checkpoints", ["retry_at"])
    op.create_index("ix_svc_event_checkpoints_lease_until", "svc_event_checkpoints", ["lease_until"])
    op.create_table(
        "svc_event_retention",
        site_column(primary_key=True, foreign_key=False),
        sa.Column("pruned_txid", sa.BigInteger, nullable=False),
        sa.Column("pruned_id", sa.BigInteger, nullable=False),
        sa.Column("pruned_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("svc_event_retention")
    op.drop_table("svc_event_checkpoints")
    op.drop_table("svc_events")
