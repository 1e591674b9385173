"""Replaying a dead letter (``dead_letters``): its items pushed as the pipeline's role reads
them now, through the sync's own ``writes_for``, ``push`` and ``record_attempt``."""

from __future__ import annotations

import time
from typing import Any

from kernel.base.errors import ApiError
from kernel.db.meta import now_utc
from plugins.store_sync import dead_letters, sync
from plugins.store_sync import pipelines as pl
from plugins.store_sync.tables import dead_letters as table


async def replay(ctx: Any, pipeline_id: str, entry_id: str) -> dict[str, Any]:
    """Push the entry's items as they are now: the entry, ``replayed`` or still ``pending`` with
    the new ``error``. 409 ``CONFLICT`` for an entry replayed already."""
    kernel = ctx.kernel
    async with ctx.reader() as db:
        entry = await dead_letters.entry_row(db, pipeline_id, entry_id)
        row = await pl.row_of(db, pipeline_id)
    if entry["status"] == "replayed":
        raise ApiError(409, "CONFLICT", "This dead letter was replayed already")
    events = [dead_letters.StoredEvent(c, i, t) for c, i, t in entry["items"]]
    started, error, pushed, skipped = time.monotonic(), None, 0, 0
    try:
        outcome = await sync.writes_for(kernel, row, events)
        skipped = outcome.skipped
        pushed = await sync.push(kernel, row, outcome.writes)
    except (sync.PushFailed, sync.RoleGone) as exc:
        error = str(exc)
    await sync.record_attempt(
        kernel,
        row,
        kind="replay",
        attempt=entry["attempts"] + 1,
        pushed=pushed,
        failed=0 if error is None else len(events),
        skipped=skipped,
        started=started,
        error=error,
    )
    now = now_utc()
    values: dict[str, Any] = {"attempts": entry["attempts"] + 1, "updated_at": now}
    values.update({"status": "replayed", "replayed_at": now} if error is None else {"error": error[:500]})
    async with ctx.unit_of_work() as uow:
        await uow.db.execute(uow.db.update(table).where(table.c.id == entry_id).values(**values))
        fresh = await uow.db.one(uow.db.select(table).where(table.c.id == entry_id))
    if fresh is None:
        raise dead_letters.not_found()
    return dead_letters.record(fresh)
