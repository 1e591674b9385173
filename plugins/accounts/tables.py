"""Identity tables. Users are global identities (email unique, case-insensitive); their
membership of sites, with a role in each, belongs to the access layer."""

from sqlalchemy import Boolean, Column, DateTime, Integer, String, Table

from kernel.db.meta import metadata

users = Table(
    "svc_users",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("email", String(320), nullable=False, unique=True),
    Column("password_hash", String(255), nullable=True),
    Column("first_name", String(200), nullable=True),
    Column("last_name", String(200), nullable=True),
    Column("avatar", String(500), nullable=True),
    Column("status", String(20), nullable=False, default="active"),
    Column("is_instance_admin", Boolean, nullable=False, default=False),
    Column("token_version", Integer, nullable=False, default=1),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)
