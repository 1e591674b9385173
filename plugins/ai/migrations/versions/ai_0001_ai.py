"""ai: conversations, messages, approvals, MCP sessions"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "ai_0001_ai"
down_revision = None
branch_labels = ("ai",)
depends_on = ("kernel_0001_sites",)


def upgrade() -> None:
    op.create_table(
        "svc_ai_conversations",
        id_column(),
        site_column(),
        sa.Column("owner", sa.String(80), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        *timestamps(),
    )
    op.create_index("ix_svc_ai_conversations_owner", "svc_ai_conversations", ["site_id", "owner", "updated_at"])
    op.create_index("ix_svc_ai_conversations_updated", "svc_ai_conversations", ["updated_at"])
    op.create_table(
        "svc_ai_messages",
        id_column(),
        site_column(),
        sa.Column("conversation_id", sa.String(36),
                  sa.ForeignKey("svc_ai_conversations.id", ondelete="CASCADE"), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("role", sa.String(12), nullable=False),
        sa.Column("content", sa.Text, nullable=True),
        sa.Column("skill", sa.String(64), nullable=True),
        sa.Column("arguments", JSON, nullable=True),
        sa.Column("result", JSON, nullable=True),
        sa.Column("raw", JSON, nullable=True),
        sa.Column("approval_id", sa.String(36), nullable=True),
        timestamp_column("created_at"),
    )
    op.create_index("ix_svc_ai_messages_conversation", "svc_ai_messages", ["site_id", "conversation_id", "seq"])
    op.create_table(
        "svc_ai_approvals",
        id_column(),
        site_column(),
        sa.Column("conversation_id", sa.String(36), nullable=True),
        sa.Column("requester", JSON, nullable=False),
        sa.Column("requester_owner", sa.String(80), nullable=False),
        sa.Column("skill", sa.String(64), nullable=False),
        sa.Column("arguments", JSON, nullable=False),
        sa.Column("summary", sa.String(500), nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("result", JSON, nullable=True),
        sa.Column("error", JSON, nullable=True),
        sa.Column("decided_by", sa.String(80), nullable=True),
        timestamp_column("created_at"),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_svc_ai_approvals_status", "svc_ai_approvals", ["site_id", "status", "created_at"])
    op.create_table(
        "svc_ai_mcp_sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        site_column(),
        sa.Column("owner", sa.String(80), nullable=False),
        timestamp_column("created_at"),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_svc_ai_mcp_sessions_used", "svc_ai_mcp_sessions", ["last_used_at"])


def downgrade() -> None:
    op.drop_table("svc_ai_mcp_sessions")
    op.drop_table("svc_ai_approvals")
    op.drop_table("svc_ai_messages")
    op.drop_table("svc_ai_conversations")
