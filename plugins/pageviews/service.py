"""Counting a beacon and answering the stats: the pageviews logic, without HTTP objects."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from kernel import ApiError
from kernel.policy.privacy import consent_granted, restricted
from plugins.pageviews import beacon, counters, store
from plugins.pageviews.config import site_config

MAX_RANGE_DAYS = 366
DEFAULT_RANGE_DAYS = 30
# Python's date.fromisoformat also reads '20240101xx' and ISO weeks ('2024-W01-1'): not a date here.
DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@dataclass
class Visit:
    """What the route knows of a beacon's sender (the IP is hashed here and then dropped)."""

    ip: str
    user_agent: str
    user_id: str | None  # set for an authenticated caller
    refuses_tracking: bool


class PageviewCounter:
    """The app's pageview state: the db-rollup buffer, the cache and HyperLogLog counters, the
    daily salts and the bot filter. ``kernel.state["pageviews"]``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.rollup = counters.Rollup(kernel)
        self.hot = counters.CacheCounters(kernel)
        self.hll = counters.HllCounters(kernel)
        self.salts = beacon.Salts()
        self.bots = beacon.BotFilter()

    async def record(self, site_id: str, hit: beacon.Hit, visit: Visit) -> bool:
        """Count one hit; False when it is not counted (do-not-track, global privacy control,
        a bot). An authenticated visitor is attributed (counted by user, not by IP and user
        agent) only with analytics consent (``respectConsent``, the default; without a consent
        store, as when the privacy plugin is disabled, nobody has consented) and never while
        they restrict processing; otherwise the hit counts anonymously like any other."""
        if visit.refuses_tracking:
            return False
        config = await site_config(self.kernel, site_id)
        if config.bot_filter and self.bots.is_bot(visit.user_agent):
            return False
        day = counters.today().isoformat()
        attributed = await self.attributable(site_id, visit.user_id, config.respect_consent)
        who = f"user:{visit.user_id}" if attributed else visit.ip
        salt = await self.salts.salt(self.kernel, site_id, day, config.hash_salt)
        visitor = beacon.visitor_hash(salt, who, "" if attributed else visit.user_agent, site_id, day)
        if config.strategy == "hot-counter":
            await self.hot.add(site_id, day, hit.path, visitor)
        elif config.strategy == "hll":
            await self.hll.add(site_id, day, hit.path, visitor)
        elif config.strategy == "cdc":
            async with self.kernel.unit_of_work(site_id) as uow:
                counters.emit_hit(uow, hit.path, visitor)
        else:
            self.rollup.add(site_id, day, hit.path, visitor)
        return True

    async def attributable(self, site_id: str, user_id: str | None, respect_consent: bool) -> bool:
        """Whether a hit of ``user_id`` is counted as theirs (kernel.policy.privacy: consent, restriction)."""
        if user_id is None or await restricted(self.kernel, site_id, user_id):
            return False
        if not respect_consent:
            return True
        return await consent_granted(self.kernel, site_id, user_id, "analytics") is True

    async def attributed_paths(self, site_id: str, user_id: str) -> list[dict[str, Any]]:
        """The data export's ``pageviews``: ``[{ date, path }]`` of the hits attributed to
        ``user_id`` that can still be told apart (today and yesterday, while their visitor
        hashes are kept; older days are aggregate counts only). db-rollup and cdc strategies;
        the Redis strategies keep no per-visitor rows."""
        await self.rollup.flush_site(site_id)
        config = await site_config(self.kernel, site_id)
        out: list[dict[str, Any]] = []
        now = counters.today()
        for day in ((now - dt.timedelta(days=1)).isoformat(), now.isoformat()):
            salt = await self.salts.salt(self.kernel, site_id, day, config.hash_salt)
            visitor = beacon.visitor_hash(salt, f"user:{user_id}", "", site_id, day)
            for path in await store.paths_of_visitor(self.kernel, site_id, day, visitor):
                out.append({"date": day, "path": path})
        return out

    async def stats(self, site_id: str, start: dt.date, end: dt.date, path: str) -> list[dict[str, Any]]:
        """Every day from ``start`` to ``end``: ``{ date, views, uniques }`` (flushed rollups,
        plus the live counters of ``hot-counter`` or ``hll`` when the site uses one)."""
        rows = await store.read_daily(self.kernel, site_id, start.isoformat(), end.isoformat(), path)
        strategy = (await site_config(self.kernel, site_id)).strategy
        live = self.hot if strategy == "hot-counter" else self.hll if strategy == "hll" else None
        out = []
        day = start
        while day <= end:
            views, uniques = rows.get(day.isoformat(), (0, 0))
            if live is not None:
                more = await live.read(site_id, day.isoformat(), path)
                views, uniques = views + more[0], uniques + more[1]
            out.append({"date": day.isoformat(), "views": views, "uniques": uniques})
            day += dt.timedelta(days=1)
        return out

    async def close(self) -> None:
        await self.rollup.stop()
        await self.hll.close()


def parse_range(start: str | None, end: str | None, path: str | None) -> tuple[dt.date, dt.date, str]:
    """``from`` and ``to`` (``YYYY-MM-DD``, default: the last 30 days), at most 366 days apart;
    ``path`` (default: the whole site)."""
    def day(value: str | None, name: str, default: dt.date) -> dt.date:
        if value is None or value == "":
            return default
        try:
            return dt.date.fromisoformat(value) if DAY.fullmatch(value) else _bad(name)
        except ValueError:
            return _bad(name)

    to = day(end, "to", counters.today())
    frm = day(start, "from", to - dt.timedelta(days=DEFAULT_RANGE_DAYS - 1))
    if frm > to:
        raise ApiError.validation("'from' is after 'to'", path=["query", "from"])
    if (to - frm).days >= MAX_RANGE_DAYS:
        raise ApiError.validation(f"A range is at most {MAX_RANGE_DAYS} days", path=["query", "from"])
    if path is None or path == "":
        return frm, to, counters.TOTAL
    if not path.startswith("/") or len(path) > beacon.MAX_PATH:
        raise ApiError.validation("'path' starts with / and has at most 512 characters", path=["query", "path"])
    return frm, to, path


def _bad(name: str) -> dt.date:
    raise ApiError.validation(f"'{name}' must be a date YYYY-MM-DD", path=["query", name])
