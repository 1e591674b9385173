"""The flows plugin's tables: flows and their runs.

A webhook flow's token is stored as its SHA-256 (``token_hash``), never in clear; an event
flow's position in the event log is the kernel checkpoint ``flows.event:<flow id>``.
"""

from sqlalchemy import Column, DateTime, ForeignKey, Index, Integer, String, Table

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamps

flows = Table(
    "svc_flows",
    metadata,
    id_column(),
    site_column(),
    Column("name", String(100), nullable=False),
    Column("status", String(10), nullable=False),
    Column("trigger", String(10), nullable=False),
    Column("trigger_options", json_type, nullable=False),
    Column("graph", json_type, nullable=False),
    Column("token_hash", String(64), nullable=True),
    Column("next_run_at", DateTime(timezone=True), nullable=True),
    Column("saved_by", String(36), nullable=True),
    *timestamps(),
    Index("ix_svc_flows_site_trigger", "site_id", "trigger", "status"),
    Index("ix_svc_flows_due", "next_run_at"),
)

runs = Table(
    "svc_flow_runs",
    metadata,
    id_column(),
    site_column(),
    Column("flow_id", String(36), ForeignKey("svc_flows.id", ondelete="CASCADE"), nullable=False),
    Column("trigger", String(10), nullable=False),
    Column("status", String(10), nullable=False),
    Column("actor", json_type, nullable=True),
    Column("attempts", Integer, nullable=False, default=0),
    Column("input", json_type, nullable=True),
    Column("steps", json_type, nullable=False),
    Column("error", json_type, nullable=True),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=True),
    Column("duration_ms", Integer, nullable=True),
    Index("ix_svc_flow_runs_flow", "site_id", "flow_id", "started_at"),
    Index("ix_svc_flow_runs_started", "started_at"),
)
