"""flows: flows and their runs"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "flows_0001_flows"
down_revision = None
branch_labels = ("flows",)
depends_on = ("kernel_0001_sites",)


def upgrade() -> None:
    op.create_table(
        "svc_flows",
        id_column(),
        site_column(),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("trigger", sa.String(10), nullable=False),
        sa.Column("trigger_options", JSON, nullable=False),
        sa.Column("graph", JSON, nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=True),
        sa.Column("next_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("saved_by", sa.String(36), nullable=True),
        *timestamps(),
    )
    op.create_index("ix_svc_flows_site_trigger", "svc_flows", ["site_id", "trigger", "status"])
    op.create_index("ix_svc_flows_due", "svc_flows", ["next_run_at"])
    op.create_table(
        "svc_flow_runs",
        id_column(),
        site_column(),
        sa.Column("flow_id", sa.String(36), sa.ForeignKey("svc_flows.id", ondelete="CASCADE"), nullable=False),
        sa.Column("trigger", sa.String(10), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("actor", JSON, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("input", JSON, nullable=True),
        sa.Column("steps", JSON, nullable=False),
        sa.Column("error", JSON, nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("duration_ms", sa.Integer, nullable=True),
    )
    op.create_index("ix_svc_flow_runs_flow", "svc_flow_runs", ["site_id", "flow_id", "started_at"])
    op.create_index("ix_svc_flow_runs_started", "svc_flow_runs", ["started_at"])


def downgrade() -> None:
    op.drop_table("svc_flow_runs")
    op.drop_table("svc_flows")
