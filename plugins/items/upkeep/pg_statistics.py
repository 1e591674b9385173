"""PostgreSQL: expression statistics for the text fields, so the planner knows their values.

The field indexes (indexes.py) are partial, one per collection, and PostgreSQL's planner does
not use a partial index's statistics to estimate a whole expression: for ``data ->> 'category'``
it assumes every row is a value of its own. A ``groupBy`` then looks like a million groups at
1,000,000 items, and the planner walks the field's index in order, expecting to stop after the
page's 25 groups, and reads every row through it (1.9 s) instead of hashing five groups.
Filters misjudge their selectivity the same way.

So each indexed field whose comparable expression is text (every type but the numeric ones)
gets one statistics object on ``data ->> '<field>'`` over the whole items table
(``CREATE STATISTICS``, PostgreSQL 14+): the same expression the compiler emits, so the
planner matches it. The object is table-wide and keyed by the field's name, so collections
that share a field name share it: the estimate mixes their values, which is still far closer
than none. Numeric fields get none: their expression casts to ``numeric``, and ``ANALYZE``
would evaluate that cast on other collections' rows, where the same key may hold text, and
fail. The objects are made when an indexed field is created or changed (after the commit,
with its index), at startup for the fields that exist (so an upgraded deployment gets them),
and dropped when no field of that name is left in any site. ``ANALYZE`` (autovacuum's, or
an operator's) fills them; with autovacuum off (startup logs a warning), nothing refreshes
any of the planner's statistics.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from sqlalchemy import column, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.exc import DBAPIError

from plugins.items.core import write_triggered
from plugins.items.query.sql.jsonpath import FIELD_KEY, NUMERIC_TYPES, raw_expr
from plugins.schema.api import field_in_use, indexed_fields

log = logging.getLogger("svc.items")
MIN_SERVER = (14,)  # CREATE STATISTICS on an expression
MAX_NAME = 63
TASK = "items.pg_statistics"  # the startup sync's task in kernel.state


def statistics_name(field: str) -> str:
    """``st_items_<field>`` (with a hash when the name is too long or not a plain key)."""
    name = f"st_items_{field}"
    if len(name) > MAX_NAME or not FIELD_KEY.match(field):
        name = f"st_items_{field[:30]}_{hashlib.sha1(field.encode()).hexdigest()[:8]}"
    return name


def wants_statistics(field: str, type_name: str | None) -> bool:
    return type_name not in NUMERIC_TYPES and bool(FIELD_KEY.match(field or ""))


def statistics_ddl(field: str) -> str:
    expr = raw_expr("postgresql", column("data"), field).compile(
        dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True})
    return f'CREATE STATISTICS IF NOT EXISTS "{statistics_name(field)}" ON (({expr})) FROM svc_items'


def _supported(conn: Any) -> bool:
    """The PostgreSQL server of ``conn`` takes statistics on expressions."""
    return tuple(conn.dialect.server_version_info or (0,)) >= MIN_SERVER


async def ensure(kernel: Any, field: str, type_name: str | None) -> None:
    """Make the field's statistics object if it wants one and has none."""
    if kernel.db.dialect != "postgresql" or not wants_statistics(field, type_name):
        return
    async with kernel.db.begin() as conn:
        if _supported(conn):
            await conn.execute(text(statistics_ddl(field)))


async def drop_unused(kernel: Any, field: str) -> None:
    """Drop the field name's statistics object once no site has a field of that name."""
    if kernel.db.dialect != "postgresql" or not FIELD_KEY.match(field or ""):
        return
    async with kernel.db.begin() as conn:
        if _supported(conn) and not await field_in_use(conn, field):
            await conn.execute(text(f'DROP STATISTICS IF EXISTS "{statistics_name(field)}"'))


async def sync(kernel: Any) -> int:
    """At startup: make the objects every existing indexed text field wants and lacks; returns
    how many field names want one. Only the missing ones are made: ``CREATE STATISTICS`` locks
    the items table against ``VACUUM`` and ``ANALYZE`` (and waits for a running one), which
    every worker's start would otherwise do for every name."""
    if kernel.db.dialect != "postgresql":
        return 0
    async with kernel.db.connect() as conn:
        if (await conn.execute(text("SHOW autovacuum"))).scalar_one() != "on":
            log.warning("PostgreSQL's autovacuum is off: the items' planner statistics go stale as items "
                        "are written, and list queries can pick slow plans; run ANALYZE svc_items after "
                        "bulk writes, or turn autovacuum on")
        if not _supported(conn):
            return 0
        names = sorted({name for name, type_name in await indexed_fields(conn) if wants_statistics(name, type_name)})
        present = set((await conn.execute(text(
            "SELECT stxname FROM pg_statistic_ext WHERE stxrelid = 'svc_items'::regclass"))).scalars())
    for name in names:
        if statistics_name(name) in present:
            continue
        try:
            async with kernel.db.begin() as conn:
                await conn.execute(text(statistics_ddl(name)))
        except DBAPIError:  # another worker's startup made it meanwhile (IF NOT EXISTS is not atomic)
            log.debug("statistics for %s: made elsewhere", name, exc_info=True)
    return len(names)


async def _sync_logged(kernel: Any) -> None:
    try:
        await sync(kernel)
    except Exception:  # noqa: BLE001 - missing statistics cost speed, never correctness
        log.exception("could not make the items' expression statistics")


def start(kernel: Any) -> None:
    """``sync`` in the background (the ``startup`` hook); PostgreSQL only."""
    if kernel.db.dialect == "postgresql":
        task = asyncio.get_running_loop().create_task(write_triggered.in_startup_turn(kernel, _sync_logged))
        kernel.state[TASK] = task


async def stop(kernel: Any) -> None:
    task: asyncio.Task[None] | None = kernel.state.pop(TASK, None)
    if task is not None and not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
