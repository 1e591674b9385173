"""The startup backfill of the search index: ``index_missing`` for the sites that need it, in the
background.

Items written before the index existed (or by a path that bypassed the item events) have no
index rows, so search cannot find them. Each start of the kernel (every ``svc serve`` worker,
``svc worker``, CLI commands) runs one asyncio task that first asks the database, in one
query over every site, which sites hold a live item with a searchable value (a non-empty
string in a ``string``/``text`` field that is not ``sensitive``, in a live collection) and no
index row for it, then indexes those sites one after the other, while the app already serves:
startup never waits for it, and a failure is logged, never raised. A start of a deployment
whose index is complete therefore costs that one query, not a few queries per site and
collection (at 10,000 sites the per-site walk cost some 100,000 queries in every worker).
A value that indexes to no word (punctuation only) keeps its site a candidate at every start;
``index_missing`` then reads that site's ids again, which is harmless.

Several processes may run it at once; that is safe (``index_missing`` is an upsert of what
the items hold). ``shutdown`` cancels a task still running; the next start finishes the work.
"""

from __future__ import annotations

import asyncio
import logging
from functools import lru_cache
from typing import Any

from sqlalchemy import and_, func, literal, or_, select

from plugins.items.core import write_triggered
from plugins.items.search.index import SEARCHABLE_TYPES, index_missing, search
from plugins.items.tables import items
from plugins.schema.api import live_fields

log = logging.getLogger("svc.items")
TASK = "items.search_backfill"  # the key of the running task in kernel.state


def _searchable_value(dialect: str, fields: Any) -> list[Any]:
    """Conditions: the item's value of the joined field is a non-empty string, and the field is
    not ``sensitive`` (never indexed)."""
    data, options = items.c.data, fields.c.options
    if dialect == "postgresql":
        return [func.jsonb_typeof(data.op("->")(fields.c.field)) == "string",
                data.op("->>")(fields.c.field) != "",
                func.coalesce(options.op("->>")("sensitive"), "") != "true"]
    path = literal('$."').op("||")(fields.c.field).op("||")(literal('"'))
    return [func.json_type(data, path) == "text", func.json_extract(data, path) != "",
            or_(func.json_extract(options, "$.sensitive").is_(None), func.json_extract(options, "$.sensitive") != 1)]


@lru_cache(maxsize=2)
def sites_missing_rows_stmt(dialect: str) -> Any:
    """``SELECT DISTINCT site_id``: the sites with a live item whose searchable value has no index
    row (every site at once, for maintenance: each join is on a site's own ids). Built once per
    dialect in a process: every app's start runs it, and it depends on nothing else."""
    fields = live_fields()
    indexed = select(search.c.item_id).where(
        search.c.site_id == items.c.site_id, search.c.collection_id == items.c.collection_id,
        search.c.item_id == items.c.id, search.c.field == fields.c.field).exists()
    return (select(items.c.site_id).distinct()
            .select_from(items.join(fields, and_(fields.c.collection_id == items.c.collection_id,
                                                 fields.c.site_id == items.c.site_id)))
            .where(items.c.deleted_at.is_(None), fields.c.type.in_(sorted(SEARCHABLE_TYPES)),
                   *_searchable_value(dialect, fields), ~indexed)
            .order_by(items.c.site_id))


async def sites_missing_rows(kernel: Any) -> list[str]:
    async with kernel.db.connect() as conn:
        found = list((await conn.execute(sites_missing_rows_stmt(kernel.db.dialect))).scalars())
        await conn.rollback()
    return found


async def backfill(kernel: Any) -> int:
    """Index the missing items of the sites that have any; returns the rows written. A site that
    fails is logged and skipped."""
    added = 0
    for site_id in await sites_missing_rows(kernel):
        try:
            added += await index_missing(kernel, site_id)
        except Exception:  # noqa: BLE001 - one site's fault must not stop the others
            log.exception("search backfill: site %s failed", site_id)
    if added:
        log.info("search backfill: %d index rows written for items that had none", added)
    return added


async def _run(kernel: Any) -> None:
    try:
        await backfill(kernel)
    except Exception:  # noqa: BLE001 - a background task must never die silently
        log.exception("search backfill failed")


def start(kernel: Any) -> None:
    """Start the backfill as a task of the running loop (the ``startup`` hook)."""
    kernel.state[TASK] = asyncio.get_running_loop().create_task(write_triggered.in_startup_turn(kernel, _run))


async def stop(kernel: Any) -> None:
    """Cancel the backfill if it still runs (the ``shutdown`` hook, before the database closes)."""
    task: asyncio.Task[None] | None = kernel.state.pop(TASK, None)
    if task is not None and not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
