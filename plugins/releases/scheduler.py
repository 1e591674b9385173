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

from kernel.db.meta import aware
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
