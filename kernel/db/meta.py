"""Shared SQLAlchemy metadata and column helpers used by every plugin's ``tables.py``."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, Column, DateTime, ForeignKey, MetaData, String
from sqlalchemy.dialects.postgresql import JSONB

from kernel.base.timestamps import iso as iso  # here too: the tables' modules import it from here

# One naming convention so Alembic migrations name constraints the same on both dialects.
metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# JSONB on PostgreSQL (GIN-indexable containment), JSON1 text on SQLite.
json_type = JSON().with_variant(JSONB(), "postgresql")


def site_column(*, primary_key: bool = False, nullable: bool = False, foreign_key: bool = True) -> Column:
    """The ``site_id`` column of a site-scoped table: the site's id (``String(63)``), NOT NULL
    unless ``nullable``, a foreign key to ``svc_sites`` that deletes the row with its site unless
    ``foreign_key=False`` (tables written far more often than sites change, or instance rows).

    ``tables.py`` modules and Alembic migrations both build their column here. A migration is
    history: what this returns must never change; a new shape is a new parameter whose default
    keeps the old one."""
    args = (ForeignKey("svc_sites.id", ondelete="CASCADE"),) if foreign_key else ()
    return Column("site_id", String(63), *args, primary_key=primary_key, nullable=nullable and not primary_key)


def id_column() -> Column:
    """The ``id`` primary key of a table whose rows are named by a UUID (``kernel.base.ids.uuid7``):
    ``String(36)``. History like ``site_column``: what this returns must never change."""
    return Column("id", String(36), primary_key=True)


def timestamp_column(name: str) -> Column:
    """A NOT NULL, timezone-aware ``DateTime`` column (``created_at``, ``updated_at``). History
    like ``site_column``: what this returns must never change."""
    return Column(name, DateTime(timezone=True), nullable=False)


def timestamps() -> tuple[Column, Column]:
    """``created_at`` and ``updated_at``, in that order: the pair most tables end with."""
    return timestamp_column("created_at"), timestamp_column("updated_at")


def dialect_insert(dialect: str) -> Any:
    """The ``insert`` with ``on_conflict_do_nothing``/``on_conflict_do_update`` of ``dialect``
    (``"postgresql"``, else SQLite): both spell an upsert the same way, from different classes."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert


def now_utc() -> dt.datetime:
    """The current time, timezone-aware UTC."""
    return dt.datetime.now(dt.UTC)


def aware(value: dt.datetime | None) -> dt.datetime | None:
    """``value`` with its time zone: SQLite hands back naive datetimes, which are UTC here."""
    if value is not None and value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value
