"""The dashboards plugin's tables: dashboards and their panels, both by site."""

from sqlalchemy import Column, ForeignKey, Index, String, Table, Text

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamps

dashboards = Table(
    "svc_dashboards",
    metadata,
    id_column(),
    site_column(),
    Column("name", String(200), nullable=False),
    Column("icon", String(64), nullable=True),
    Column("color", String(32), nullable=True),
    Column("note", Text, nullable=True),
    Column("created_by", String(36), nullable=True),
    *timestamps(),
    Index("ix_svc_dashboards_site", "site_id", "created_at"),
)

panels = Table(
    "svc_dashboard_panels",
    metadata,
    id_column(),
    site_column(),
    Column("dashboard_id", String(36), ForeignKey("svc_dashboards.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("type", String(20), nullable=False),
    Column("position", json_type, nullable=False),
    Column("query", json_type, nullable=True),
    *timestamps(),
    Index("ix_svc_dashboard_panels_dashboard", "site_id", "dashboard_id", "created_at"),
)
