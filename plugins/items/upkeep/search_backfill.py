"""The startup backfill of the search index: ``index_missing`` for every site, in the background.

Items written before the index existed (or by a path that bypassed the item events) have no
index rows, so search cannot find them. Each start of the kernel (every ``svc serve`` worker,
``svc worker``, CLI commands) runs one asyncio task that indexes them, site after site, while
the app already serves: startup never waits for it, and a failure is logged, never raised.
Several processes may run it at once; that is safe (``index_missing`` is an upsert of what
the items hold) and cheap when there is nothing to do (read queries only). ``shutdown``
cancels a task still running; the next start finishes the work.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sqlalchemy import select

from kernel.tenancy.tables import sites
from plugins.items.search.index import index_missing

log = logging.getLogger("svc.items")
TASK = "items.search_backfill"  # the key of the running task in kernel.state


async def backfill(kernel: Any) -> int:
    """Index the missing items of every site; returns the rows written. A site that fails is
    logged and skipped."""
    async with kernel.db.connect() as conn:
        site_ids = list((await conn.execute(select(sites.c.id).order_by(sites.c.id))).scalars())
    added = 0
    for site_id in site_ids:
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
    kernel.state[TASK] = asyncio.get_running_loop().create_task(_run(kernel))


async def stop(kernel: Any) -> None:
    """Cancel the backfill if it still runs (the ``shutdown`` hook, before the database closes)."""
    task: asyncio.Task[None] | None = kernel.state.pop(TASK, None)
    if task is not None and not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
