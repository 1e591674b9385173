"""The scheduler: a release with ``publishAt`` publishes when due, through the kernel's jobs.

The run is the job ``releases.publish`` (args ``site_id``, ``release_id``; dedupe key
``release:<id>``) written in the transaction that sets ``publishAt``: it exists only if that
commits, survives restarts (it is a row), and is claimed by one worker (``FOR UPDATE SKIP
LOCKED`` on PostgreSQL, the write lock on SQLite). Changing ``publishAt`` moves the pending job
(``replace=True``), clearing it or deleting the release cancels it.

When the job runs it re-reads the release: not ``scheduled`` any more, or ``publishAt`` still
ahead, means nothing to do (idempotent). Outside the maintenance window it moves itself to the
next window's start, in the site's time zone (setting ``releases.timezone``, default UTC).
Otherwise it publishes as the principal that set ``publishAt`` (re-checked now: a suspended
user publishes nothing). A publish that is not ``published`` leaves a notification for the
release's creator and the site's admins (the realtime notification of the site's studio).
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from kernel.db.meta import aware, now_utc
from kernel.errors import ApiError
from kernel.tenancy.scope import SiteDB
from plugins.accounts import api as accounts_api
from plugins.realtime import api as realtime_api
from plugins.releases.tables import releases
from plugins.releases.windows import TIMEZONE_SETTING, next_opening, zone
from plugins.settings import api as settings_api

JOB = "releases.publish"
log = logging.getLogger("svc.releases")


def dedupe_key(release_id: str) -> str:
    return f"release:{release_id}"


async def site_zone(kernel: Any, site_id: str) -> Any:
    return zone(await settings_api.get_setting(kernel, site_id, TIMEZONE_SETTING, None))


async def schedule(uow: Any, release_id: str, publish_at: dt.datetime, window: dict[str, Any] | None) -> None:
    """Queue (or move) the release's run to ``publish_at``, or the next window opening after it."""
    run_at = next_opening(window, aware(publish_at), await site_zone(uow.kernel, uow.site_id))
    await uow.enqueue(JOB, site_id=uow.site_id, release_id=release_id, due_at=run_at.isoformat(), run_at=run_at,
                      dedupe_key=dedupe_key(release_id), replace=True)
    db = uow.db
    await db.execute(db.update(releases).where(releases.c.id == release_id).values(next_run_at=run_at))


async def unschedule(uow: Any, release_id: str) -> None:
    """Cancel the release's pending run, if any."""
    await uow.kernel.jobs.cancel(JOB, dedupe_key=dedupe_key(release_id), site_id=uow.site_id, uow=uow)
    db = uow.db
    await db.execute(db.update(releases).where(releases.c.id == release_id).values(next_run_at=None))


async def _publisher_principal(kernel: Any, site_id: str, record: Any) -> Any:
    principal = await accounts_api.principal_current(kernel, site_id, record) if isinstance(record, dict) else None
    if principal is None:
        return None
    resolved = await kernel.access.resolve(principal, site_id)
    return resolved if (resolved.is_admin or resolved.role_id) else None


async def _fail(kernel: Any, site_id: str, row: Any, message: str) -> None:
    async with kernel.unit_of_work(site_id) as uow:
        await uow.db.execute(uow.db.update(releases).where(releases.c.id == row["id"], releases.c.status == "scheduled")
                             .values(status="failed", last_error=message[:500], next_run_at=None,
                                     updated_at=now_utc()))
        await notify_failure(kernel, site_id, row, "failed", message, uow=uow)


async def notify_failure(kernel: Any, site_id: str, row: Any, status: str, message: str, uow: Any = None) -> None:
    """One notification of the site's studio (its admins and the release's creator see it)."""
    creator = row["created_by"] or "unknown"
    await realtime_api.notify(
        kernel, site_id, kind="release.failed", severity="error" if status == "failed" else "warning",
        title=f"Scheduled release '{row['name'][:150]}' {status.replace('_', ' ')}",
        body=f"{message[:1500]} (created by user {creator})", deep_link=f"/releases/{row['id']}",
        entity_id=row["id"], uow=uow)


async def run(kernel: Any, site_id: str, release_id: str, due_at: str | None = None) -> None:
    """The job: publish the release if it is (still) due and inside its maintenance window.

    ``due_at`` is the time the run was queued for. The moment the job acts at is the later of
    it and the clock: a worker that claims a job late judges the window by the clock, and
    ``run_due_jobs(now=...)`` in tests runs it at the moment the test picks."""
    from plugins.releases.publisher import ReleasePublisher

    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        row = await db.one(db.select(releases).where(releases.c.id == release_id))
    if row is None or row["status"] != "scheduled" or row["publish_at"] is None:
        return
    due = dt.datetime.fromisoformat(due_at) if isinstance(due_at, str) else None
    moment = max(now_utc(), due) if due is not None else now_utc()
    if aware(row["publish_at"]) > moment:
        return  # moved later: the moved job runs then
    opening = next_opening(row["maintenance_window"], moment, await site_zone(kernel, site_id))
    if opening > moment:
        async with kernel.unit_of_work(site_id) as uow:
            await schedule(uow, release_id, opening, None)
        return
    principal = await _publisher_principal(kernel, site_id, row["scheduled_by"])
    if principal is None:
        await _fail(kernel, site_id, row, "The member who scheduled the release can no longer publish in this site")
        return
    try:
        result = await ReleasePublisher(kernel, site_id, principal, release_id, request_id=f"job:{JOB}").publish()
    except ApiError as error:
        if error.code == "ALREADY_PUBLISHED" or error.status == 404:
            return
        await _fail(kernel, site_id, row, f"{error.code}: {error.message}")
        return
    if result["status"] != "published":
        await notify_failure(kernel, site_id, row, result["status"], result["release"]["lastError"] or "")
