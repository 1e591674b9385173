"""Tables of the realtime plugin: tickets (hashed), notifications, web-push subscriptions."""

from __future__ import annotations

from sqlalchemy import Column, DateTime, Index, String, Table, Text, UniqueConstraint

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamp_column, timestamps

# A ticket is stored as the SHA-256 of its secret part, never as itself; redeeming deletes it.
tickets = Table(
    "svc_realtime_tickets",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    site_column(),
    Column("audience", String(10), nullable=False),  # studio | audience
    Column("principal", json_type, nullable=False),  # kind, user/key/session ids, token version
    Column("collections", json_type, nullable=False),  # readable collections; ["*"] for all
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Index("ix_svc_realtime_tickets_expires", "expires_at"),
)

notifications = Table(
    "svc_notifications",
    metadata,
    id_column(),
    site_column(),
    Column("kind", String(100), nullable=False),
    Column("severity", String(10), nullable=False),
    Column("title", String(200), nullable=False),
    Column("body", Text, nullable=True),
    Column("deep_link", String(2000), nullable=True),
    Column("entity_id", String(200), nullable=True),
    timestamp_column("created_at"),
    Column("handled_at", DateTime(timezone=True), nullable=True),
    # One user the notification is for (their sessions, list and push subscriptions only);
    # NULL: every session of the site (the spec's broadcast).
    Column("recipient_id", String(36), nullable=True),
    Index("ix_svc_notifications_site_created", "site_id", "created_at"),
    Index("ix_svc_notifications_site_recipient", "site_id", "recipient_id"),
)

push_subscriptions = Table(
    "svc_push_subscriptions",
    metadata,
    id_column(),
    site_column(),
    Column("user_id", String(36), nullable=False),
    Column("realm", String(10), nullable=False),  # studio | frontend: notifications go to studio
    Column("endpoint", String(2000), nullable=False),
    Column("p256dh", String(100), nullable=False),
    Column("auth", String(40), nullable=False),
    *timestamps(),
    UniqueConstraint("site_id", "user_id", "endpoint", name="uq_svc_push_subscriptions_user_endpoint"),
)
