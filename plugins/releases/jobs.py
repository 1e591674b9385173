"""The job ``releases.publish``: publish a scheduled release when it is due (``scheduler.py``
queues it; this module runs it)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from kernel.base.errors import ApiError
from kernel.db.meta import aware, now_utc
from kernel.tenancy.scope import SiteDB
from plugins.accounts import api as accounts_api
from plugins.realtime import api as realtime_api
from plugins.releases.publisher import ReleasePublisher
from plugins.releases.scheduler import JOB, schedule, site_zone
from plugins.releases.tables import releases
from plugins.releases.windows import next_opening


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
    """One notification each for the release's creator and the site's admins (nobody else's
    sessions hear of it)."""
    if uow is None:
        async with kernel.unit_of_work(site_id) as own:
            await notify_failure(kernel, site_id, row, status, message, uow=own)
        return
    creator = row["created_by"] or "unknown"
    people = await accounts_api.active_users(uow.conn, [row["created_by"]] if row["created_by"] else []) \
        + await accounts_api.site_admins(uow.conn, site_id)
    await realtime_api.notify_each(
        kernel, site_id, people, kind="release.failed", severity="error" if status == "failed" else "warning",
        title=f"Scheduled release '{row['name'][:150]}' {status.replace('_', ' ')}",
        body=f"{message[:1500]} (created by user {creator})", deep_link=f"/releases/{row['id']}",
        entity_id=row["id"], uow=uow)


async def run(kernel: Any, site_id: str, release_id: str, due_at: str | None = None) -> None:
    """The job: publish the release if it is (still) due and inside its maintenance window.

    ``due_at`` is the time the run was queued for. The moment the job acts at is the later of
    it and the clock: a worker that claims a job late judges the window by the clock, and
    ``run_due_jobs(now=...)`` in tests runs it at the moment the test picks."""
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
