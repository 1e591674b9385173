"""items: kept group counts on PostgreSQL (svc_item_group_fields, svc_item_group_counts)

See plugins/items/read/group_counts.py and docs/decisions/items-group-counts.md. For each
(site, collection, field) in ``svc_item_group_fields``, statement triggers on ``svc_items`` append
``(value, +n/-n)`` delta rows to ``svc_item_group_counts`` for the live items a statement adds,
removes or changes, in the writing transaction. Only PostgreSQL has the triggers; on SQLite the
grouped count reads the field's expression index (covering there) and the tables stay empty.
"""
import sqlalchemy as sa
from alembic import op

from kernel.db.meta import site_column

revision = "items_0006_group_counts"
down_revision = "items_0005_revision_cause"
branch_labels = None
depends_on = None

# ``-n`` for the old rows' values and ``+n`` for the new ones', netted per value: an update that
# changes no counted field writes nothing.
_DELTAS = """
    INSERT INTO svc_item_group_counts (site_id, collection_id, field, value, n)
    SELECT site_id, collection_id, field, value, sum(d) FROM ({parts}) AS x
    GROUP BY site_id, collection_id, field, value HAVING sum(d) <> 0
    ORDER BY site_id, collection_id, field, value;
"""
_PART = """
    SELECT r.site_id, r.collection_id, g.field, r.data ->> g.field AS value, {sign} AS d FROM {rows} AS r
    JOIN svc_item_group_fields AS g ON g.site_id = r.site_id AND g.collection_id = r.collection_id
    WHERE r.deleted_at IS NULL"""


def _function(name: str, parts: list[tuple[str, str]]) -> str:
    body = _DELTAS.format(parts=" UNION ALL ".join(_PART.format(rows=rows, sign=sign) for rows, sign in parts))
    return (f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN{body}"
            "    RETURN NULL;\nEND $$")


PG = [
    _function("svc_item_group_counts_insert", [("svc_new", "1")]),
    _function("svc_item_group_counts_delete", [("svc_old", "-1")]),
    _function("svc_item_group_counts_update", [("svc_old", "-1"), ("svc_new", "1")]),
    "CREATE TRIGGER svc_items_group_insert AFTER INSERT ON svc_items REFERENCING NEW TABLE AS svc_new "
    "FOR EACH STATEMENT EXECUTE FUNCTION svc_item_group_counts_insert()",
    "CREATE TRIGGER svc_items_group_delete AFTER DELETE ON svc_items REFERENCING OLD TABLE AS svc_old "
    "FOR EACH STATEMENT EXECUTE FUNCTION svc_item_group_counts_delete()",
    "CREATE TRIGGER svc_items_group_update AFTER UPDATE ON svc_items REFERENCING OLD TABLE AS svc_old "
    "NEW TABLE AS svc_new FOR EACH STATEMENT EXECUTE FUNCTION svc_item_group_counts_update()",
]
TRIGGERS = ("svc_items_group_insert", "svc_items_group_delete", "svc_items_group_update")
FUNCTIONS = ("svc_item_group_counts_insert", "svc_item_group_counts_delete", "svc_item_group_counts_update")


def upgrade() -> None:
    # No foreign keys: a site's or collection's cascade deletes its items, and their triggers
    # write here while the parent row is going (as svc_item_counts).
    op.create_table(
        "svc_item_group_fields",
        site_column(foreign_key=False),
        sa.Column("collection_id", sa.String(36), nullable=False),
        sa.Column("field", sa.String(64), nullable=False),
        sa.Column("ready", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("site_id", "collection_id", "field", name="pk_svc_item_group_fields"),
    )
    pg = op.get_bind().dialect.name == "postgresql"
    op.create_table(
        "svc_item_group_counts",
        site_column(foreign_key=False),
        sa.Column("collection_id", sa.String(36), nullable=False),
        sa.Column("field", sa.String(64), nullable=False),
        sa.Column("slot", sa.BigInteger, *([sa.Identity()] if pg else []), nullable=False),
        sa.Column("value", sa.Text, nullable=True),
        sa.Column("n", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("site_id", "collection_id", "field", "slot", name="pk_svc_item_group_counts"),
    )
    op.create_index("ix_svc_item_group_counts_value", "svc_item_group_counts",
                    ["site_id", "collection_id", "field", "value"])
    if pg:
        for statement in PG:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for name in TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON svc_items")
        for fn in FUNCTIONS:
            op.execute(f"DROP FUNCTION IF EXISTS {fn}()")
    op.drop_index("ix_svc_item_group_counts_value", table_name="svc_item_group_counts")
    op.drop_table("svc_item_group_counts")
    op.drop_table("svc_item_group_fields")
