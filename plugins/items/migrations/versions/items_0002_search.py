"""items: the full-text search index (svc_search; FTS5 on SQLite, a GIN tsvector on PostgreSQL)

See plugins/items/search/index.py and docs/decisions/items-search.md. The index starts empty;
``search_index.index_missing`` fills it from existing items.
"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import site_column

revision = "items_0002_search"
down_revision = "items_0001_items"
branch_labels = None
depends_on = None
# The id this revision had before the `<plugin>_NNNN_<slug>` naming; kernel.db.migrate
# rewrites it in alembic_version so databases stamped with it keep upgrading.
renamed_from = "i0002_search"

# SQLite: the FTS5 table reads its text from svc_search (external content) and these triggers
# keep it in step with every insert, update and delete, cascades from svc_sites included.
SQLITE_FTS = [
    "CREATE VIRTUAL TABLE svc_search_fts USING fts5(scope, body, content='svc_search', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 0', prefix='2 3')",
    "CREATE TRIGGER svc_search_ai AFTER INSERT ON svc_search BEGIN "
    "INSERT INTO svc_search_fts(rowid, scope, body) VALUES (new.id, new.scope, new.body); END",
    "CREATE TRIGGER svc_search_ad AFTER DELETE ON svc_search BEGIN "
    "INSERT INTO svc_search_fts(svc_search_fts, rowid, scope, body) VALUES ('delete', old.id, old.scope, old.body); "
    "END",
    "CREATE TRIGGER svc_search_au AFTER UPDATE ON svc_search BEGIN "
    "INSERT INTO svc_search_fts(svc_search_fts, rowid, scope, body) VALUES ('delete', old.id, old.scope, old.body); "
    "INSERT INTO svc_search_fts(rowid, scope, body) VALUES (new.id, new.scope, new.body); END",
]


def _key_columns() -> list[sa.Column]:
    return [
        site_column(),
        sa.Column("collection_id", sa.String(36), sa.ForeignKey("svc_collections.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("item_id", sa.String(64), nullable=False),
        sa.Column("field", sa.String(64), nullable=False),
        sa.Column("scope", sa.String(32), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("norm", sa.Float, nullable=False),
    ]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.create_table(
            "svc_search", *_key_columns(),
            # The words were produced by plugins/items/search/text.py; no text-search parser or
            # dictionary runs here, so the locale of the cluster cannot change what matches.
            sa.Column("tsv", sa.dialects.postgresql.TSVECTOR,
                      sa.Computed("array_to_tsvector(string_to_array(body, ' '))", persisted=True)),
            sa.PrimaryKeyConstraint("site_id", "collection_id", "item_id", "field", name="pk_svc_search"),
        )
        op.execute("CREATE INDEX ix_svc_search_tsv ON svc_search USING gin (tsv)")
        return
    # A stable INTEGER PRIMARY KEY: FTS5 external content addresses rows by rowid, which
    # VACUUM may renumber on a table without one.
    op.create_table("svc_search", sa.Column("id", sa.Integer, primary_key=True), *_key_columns())
    op.create_index("ux_svc_search_key", "svc_search", ["site_id", "collection_id", "item_id", "field"],
                    unique=True)
    for statement in SQLITE_FTS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        for name in ("svc_search_au", "svc_search_ad", "svc_search_ai"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS svc_search_fts")
    op.drop_table("svc_search")
