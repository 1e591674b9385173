"""Retention: the horizons of every kind of record a plugin keeps for a limited time, and the
run that prunes past them.

The targets come from ``register_retention_targets`` (each owning plugin prunes its own
tables: kernel ``audit``, accounts ``activity``, items ``revisions``, realtime
``notifications``, cdc ``changeFeedEvents``, flows ``flowRuns``). A site overrides any horizon
with the setting ``retention``: ``{ <target>: days }`` (an integer from 1 to 36500). ``POST
/retention/run`` prunes the site now; the daily job ``privacy.retention`` prunes every site.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from sqlalchemy import select

from kernel.audit import record as audit
from kernel.db.meta import iso, now_utc
from kernel.privacy import retention_targets
from plugins.settings.api import get_setting

KEY = "retention"
JOB = "privacy.retention"
MAX_DAYS = 36_500
log = logging.getLogger("svc.privacy.retention")


def validator(kernel: Any) -> Any:
    def validate(value: Any) -> dict[str, int]:
        if not isinstance(value, dict):
            raise ValueError("must be an object { <target>: days }")
        known = retention_targets(kernel)
        out = {}
        for name, days in value.items():
            if name not in known:
                raise ValueError(f"unknown target '{str(name)[:40]}' (known: {', '.join(sorted(known))})")
            if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
                raise ValueError(f"{name} must be a number of days from 1 to {MAX_DAYS}")
            out[name] = days
        return out
    return validate


async def horizons(kernel: Any, site_id: str) -> list[dict[str, Any]]:
    """``[{ target, days, default, source, before }]``: each target's horizon in the site."""
    configured = await get_setting(kernel, site_id, KEY, None) or {}
    now = now_utc()
    out = []
    for name, target in sorted(retention_targets(kernel).items()):
        days = configured.get(name, target.default_days)
        out.append({"target": name, "days": days, "default": target.default_days,
                    "source": "site" if name in configured else "default",
                    "before": iso(now - dt.timedelta(days=days)), "description": target.doc})
    return out


async def run_site(kernel: Any, site_id: str, principal: Any = None, *, now: dt.datetime | None = None,
                   request_id: str | None = None) -> dict[str, Any]:
    """Prune the site past every horizon; ``{ deleted: { target: n }, total }``; audited
    ``retention_run`` with the counts."""
    configured = await get_setting(kernel, site_id, KEY, None) or {}
    now = now or now_utc()
    deleted: dict[str, int] = {}
    for name, target in sorted(retention_targets(kernel).items()):
        days = configured.get(name, target.default_days)
        deleted[name] = int(await target.prune(kernel, site_id, now - dt.timedelta(days=days)))
    total = sum(deleted.values())
    async with kernel.unit_of_work(site_id, principal) as uow:
        await audit(uow.conn, action="retention_run", site_id=site_id, principal=principal,
                    target_type="site", target_id=site_id, details={"total": total, **deleted},
                    request_id=request_id)
    return {"deleted": deleted, "total": total, "ranAt": iso(now)}


async def retention_job(kernel: Any) -> None:
    """Daily: every site past its horizons."""
    from kernel.tenancy.tables import sites

    async with kernel.db.connect() as conn:
        site_ids = list((await conn.execute(select(sites.c.id))).scalars())
    for site_id in site_ids:
        result = await run_site(kernel, site_id, request_id="job:privacy.retention")
        if result["total"]:
            log.info("site %s: retention pruned %d records", site_id, result["total"])
