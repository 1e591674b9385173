"""Where hits accumulate, per strategy (the ``pageviews`` setting's ``strategy``).

- ``db-rollup`` (``Rollup``): counters in this process's memory, written to the rollup tables
  every ``flushIntervalS`` of the site (read at each tick, so a change applies at once) and at
  shutdown. A crash loses at most one flush interval of this worker's hits.
- ``hot-counter`` (``CacheCounters``): counters in the kernel's cache (Redis when configured,
  shared by every worker and surviving their restarts); uniques stay exact through a per-visitor
  key that only its first ``INCR`` counts.
- ``hll`` (``HllCounters``): Redis ``INCR`` for views and ``PFADD``/``PFCOUNT`` HyperLogLog
  for uniques (about 0.8 % standard error, 12 KB per key at most); without Redis it falls back
  to ``hot-counter``'s exact counters in the kernel's memory cache.
- ``cdc``: each hit is a ``pageviews.hit`` event in the durable log (the change feed shows it);
  the consumer ``pageviews.rollup`` adds the events to the rollup tables, at least once.

Every hit counts twice: under its path and under ``""`` (the site's totals).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import logging
import time
from typing import Any

from kernel.events import Event, EventConsumer
from kernel.redisio.redis_fallback import RedisOutage
from plugins.pageviews import store
from plugins.pageviews.config import site_config

log = logging.getLogger("svc.pageviews")
TICK_S = 1.0
COUNTER_TTL_S = 400 * 86400  # the stats of hot-counter and hll reach back a little over a year
SEEN_TTL_S = 2 * 86400
TOTAL = ""


def today() -> dt.date:
    """The UTC day hits count under."""
    return dt.datetime.now(dt.UTC).date()


def _paths(path: str) -> tuple[str, str]:
    return (path, TOTAL)


class Rollup:
    """The ``db-rollup`` buffer of this process and its flusher."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        # site -> (day, path) -> [views, visitor hashes]
        self.pending: dict[str, dict[tuple[str, str], list[Any]]] = {}
        self.last_flush: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    def add(self, site_id: str, day: str, path: str, visitor: str) -> None:
        site = self.pending.setdefault(site_id, {})
        self.last_flush.setdefault(site_id, time.monotonic())
        for p in _paths(path):
            entry = site.setdefault((day, p), [0, set()])
            entry[0] += 1
            entry[1].add(visitor)

    async def flush_site(self, site_id: str) -> None:
        """Write the site's pending counts in one transaction; on failure they go back."""
        taken = self.pending.pop(site_id, None)
        self.last_flush[site_id] = time.monotonic()
        if not taken:
            return
        from kernel.tenancy.service import get_site_cached

        if await get_site_cached(self.kernel, site_id) is None:
            log.info("dropped %d pending pageview counters of deleted site %s", len(taken), site_id)
            return
        try:
            async with self.kernel.unit_of_work(site_id) as uow:
                for (day, path), (views, seen) in sorted(taken.items()):
                    await store.add_counts(self.kernel, uow.conn, site_id, day, path, views, seen)
                await store.forget_old(uow.conn, site_id, today())
        except BaseException:
            site = self.pending.setdefault(site_id, {})
            for key, (views, seen) in taken.items():
                entry = site.setdefault(key, [0, set()])
                entry[0] += views
                entry[1].update(seen)
            raise

    async def flush_all(self) -> None:
        for site_id in list(self.pending):
            try:
                await self.flush_site(site_id)
            except Exception:  # noqa: BLE001 - one site's failure must not keep the others
                log.exception("could not flush the pageviews of site %s", site_id)

    async def tick(self) -> None:
        """Flush each site whose interval (read now: a change applies at once) has passed."""
        now = time.monotonic()
        for site_id in list(self.pending):
            interval = (await site_config(self.kernel, site_id)).flush_interval_s
            if now - self.last_flush.get(site_id, now) >= interval:
                try:
                    await self.flush_site(site_id)
                except Exception:  # noqa: BLE001 - retried at the next tick
                    log.exception("could not flush the pageviews of site %s", site_id)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                await self.tick()
            except Exception:  # noqa: BLE001 - the flusher never dies
                log.exception("pageview flush tick failed")

    async def stop(self) -> None:
        """Stop the flusher and write everything pending (a clean shutdown loses no hit)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        await self.flush_all()


def _path_key(path: str) -> str:
    return hashlib.sha256(path.encode()).hexdigest()[:24]


class CacheCounters:
    """``hot-counter``: views and exact uniques in the kernel's cache (Redis when configured)."""

    def __init__(self, kernel: Any) -> None:
        self.cache = kernel.cache

    def _key(self, site_id: str, day: str, path: str) -> str:
        return f"pv:{site_id}:{day}:{_path_key(path)}"

    async def add(self, site_id: str, day: str, path: str, visitor: str) -> None:
        for p in _paths(path):
            key = self._key(site_id, day, p)
            await self.cache.incr(f"{key}:v", 1, ttl=COUNTER_TTL_S)
            if await self.cache.incr(f"{key}:s:{visitor}", 1, ttl=SEEN_TTL_S) == 1:
                await self.cache.incr(f"{key}:u", 1, ttl=COUNTER_TTL_S)

    async def read(self, site_id: str, day: str, path: str) -> tuple[int, int]:
        key = self._key(site_id, day, path)
        views, uniques = await self.cache.get(f"{key}:v"), await self.cache.get(f"{key}:u")
        return int(views or 0), int(uniques or 0)


