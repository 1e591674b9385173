"""settings: site configuration, preferences, view presets, translation memory, glossary"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import id_column, site_column, timestamp_column, timestamps
from kernel.db.meta import json_type as JSON

revision = "settings_0002_site_presets_tm"
down_revision = "settings_0001_settings"
branch_labels = None
depends_on = ("accounts_0001_users",)


def upgrade() -> None:
    op.create_table(
        "svc_site_config",
        site_column(primary_key=True),
        sa.Column("domain", sa.String(253), nullable=True, unique=True),
        sa.Column("config", JSON, nullable=False),
        timestamp_column("updated_at"),
    )
    op.create_table(
        "svc_user_preferences",
        sa.Column("user_id", sa.String(36), sa.ForeignKey("svc_users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("data", JSON, nullable=False),
        timestamp_column("updated_at"),
    )
    op.create_table(
        "svc_presets",
        id_column(),
        site_column(),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=True),
        sa.Column("role_id", sa.String(36), nullable=True),
        sa.Column("bookmark", sa.String(200), nullable=True),
        sa.Column("layout", sa.String(64), nullable=True),
        sa.Column("layout_query", JSON, nullable=True),
        sa.Column("layout_options", JSON, nullable=True),
        sa.Column("filter", JSON, nullable=True),
        sa.Column("search", sa.String(500), nullable=True),
        sa.Column("icon", sa.String(64), nullable=True),
        sa.Column("color", sa.String(32), nullable=True),
        *timestamps(),
    )
    op.create_index("ix_svc_presets_site_collection", "svc_presets", ["site_id", "collection"])
    op.create_table(
        "svc_tm_entries",
        id_column(),
        site_column(),
        sa.Column("source_lang", sa.String(35), nullable=False),
        sa.Column("target_lang", sa.String(35), nullable=False),
        sa.Column("source_hash", sa.String(64), nullable=False),
        sa.Column("source_text", sa.Text, nullable=False),
        sa.Column("target_text", sa.Text, nullable=False),
        sa.Column("quality", sa.Float, nullable=True),
        sa.Column("context", sa.String(500), nullable=True),
        sa.Column("source", sa.String(64), nullable=False),
        *timestamps(),
        sa.UniqueConstraint("site_id", "source_lang", "target_lang", "source_hash", name="uq_svc_tm_entries_text"),
    )
    op.create_index("ix_svc_tm_entries_pair_created", "svc_tm_entries",
                    ["site_id", "source_lang", "target_lang", "created_at"])
    op.create_table(
        "svc_glossary",
        id_column(),
        site_column(),
        sa.Column("source_lang", sa.String(35), nullable=False),
        sa.Column("target_lang", sa.String(35), nullable=False),
        sa.Column("term", sa.String(200), nullable=False),
        sa.Column("term_key", sa.String(200), nullable=False),
        sa.Column("translation", sa.String(500), nullable=False),
        timestamp_column("created_at"),
        sa.UniqueConstraint("site_id", "source_lang", "target_lang", "term_key", name="uq_svc_glossary_term"),
    )


def downgrade() -> None:
    for name in ("svc_glossary", "svc_tm_entries", "svc_presets", "svc_user_preferences", "svc_site_config"):
        op.drop_table(name)
