"""Riding out a Redis outage: each Redis-backed part falls back to its per-process twin.

Redis holds nothing that must not be lost (operations.md, Backups): the cache, the rate-limit
counters, the realtime connection counts and the pub/sub fan-out. So when Redis stops answering,
the API keeps answering: the cache and the rate limiter switch to their in-process backends (as
without Redis: limits count per process, cache entries live per process), and switch back by
themselves once Redis answers again. No restart either way.

``RedisOutage`` keeps the state of one such part (``component``): up, or falling back since
when. The first failure logs one WARNING on ``svc.redis`` ("Redis unreachable for cache: ...
falling back to per-process memory"), the recovery one INFO line; ``/metrics`` shows
``svc_redis_up{component}`` (1 or 0) and ``svc_redis_fallbacks_total{component}`` (operations
served by the fallback), and the health report's ``runtime.checkDetails.cache`` says
"degraded ...". While down, one call per ``retry_seconds`` tries Redis again (the others go
straight to the fallback), so a Redis that hangs instead of refusing costs at most one caller
per interval its connect timeout, not every request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger("svc.redis")

T = TypeVar("T")

# What "Redis is not there" looks like: refused, reset, timed out, still loading its data.
# A ResponseError (a bad command, a wrong type) is a bug and is raised as before.
UNREACHABLE: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError, OSError, TimeoutError)
RETRY_SECONDS = 1.0
CHECK_SECONDS = 2.0  # a health probe's PING: below the health check's 3-second timeout


class RedisOutage:
    """Whether one Redis-backed part (``component``) is using Redis or its fallback."""

    def __init__(self, component: str, fallback: str, *, retry_seconds: float = RETRY_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.component = component
        self.fallback = fallback  # what serves meanwhile, for the log and the health detail
        self.retry_seconds = retry_seconds
        self._clock = clock
        self.up = True
        self.down_since: float | None = None  # wall clock, for the health detail
        self.fallbacks = 0  # operations the fallback served
        self.outages = 0  # times Redis was lost
        self._next_try = 0.0
        self._probing = False

    def should_try(self) -> bool:
        """Whether this call goes to Redis: always while up; while down, one call per interval."""
        if self.up:
            return True
        if self._probing or self._clock() < self._next_try:
            return False
        self._probing = True
        return True

    def failed(self, exc: BaseException) -> None:
        """Redis did not answer this call."""
        self._probing = False
        self._next_try = self._clock() + self.retry_seconds
        if self.up:
            self.up = False
            self.down_since = time.time()
            self.outages += 1
            log.warning("Redis unreachable for %s (%s: %s): falling back to %s until it answers again",
                        self.component, type(exc).__name__, exc, self.fallback)

    def succeeded(self) -> None:
        """Redis answered this call."""
        self._probing = False
        if not self.up:
            down = time.time() - (self.down_since or time.time())
            self.up = True
            self.down_since = None
            log.info("Redis answers again for %s after %.1f s: %s is shared again", self.component, down,
                     self.component)

    def served_by_fallback(self) -> None:
        self.fallbacks += 1

    def detail(self) -> str:
        """"ok", or what the health report shows while falling back."""
        if self.up:
            return "ok"
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.down_since or time.time()))
        return f"degraded: Redis unreachable since {since}, using {self.fallback}"

    async def call(self, primary: Callable[[], Awaitable[T]], fallback: Callable[[], Awaitable[T]]) -> T:
        """``primary()`` on Redis, or ``fallback()`` when Redis is down or fails now."""
        if self.should_try():
            try:
                result = await primary()
            except UNREACHABLE as exc:
                self.failed(exc)
            except BaseException:
                self._probing = False  # not an outage (a bug, a cancellation): let it through
                raise
            else:
                self.succeeded()
                return result
        self.served_by_fallback()
        return await fallback()

    async def probe(self, check: Callable[[], Awaitable[Any]]) -> str:
        """A health probe: ``check()`` (a real PING, which also ends an outage), bounded by
        ``CHECK_SECONDS`` so a Redis that hangs reads as degraded; "ok", or the degraded detail."""
        try:
            async with asyncio.timeout(CHECK_SECONDS):
                await check()
        except UNREACHABLE as exc:
            self.failed(exc)
            return self.detail()
        self.succeeded()
        return "ok"


async def nothing() -> None:
    """A fallback that does nothing (a delete while Redis is down)."""
    return None


async def zero() -> int:
    """A fallback that removed nothing."""
    return 0


def outages_of(kernel: Any) -> list[RedisOutage]:
    """Every ``RedisOutage`` the kernel's parts keep (cache, rate limiter, plugins' own)."""
    found = [getattr(part, "outage", None) for part in (kernel.cache, kernel.rate_limiter)]
    found += list(kernel.state.get("redis_outages", ()))
    return [o for o in found if isinstance(o, RedisOutage)]