class HllCounters:
    """``hll``: Redis INCR and PFADD/PFCOUNT; ``CacheCounters`` without Redis, and while Redis
    does not answer (``kernel.redisio.redis_fallback``: hits of the outage count in the kernel cache,
    itself per process then, and are not merged back)."""

    def __init__(self, kernel: Any) -> None:
        self.fallback = CacheCounters(kernel)
        self.namespace = kernel.settings.redis_namespace or "svc"
        self.redis: Any = None
        self.outage = RedisOutage("pageviews hll", "the kernel cache's counters")
        if kernel.settings.redis_url:
            from kernel.cache import make_redis_client

            self.redis = make_redis_client(kernel.settings.redis_url, kernel.settings.redis_timeout)
            # The kernel's Redis: down for the cache or the bus is down here too, and back alike.
            self.outage = RedisOutage("pageviews hll", "the kernel cache's counters",
                                      circuit=getattr(kernel, "redis_circuit", None))
            kernel.state.setdefault("redis_outages", []).append(self.outage)

    def _key(self, site_id: str, day: str, path: str) -> str:
        return f"{self.namespace}:pv-hll:{site_id}:{day}:{_path_key(path)}"

    async def add(self, site_id: str, day: str, path: str, visitor: str) -> None:
        if self.redis is None:
            await self.fallback.add(site_id, day, path, visitor)
            return
        await self.outage.call(lambda: self._add(site_id, day, path, visitor),
                               lambda: self.fallback.add(site_id, day, path, visitor))

    async def _add(self, site_id: str, day: str, path: str, visitor: str) -> None:
        pipe = self.redis.pipeline(transaction=False)
        for p in _paths(path):
            key = self._key(site_id, day, p)
            pipe.incr(f"{key}:v")
            pipe.expire(f"{key}:v", COUNTER_TTL_S)
            pipe.pfadd(f"{key}:h", visitor)
            pipe.expire(f"{key}:h", COUNTER_TTL_S)
        await pipe.execute()

    async def read(self, site_id: str, day: str, path: str) -> tuple[int, int]:
        if self.redis is None:
            return await self.fallback.read(site_id, day, path)
        return await self.outage.call(lambda: self._read(site_id, day, path),
                                      lambda: self.fallback.read(site_id, day, path))

    async def _read(self, site_id: str, day: str, path: str) -> tuple[int, int]:
        key = self._key(site_id, day, path)
        views, uniques = await self.redis.get(f"{key}:v"), await self.redis.pfcount(f"{key}:h")
        return int(views or 0), int(uniques or 0)

    async def close(self) -> None:
        if self.redis is not None:
            await self.redis.aclose()


HIT_EVENT = "pageviews.hit"


def emit_hit(uow: Any, path: str, visitor: str) -> None:
    """The ``cdc`` strategy's durable record of one hit: thin, the visitor's daily hash as its
    id and the path as its one field name (never an IP or user agent)."""
    uow.emit(HIT_EVENT, item_id=visitor, fields=[path])


def rollup_consumer() -> EventConsumer:
    """The durable consumer adding ``pageviews.hit`` events to the rollup tables."""

    async def handle(kernel: Any, site_id: str, events: list[Event]) -> None:
        grouped: dict[tuple[str, str], list[Any]] = {}
        for event in events:
            if not event.fields or not event.item_id:
                continue
            day = event.occurred_at.astimezone(dt.UTC).date().isoformat()
            for p in _paths(event.fields[0]):
                entry = grouped.setdefault((day, p), [0, set()])
                entry[0] += 1
                entry[1].add(event.item_id)
        if grouped:
            async with kernel.unit_of_work(site_id) as uow:
                for (day, path), (views, seen) in sorted(grouped.items()):
                    await store.add_counts(kernel, uow.conn, site_id, day, path, views, seen)
                await store.forget_old(uow.conn, site_id, today())

    return EventConsumer("pageviews.rollup", handle, types=(HIT_EVENT,))
