"""The sites table (kernel migration branch)."""

from sqlalchemy import Column, String, Table

from kernel.db.meta import metadata, timestamp_column

sites = Table(
    "svc_sites",
    metadata,
    Column("id", String(63), primary_key=True),
    Column("name", String(200), nullable=False),
    timestamp_column("created_at"),
)
