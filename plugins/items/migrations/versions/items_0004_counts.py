"""items: live item counts per collection, kept by triggers (svc_item_counts)

See plugins/items/read/counts.py. The triggers see every write to svc_items (the items service,
cascades from svc_sites and svc_collections, bulk loads by hand); only TRUNCATE bypasses them.
SQLite keeps one row per collection (its writers are serialized anyway); PostgreSQL appends a
delta row per statement, so concurrent writers never wait on one counter row, and
``counts.compact`` folds them.
"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import site_column

revision = "items_0004_counts"
down_revision = "items_0003_history"
branch_labels = None
depends_on = None
# The id this revision had before the `<plugin>_NNNN_<slug>` naming; kernel.db.migrate
# rewrites it in alembic_version so databases stamped with it keep upgrading.
renamed_from = "i0004_counts"

PG = [
    """CREATE FUNCTION svc_item_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO svc_item_counts (site_id, collection_id, n)
        SELECT site_id, collection_id, count(*) FROM svc_new WHERE deleted_at IS NULL
        GROUP BY site_id, collection_id ORDER BY site_id, collection_id;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION svc_item_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO svc_item_counts (site_id, collection_id, n)
        SELECT site_id, collection_id, -count(*) FROM svc_old WHERE deleted_at IS NULL
        GROUP BY site_id, collection_id ORDER BY site_id, collection_id;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION svc_item_counts_liveness() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO svc_item_counts (site_id, collection_id, n)
        VALUES (NEW.site_id, NEW.collection_id, CASE WHEN NEW.deleted_at IS NULL THEN 1 ELSE -1 END);
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER svc_items_count_insert AFTER INSERT ON svc_items REFERENCING NEW TABLE AS svc_new "
    "FOR EACH STATEMENT EXECUTE FUNCTION svc_item_counts_insert()",
    "CREATE TRIGGER svc_items_count_delete AFTER DELETE ON svc_items REFERENCING OLD TABLE AS svc_old "
    "FOR EACH STATEMENT EXECUTE FUNCTION svc_item_counts_delete()",
    "CREATE TRIGGER svc_items_count_liveness AFTER UPDATE OF deleted_at ON svc_items FOR EACH ROW "
    "WHEN ((OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL)) EXECUTE FUNCTION svc_item_counts_liveness()",
    "INSERT INTO svc_item_counts (site_id, collection_id, n) SELECT site_id, collection_id, count(*) "
    "FROM svc_items WHERE deleted_at IS NULL GROUP BY site_id, collection_id",
]

_SQLITE_ADD = ("INSERT INTO svc_item_counts (site_id, collection_id, slot, n) VALUES ({site}, {coll}, 0, {n}) "
               "ON CONFLICT (site_id, collection_id, slot) DO UPDATE SET n = n + excluded.n")
SQLITE = [
    "CREATE TRIGGER svc_items_count_insert AFTER INSERT ON svc_items WHEN NEW.deleted_at IS NULL BEGIN "
    + _SQLITE_ADD.format(site="NEW.site_id", coll="NEW.collection_id", n="1") + "; END",
    "CREATE TRIGGER svc_items_count_delete AFTER DELETE ON svc_items WHEN OLD.deleted_at IS NULL BEGIN "
    + _SQLITE_ADD.format(site="OLD.site_id", coll="OLD.collection_id", n="-1") + "; END",
    "CREATE TRIGGER svc_items_count_liveness AFTER UPDATE OF deleted_at ON svc_items "
    "WHEN (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL) BEGIN "
    + _SQLITE_ADD.format(site="NEW.site_id", coll="NEW.collection_id",
                         n="CASE WHEN NEW.deleted_at IS NULL THEN 1 ELSE -1 END") + "; END",
    "INSERT INTO svc_item_counts (site_id, collection_id, slot, n) SELECT site_id, collection_id, 0, count(*) "
    "FROM svc_items WHERE deleted_at IS NULL GROUP BY site_id, collection_id",
]


def upgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    # No foreign keys: a site's or collection's cascade deletes its items, and their triggers
    # write here while the parent row is going.
    op.create_table(
        "svc_item_counts",
        site_column(foreign_key=False),
        sa.Column("collection_id", sa.String(36), nullable=False),
        # PostgreSQL: a fresh number per delta row; SQLite: always 0, the collection's one row.
        sa.Column("slot", sa.BigInteger, *([sa.Identity()] if pg else []), nullable=False),
        sa.Column("n", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("site_id", "collection_id", "slot", name="pk_svc_item_counts"),
    )
    for statement in PG if pg else SQLITE:
        op.execute(statement)


def downgrade() -> None:
    for name in ("svc_items_count_insert", "svc_items_count_delete", "svc_items_count_liveness"):
        if op.get_bind().dialect.name == "postgresql":
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON svc_items")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    if op.get_bind().dialect.name == "postgresql":
        for fn in ("svc_item_counts_insert", "svc_item_counts_delete", "svc_item_counts_liveness"):
            op.execute(f"DROP FUNCTION IF EXISTS {fn}()")
    op.drop_table("svc_item_counts")
