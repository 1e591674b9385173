"""Backfill: push the items a pipeline's role reads in its collections, page by page.

It pages through the collections' items (keyset by id, as the role reads them) and pushes them,
at most ``SVC_STORE_SYNC_BACKFILL_MAX`` per call; where it stopped is kept on the pipeline, so
the next call goes on from there (``truncated`` says whether one is needed). It holds the live
sync's lease meanwhile (``_hold``), so the two never interleave.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.events import checkpoints
from kernel.policy import audit
from plugins.items import api as items
from plugins.store_sync import pipelines as pl
from plugins.store_sync.bodies import TargetPath, invalid
from plugins.store_sync.sync import RoleGone, push, reader, record_attempt
from plugins.store_sync.tables import pipelines
from plugins.store_sync.targets import PushFailed, Write

PAGE = 100  # items per page (and per docstore commit)
BUSY_WAIT = 5.0  # seconds a backfill waits for a running sync attempt of its pipeline


async def _page(ctx: Any, collection: str, after: str | None) -> list[dict[str, Any]]:
    """The next page of ``collection``'s items the role sees, by id after ``after``."""
    flt = {"id": {"_gt": after}} if after is not None else None
    page = await items.list_items(ctx, collection, items.query(sort=["id"], limit=PAGE, meta="none", filter=flt))
    return page.items


@dataclasses.dataclass
class Progress:
    """Where a backfill call got: counts, the position to resume from, the failure if any."""

    position: tuple[str, str | None]
    scanned: int = 0
    pushed: int = 0
    failed: int = 0
    error: str | None = None
    done: bool = False


async def _hold(kernel: Any, row: Any) -> checkpoints.Claim:
    """The lease of the pipeline's live sync, for the backfill's duration: while it pushes, no
    sync attempt runs, so a change made meanwhile is pushed after it (its event waits) and a
    backfilled item never lands over a newer write. Waits up to ``BUSY_WAIT`` seconds for a
    running attempt, ending a retry's backoff; 409 ``CONFLICT`` after that."""
    site_id, name = row["site_id"], pl.checkpoint_name(row["id"])
    owner, lease = f"backfill-{uuid7()}", float(kernel.settings.events_lease_seconds)
    deadline = time.monotonic() + BUSY_WAIT
    while True:
        await checkpoints.make_due(kernel.db, site_id, name)
        try:
            # The checkpoint was made with the pipeline: none means it was deleted since it was read.
            held = await checkpoints.claim(kernel.db, site_id, name, owner, lease, None)
        except checkpoints.NoCheckpoint:
            raise pl.not_found() from None
        if held is not None:
            return held
        if time.monotonic() > deadline:
            raise ApiError.conflict("A sync attempt of this pipeline is running; try the backfill again")
        await asyncio.sleep(0.05)


async def _run_backfill(kernel: Any, row: Any, held: checkpoints.Claim, progress: Progress) -> None:
    collections = list(row["collections"] or [])
    budget = int(kernel.settings.get("store_sync_backfill_max"))
    lease = float(kernel.settings.events_lease_seconds)
    reading = await reader(kernel, row)
    path = TargetPath(row["target_path"])
    while progress.scanned < budget:
        collection, after = progress.position
        try:
            page = await _page(reading, collection, after)
        except ApiError as exc:
            if exc.status not in (403, 404):
                raise
            page = []  # the role may not read it, or it is gone: nothing to push
        cut = len(page) > budget - progress.scanned
        page = page[:budget - progress.scanned]
        progress.scanned += len(page)
        writes = [Write(path.expand(collection, str(item["id"])), item) for item in page if item.get("id") is not None]
        try:
            progress.pushed += await push(kernel, row, writes)
        except PushFailed as exc:  # the page is tried again by the next call
            progress.pushed += exc.done
            progress.failed += len(writes) - exc.done
            progress.error = str(exc)
            return
        if not await checkpoints.ack(kernel.db, held, held.cursor, lease):  # extend the lease
            return  # lost it (a very slow target): stop here, the next call goes on
        if cut or len(page) == PAGE:
            progress.position = (collection, str(page[-1]["id"]))
            continue
        index = collections.index(collection)
        if index + 1 == len(collections):
            progress.done = True
            return
        progress.position = (collections[index + 1], None)


async def backfill(ctx: Any, pipeline_id: str, body: Any) -> dict[str, Any]:
    """Push the pipeline's items, resuming where the last truncated call stopped; ``{ restart:
    true }`` starts from the first collection again. ``{ scanned, pushed, failed, truncated }``."""
    if not isinstance(body, dict) or set(body) - {"restart"} or not isinstance(body.get("restart", False), bool):
        raise invalid("The body is empty or { restart: boolean }", ["body"])
    kernel, site_id = ctx.kernel, ctx.require_site()
    async with ctx.reader() as db:
        row = await pl.row_of(db, pipeline_id)
    collections = list(row["collections"] or [])
    if body.get("restart") or row["backfill_collection"] not in collections:
        progress = Progress((collections[0], None))
    else:
        progress = Progress((row["backfill_collection"], row["backfill_after"]))
    started = time.monotonic()
    try:
        await reader(kernel, row)
    except RoleGone as exc:
        raise ApiError.conflict(f"The backfill cannot run: {exc}") from None
    # -- govern43: followed by every admin of the site in GET /work while it runs
    async with kernel.work.tracked(site_id, "backfill", row["name"], ctx.principal,
                                   target=("store_sync_pipeline", pipeline_id)) as work:
        held = await _hold(kernel, row)
        try:
            await _run_backfill(kernel, row, held, progress)
        finally:
            await checkpoints.ack(kernel.db, held, held.cursor, 0.0, release=True)
            await kernel.events.dispatch_now(site_id, pl.checkpoint_name(pipeline_id))
        await work.step(progress.scanned)
    resume = (None, None) if progress.done else progress.position
    await record_attempt(kernel, row, kind="backfill", attempt=1, pushed=progress.pushed, failed=progress.failed,
                         skipped=0, started=started, error=progress.error)
    result = {"scanned": progress.scanned, "pushed": progress.pushed, "failed": progress.failed,
              "truncated": not progress.done}
    async with ctx.unit_of_work() as uow:
        await uow.db.execute(uow.db.update(pipelines).where(pipelines.c.id == pipeline_id).values(
            backfill_collection=resume[0], backfill_after=resume[1]))
        await audit.record(uow.conn, action="store_sync.pipeline.backfill", site_id=site_id, principal=ctx.principal,
                           target_type="store_sync_pipeline", target_id=pipeline_id, details=result,
                           request_id=ctx.request_id)
    return result
