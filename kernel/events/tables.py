"""The event log's tables (kernel migration branch): the log, consumer checkpoints, retention.

``svc_events`` is append-only: rows are inserted by the write that causes them and deleted only
by retention (or with their site). Its order is ``(txid, id)``: ``id`` is a sequence taken at
insert, ``txid`` the writing transaction's id on PostgreSQL (``pg_current_xact_id()``, filled by
the column's server default) and ``0`` on SQLite, where one writer at a time makes ``id``
order commit order. See ``kernel/events/log.py`` for why the order is what it is.
"""

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    FetchedValue,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
)

from kernel.db.meta import metadata, site_column, timestamp_column

# INTEGER PRIMARY KEY on SQLite (an alias of the rowid, AUTOINCREMENT so an id is never
# reused after pruning); BIGSERIAL on PostgreSQL.
EVENT_ID = BigInteger().with_variant(Integer(), "sqlite")

events = Table(
    "svc_events",
    metadata,
    Column("id", EVENT_ID, primary_key=True, autoincrement=True),
    site_column(foreign_key=False),
    Column("txid", BigInteger, nullable=False, server_default=FetchedValue()),
    Column("type", String(80), nullable=False),
    Column("collection", String(64), nullable=True),
    Column("item_id", String(255), nullable=True),
    Column("fields", JSON, nullable=True),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    Column("request_id", String(128), nullable=True),
    Column("actor", String(64), nullable=True),
    Column("cause", String(300), nullable=True),
    Index("ix_svc_events_site_position", "site_id", "txid", "id"),
    sqlite_autoincrement=True,
)

checkpoints = Table(
    "svc_event_checkpoints",
    metadata,
    site_column(foreign_key=False),
    Column("consumer", String(100), nullable=False),
    Column("cursor_txid", BigInteger, nullable=False),
    Column("cursor_id", BigInteger, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("retry_at", DateTime(timezone=True), nullable=True),
    Column("last_error", String(500), nullable=True),
    Column("lease_owner", String(64), nullable=True),
    Column("lease_until", DateTime(timezone=True), nullable=True),
    timestamp_column("updated_at"),
    PrimaryKeyConstraint("site_id", "consumer"),
    Index("ix_svc_event_checkpoints_retry_at", "retry_at"),
    Index("ix_svc_event_checkpoints_lease_until", "lease_until"),
)

# One row per site whose old events were pruned: the position of the last pruned event. A
# cursor before it has lost events for good (the change feed answers 410 CURSOR_EXPIRED).
retention = Table(
    "svc_event_retention",
    metadata,
    site_column(primary_key=True, foreign_key=False),
    Column("pruned_txid", BigInteger, nullable=False),
    Column("pruned_id", BigInteger, nullable=False),
    Column("pruned_at", DateTime(timezone=True), nullable=False),
)
