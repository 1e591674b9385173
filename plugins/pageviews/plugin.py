"""Hook implementations of the pageviews plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import Route, Setting, hookimpl, ops
from kernel.base.settings import parse_int
from plugins.pageviews import config, counters, routes
from plugins.pageviews.service import PageviewCounter
from plugins.settings.api import SettingKey

name = "pageviews"
requires = ("settings",)

STATS = {"type": "object", "required": ["date", "views", "uniques"], "properties": {
    "date": {"type": "string", "format": "date"}, "views": {"type": "integer"}, "uniques": {"type": "integer"}}}
HIT_BODY = {"type": "object", "required": ["path"], "additionalProperties": False, "properties": {
    "path": {"type": "string", "maxLength": 512}, "referrer": {"type": "string", "maxLength": 2048}}}


def counter_of(kernel: Any) -> PageviewCounter:
    """The app's one ``PageviewCounter`` (made on first use)."""
    found = kernel.state.get(name)
    if found is None:
        found = kernel.state[name] = PageviewCounter(kernel)
    return found


@hookimpl
def register_settings() -> list[Setting]:
    return [Setting("SVC_RATE_LIMIT_PAGEVIEWS", 120, parse_int(0),
                    "Pageview beacons per minute per client IP (0 disables); keyed on an HMAC of the IP.")]


@hookimpl
def register_setting_keys(kernel: Any) -> list[Any]:
    return [SettingKey(config.KEY, config.validate, type="object",
                       description="Pageview counting: strategy, userTable, respectConsent, botFilter, hashSalt, "
                                   "flushIntervalS.")]


@hookimpl
def register_event_consumers(kernel: Any) -> list[Any]:
    return [counters.rollup_consumer()]


@hookimpl
async def startup(kernel: Any) -> None:
    counter_of(kernel).rollup.start()


@hookimpl
async def shutdown(kernel: Any) -> None:
    """Unflushed db-rollup hits are written now: a clean stop or restart loses none."""
    await counter_of(kernel).close()


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    counter = counter_of(kernel)
    return [
        # Rate limited per IP by the resource itself (routes.limit_per_ip: the key is an HMAC
        # of the IP, never the address).
        Route("/pageviews/{site_id}/hit", routes.HitResource(counter), site="none", auth="public", openapi=ops(
                  post=("Pageview beacon (bots, DNT and Sec-GPC are not counted); always 204", HIT_BODY, None, 204))),
        Route("/pageviews/stats", routes.StatsResource(counter), auth="bearer", openapi=ops(
            get=("Daily views and uniques (from, to: YYYY-MM-DD; path)", None, [STATS], 200))),
    ]


@hookimpl
async def export_personal_data(kernel: Any, site_id: str, user_id: str) -> dict[str, Any]:
    """``pageviews``: the hits attributed to the user that are still attributable (docs/delivery.md)."""
    return {"pageviews": await counter_of(kernel).attributed_paths(site_id, user_id)}


@hookimpl
def register_erasure_targets(kernel: Any) -> list[Any]:
    """``pageviews``: the daily counts and visitor rows of paths that quote the subject (a profile
    page named after them). Hits still buffered in memory when the erasure runs are written at the
    next flush."""
    from kernel.policy.privacy import rows_target
    from plugins.pageviews.tables import daily, visitors

    return [rows_target("pageviews", daily, [daily.c.path], "Daily page counts of paths quoting the subject."),
            rows_target("pageviewVisitors", visitors, [visitors.c.path],
                        "Per-visitor rows (today and yesterday) of paths quoting the subject.")]
