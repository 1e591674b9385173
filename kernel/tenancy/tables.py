"""The sites table (kernel migration branch)."""

from sqlalchemy import Column, DateTime, String, Table

from kernel.db.meta import metadata

sites = Table(
    "svc_sites",
    metadata,
    Column("id", String(63), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)
