"""The change feed's tables: subscriptions and their delivery attempts.

A webhook subscription's position is the kernel's checkpoint ``cdc.webhook:<id>`` (the event
dispatcher moves it); a pull subscription's position is ``cursor_txid``/``cursor_id`` here,
moved by ``ack``. The secret is sealed with ``kernel.secrets`` (purpose ``cdc.webhook.secret``).
"""

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamps

subscriptions = Table(
    "svc_cdc_subscriptions",
    metadata,
    id_column(),
    site_column(),
    Column("name", String(100), nullable=False),
    Column("kind", String(10), nullable=False),
    Column("url", String(2048), nullable=True),
    Column("secret", Text, nullable=True),
    Column("collections", json_type, nullable=False),
    Column("operations", json_type, nullable=False),
    Column("status", String(10), nullable=False),
    Column("status_reason", String(300), nullable=True),
    Column("cursor_txid", BigInteger, nullable=True),
    Column("cursor_id", BigInteger, nullable=True),
    *timestamps(),
    UniqueConstraint("site_id", "name", name="uq_svc_cdc_subscriptions_site_name"),
)

deliveries = Table(
    "svc_cdc_deliveries",
    metadata,
    Column("id", Integer().with_variant(BigInteger, "postgresql"), primary_key=True, autoincrement=True),
    site_column(),
    Column("subscription_id", String(36), ForeignKey("svc_cdc_subscriptions.id", ondelete="CASCADE"),
           nullable=False),
    Column("delivery_id", String(36), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("status_code", Integer, nullable=True),
    Column("duration_ms", Integer, nullable=False),
    Column("error", String(500), nullable=True),
    Column("event_count", Integer, nullable=False),
    Column("first_event", String(60), nullable=True),
    Column("last_event", String(60), nullable=True),
    Column("attempted_at", DateTime(timezone=True), nullable=False),
    Index("ix_svc_cdc_deliveries_subscription", "subscription_id", "id"),
    Index("ix_svc_cdc_deliveries_attempted_at", "attempted_at"),
)
