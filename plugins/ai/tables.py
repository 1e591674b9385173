"""The ai plugin's tables: conversations and their messages, approvals, MCP sessions.

Every row has ``site_id``; a conversation belongs to one owner (``owner``: ``user:<id>`` or
``key:<api key id>``), and so do its messages. An approval keeps the requester's
``accounts.api.principal_record`` (no secret) so the gated action runs with the requester's
permissions as they are when it is approved.
"""

from sqlalchemy import Column, DateTime, ForeignKey, Index, Integer, String, Table, Text

from kernel.db.meta import id_column, json_type, metadata, site_column, timestamp_column, timestamps

conversations = Table(
    "svc_ai_conversations",
    metadata,
    id_column(),
    site_column(),
    Column("owner", String(80), nullable=False),
    Column("title", String(200), nullable=False),
    *timestamps(),
    Index("ix_svc_ai_conversations_owner", "site_id", "owner", "updated_at"),
    Index("ix_svc_ai_conversations_updated", "updated_at"),
)

messages = Table(
    "svc_ai_messages",
    metadata,
    id_column(),
    site_column(),
    Column("conversation_id", String(36), ForeignKey("svc_ai_conversations.id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("role", String(12), nullable=False),
    Column("content", Text, nullable=True),
    Column("skill", String(64), nullable=True),
    Column("arguments", json_type, nullable=True),
    Column("result", json_type, nullable=True),
    Column("raw", json_type, nullable=True),
    Column("approval_id", String(36), nullable=True),
    timestamp_column("created_at"),
    Index("ix_svc_ai_messages_conversation", "site_id", "conversation_id", "seq"),
)

approvals = Table(
    "svc_ai_approvals",
    metadata,
    id_column(),
    site_column(),
    Column("conversation_id", String(36), nullable=True),
    Column("requester", json_type, nullable=False),
    Column("requester_owner", String(80), nullable=False),
    Column("skill", String(64), nullable=False),
    Column("arguments", json_type, nullable=False),
    Column("summary", String(500), nullable=False),
    Column("status", String(12), nullable=False),
    Column("result", json_type, nullable=True),
    Column("error", json_type, nullable=True),
    Column("decided_by", String(80), nullable=True),
    timestamp_column("created_at"),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("decided_at", DateTime(timezone=True), nullable=True),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Index("ix_svc_ai_approvals_status", "site_id", "status", "created_at"),
)

mcp_sessions = Table(
    "svc_ai_mcp_sessions",
    metadata,
    Column("id", String(64), primary_key=True),
    site_column(),
    Column("owner", String(80), nullable=False),
    timestamp_column("created_at"),
    Column("last_used_at", DateTime(timezone=True), nullable=False),
    Index("ix_svc_ai_mcp_sessions_used", "last_used_at"),
)
