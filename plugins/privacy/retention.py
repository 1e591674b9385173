"""Retention: the horizons of every kind of record a plugin keeps for a limited time, and the
run that prunes past them.

The targets come from ``register_retention_targets`` (each owning plugin prunes its own
tables: kernel ``audit``, accounts ``activity``, items ``revisions``, realtime
``notifications``, cdc ``changeFeedEvents``, flows ``flowRuns``). A site overrides any horizon
with the setting ``retention``: ``{ <target>: days }`` (an integer from 1 to 36500). ``POST
/retention/run`` prunes the site now; the daily job ``privacy.retention`` prunes every site that
holds something past a horizon (found by each target's ``pending`` query, across sites).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Collection
from typing import Any

from sqlalchemy import select

from kernel.db.meta import iso, now_utc
from kernel.policy.audit import record as audit
from kernel.policy.privacy import retention_targets
from plugins.settings.api import get_setting, setting_of_every_site

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
                   request_id: str | None = None, only: Collection[str] | None = None,
                   configured: dict[str, int] | None = None) -> dict[str, Any]:
    """Prune the site past every horizon; ``{ deleted: { target: n }, total }``; audited
    ``retention_run`` with the counts. The daily job passes ``only`` (the targets it found
    something to prune in: the others are not visited and count 0) and ``configured`` (the
    site's ``retention`` setting as it read it for every site)."""
    if configured is None:
        configured = await get_setting(kernel, site_id, KEY, None) or {}
    now = now or now_utc()
    deleted: dict[str, int] = {}
    for name, target in sorted(retention_targets(kernel).items()):
        if only is not None and name not in only:
            deleted[name] = 0
            continue
        days = configured.get(name, target.default_days)
        deleted[name] = int(await target.prune(kernel, site_id, now - dt.timedelta(days=days)))
    total = sum(deleted.values())
    async with kernel.unit_of_work(site_id, principal) as uow:
        await audit(uow.conn, action="retention_run", site_id=site_id, principal=principal,
                    target_type="site", target_id=site_id, details={"total": total, **deleted},
                    request_id=request_id)
    return {"deleted": deleted, "total": total, "ranAt": iso(now)}


async def due_targets(kernel: Any, now: dt.datetime,
                      overrides: dict[str, dict[str, int]]) -> dict[str, set[str]]:
    """``{site_id: {target, ...}}``: the sites holding something past a horizon, and which
    targets (``overrides``: every site's ``retention`` setting). Sites are grouped by horizon: per target, one ``pending`` query for the sites on
    its default and one per distinct ``retention`` override (per 500 sites of that override),
    so the cost follows the settings in use, not the number of sites. A target without
    ``pending`` (a third-party one) is due in every site."""
    from kernel.tenancy.tables import sites

    async with kernel.db.connect() as conn:
        site_ids = set((await conn.execute(select(sites.c.id))).scalars())
        await conn.rollback()
    due: dict[str, set[str]] = {}
    for name, target in sorted(retention_targets(kernel).items()):
        if target.pending is None:
            for site_id in site_ids:
                due.setdefault(site_id, set()).add(name)
            continue
        by_days: dict[int, list[str]] = {}
        for site_id, value in overrides.items():
            if name in value and site_id in site_ids:
                by_days.setdefault(int(value[name]), []).append(site_id)
        overriding = {site_id for group in by_days.values() for site_id in group}
        # The default horizon's query runs across every site; a site that overrides this
        # target is left to its own horizon's query (its rows never go by another's setting).
        found = await target.pending(kernel, now - dt.timedelta(days=target.default_days), None)
        hits = {s for s in found if s in site_ids and s not in overriding}
        for days, group in sorted(by_days.items()):
            hits |= await target.pending(kernel, now - dt.timedelta(days=days), sorted(group))
        for site_id in hits:
            due.setdefault(site_id, set()).add(name)
    return due


async def retention_job(kernel: Any) -> None:
    """Daily: every site past its horizons. Only the sites holding something to prune are
    visited (and audited ``retention_run``): at 10,000 sites, a run costs the few queries of
    ``due_targets`` plus the work of the sites that have some (issue 27, "scale")."""
    now = now_utc()
    overrides = {site_id: value for site_id, value in (await setting_of_every_site(kernel, KEY)).items()
                 if isinstance(value, dict)}
    for site_id, names in sorted((await due_targets(kernel, now, overrides)).items()):
        result = await run_site(kernel, site_id, now=now, request_id="job:privacy.retention", only=names,
                                configured=overrides.get(site_id, {}))
        if result["total"]:
            log.info("site %s: retention pruned %d records", site_id, result["total"])
