"""Riding out a Redis outage: each Redis-backed part falls back to its per-process twin.

Redis holds nothing that must not be lost (operations.md, Backups): the cache, the rate-limit
counters, the realtime connection counts and the pub/sub fan-out. So when Redis stops answering,
the API keeps answering: the cache and the rate limiter switch to their in-process backends (as
without Redis: limits count per process, cache entries live per process), and switch back by
themselves once Redis answers again. No restart either way.

``RedisCircuit`` is what this process knows of one Redis server: up, or down since when. The
kernel keeps one (``kernel.redis_circuit``) for ``SVC_REDIS_URL``, and every part that uses that
server holds a ``RedisOutage`` on it: the cache, the rate limiter, the bus and topics publishers,
the realtime connection counts, the pageview counters. So the first part that sees Redis time
out or refuse takes them all to their fallback at once: a write that meets a hung Redis waits
``SVC_REDIS_TIMEOUT`` once, not once per part (the rate limit, the cache invalidation, the bus
fan-out and the topic publish each waited their own before). While down, one call per
``retry_seconds``, from whichever part comes first, tries Redis again (the probe); the others go
straight to their fallback, and a probe that Redis answers brings every part back.

The first failure logs one WARNING on ``svc.redis`` ("Redis unreachable for cache: ... falling
back to a per-process memory cache ...; also for rate limits, bus, topics"), the recovery one
INFO line; ``/metrics`` shows ``svc_redis_up{component}`` (1 or 0, the same for every part of
one circuit), ``svc_redis_fallbacks_total{component}`` (operations served by the fallback),
``svc_redis_failures_total{component}`` (calls Redis did not answer) and
``svc_redis_outages_total`` and ``svc_redis_probes_total`` of the circuit; the health report's
``runtime.checkDetails.cache`` says "degraded ...".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

log = logging.getLogger("svc.redis")

T = TypeVar("T")

_UNREACHABLE: tuple[type[BaseException], ...] = ()
RETRY_SECONDS = 1.0
CHECK_SECONDS = 2.0  # a health probe's PING: below the health check's 3-second timeout
PROBE_LEASE = 5.0  # a probe that never reports (its task cancelled) stops blocking others after this


def unreachable() -> tuple[type[BaseException], ...]:
    """What "Redis is not there" looks like: refused, reset, timed out, still loading its data.
    A ResponseError (a bad command, a wrong type) is a bug and is raised as before.

    A function, for ``except unreachable():`` (evaluated only when something was raised): redis-py
    is imported on the first use, so a process without Redis does not pay for its import."""
    global _UNREACHABLE
    if not _UNREACHABLE:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        _UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError, TimeoutError)
    return _UNREACHABLE


class RedisCircuit:
    """Whether one Redis server answers, as this process saw it last; shared by every part
    (``RedisOutage``) that uses the server, so that one part's timeout spares the others theirs.

    ``should_try`` while down hands out one probe per ``retry_seconds``; the probe holds the
    circuit for at most ``probe_lease`` seconds (a call's own bound is ``SVC_REDIS_TIMEOUT``
    for a pooled connection, as much to connect and as much for the answer: the kernel passes
    three times that plus a second), so a probe whose caller was cancelled before it could
    report does not keep Redis unused.
    """

    def __init__(self, *, retry_seconds: float = RETRY_SECONDS, probe_lease: float = PROBE_LEASE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.retry_seconds = retry_seconds
        self.probe_lease = probe_lease
        self._clock = clock
        self.up = True
        self.down_since: float | None = None  # wall clock, for the health detail
        self.outages = 0  # times Redis was lost
        self.probes = 0  # calls let through to Redis while it was down
        self.parts: list[RedisOutage] = []
        self._failed_at = 0.0  # monotonic: the last call Redis did not answer
        self._probe_until = 0.0  # monotonic: while a probe is out, no other call tries

    def part(self, component: str, fallback: str) -> RedisOutage:
        """A ``RedisOutage`` for ``component`` on this circuit."""
        return RedisOutage(component, fallback, circuit=self)

    def should_try(self) -> bool:
        """Whether this call goes to Redis: always while up; while down, one call per interval."""
        if self.up:
            return True
        now = self._clock()
        if now < self._failed_at + self.retry_seconds or now < self._probe_until:
            return False
        self._probe_until = now + self.probe_lease  # this call is the probe
        self.probes += 1
        return True

    def released(self) -> None:
        """A call that went to Redis ended without telling whether Redis answered (a bug in the
        caller, a cancellation): while down, the next call probes again at once."""
        self._probe_until = 0.0

    def failed(self, exc: BaseException, part: RedisOutage) -> None:
        """Redis did not answer a call of ``part``: every part falls back until a probe succeeds."""
        self._failed_at, self._probe_until = self._clock(), 0.0
        if not self.up:
            return
        self.up = False
        self.down_since = time.time()
        self.outages += 1
        others = [p.component for p in self.parts if p is not part]
        log.warning("Redis unreachable for %s (%s: %s): falling back to %s until it answers again%s",
                    part.component, type(exc).__name__, exc, part.fallback,
                    f"; also for {', '.join(others)}, without waiting for Redis" if others else "")

    def succeeded(self, part: RedisOutage) -> None:
        """Redis answered a call of ``part``: every part uses it again."""
        self._probe_until = 0.0
        if self.up:
            return
        down = time.time() - (self.down_since or time.time())
        self.up = True
        self.down_since = None
        names = ", ".join(p.component for p in self.parts) or part.component
        log.info("Redis answers again for %s after %.1f s: %s shared again", part.component, down, names)

    def detail(self, fallback: str) -> str:
        """"ok", or what the health report shows while ``fallback`` serves."""
        if self.up:
            return "ok"
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.down_since or time.time()))
        return f"degraded: Redis unreachable since {since}, using {fallback}"


class RedisOutage:
    """One Redis-backed part (``component``) on a ``RedisCircuit``: whether it uses Redis or
    its fallback, and what it counted. Without ``circuit`` it has one of its own (a part used
    on its own, in tests or by a plugin with a Redis of its own)."""

    def __init__(self, component: str, fallback: str, *, retry_seconds: float = RETRY_SECONDS,
                 clock: Callable[[], float] = time.monotonic, circuit: RedisCircuit | None = None) -> None:
        self.component = component
        self.fallback = fallback  # what serves meanwhile, for the log and the health detail
        self.circuit = circuit if circuit is not None else RedisCircuit(retry_seconds=retry_seconds, clock=clock)
        # One part per component: a part made again (a plugin's startup after a shutdown) replaces it.
        self.circuit.parts = [p for p in self.circuit.parts if p.component != component] + [self]
        self.fallbacks = 0  # operations the fallback served
        self.failures = 0  # calls of this part that Redis did not answer

    @property
    def up(self) -> bool:
        return self.circuit.up

    @property
    def down_since(self) -> float | None:
        return self.circuit.down_since

    @property
    def outages(self) -> int:
        return self.circuit.outages

    @property
    def retry_seconds(self) -> float:
        return self.circuit.retry_seconds

    @retry_seconds.setter
    def retry_seconds(self, value: float) -> None:
        self.circuit.retry_seconds = value

    def should_try(self) -> bool:
        """Whether this call goes to Redis: always while up; while down, one call per interval
        of all the circuit's parts."""
        return self.circuit.should_try()

    def failed(self, exc: BaseException) -> None:
        """Redis did not answer this call."""
        self.failures += 1
        self.circuit.failed(exc, self)

    def succeeded(self) -> None:
        """Redis answered this call."""
        self.circuit.succeeded(self)

    def released(self) -> None:
        """This call went to Redis and ended otherwise (a bug, a cancellation)."""
        self.circuit.released()

    def served_by_fallback(self) -> None:
        self.fallbacks += 1

    def detail(self) -> str:
        """"ok", or what the health report shows while falling back."""
        return self.circuit.detail(self.fallback)

    async def call(self, primary: Callable[[], Awaitable[T]], fallback: Callable[[], Awaitable[T]]) -> T:
        """``primary()`` on Redis, or ``fallback()`` when Redis is down or fails now."""
        if self.should_try():
            try:
                result = await primary()
            except unreachable() as exc:
                self.failed(exc)
            except BaseException:
                self.released()  # not an outage (a bug, a cancellation): let it through
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
        except unreachable() as exc:
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
    """Every ``RedisOutage`` the kernel's parts keep (cache, rate limiter, bus, topics, plugins'
    own), one per component (the latest: a plugin restarted makes its part again)."""
    found: list[Any] = [getattr(part, "outage", None) for part in (kernel.cache, kernel.rate_limiter)]
    found += [getattr(part, "publish_outage", None) for part in (kernel.bus, kernel.topics)]
    circuit = getattr(kernel, "redis_circuit", None)
    found += list(circuit.parts) if circuit is not None else []
    found += list(kernel.state.get("redis_outages", ()))
    unique: dict[str, RedisOutage] = {}
    for outage in found:
        if isinstance(outage, RedisOutage):
            unique.pop(outage.component, None)
            unique[outage.component] = outage
    return list(unique.values())


def circuits_of(kernel: Any) -> list[RedisCircuit]:
    """The circuits of ``outages_of(kernel)``, each once (one, unless a plugin has a Redis of its own)."""
    unique: dict[int, RedisCircuit] = {}
    for outage in outages_of(kernel):
        unique.setdefault(id(outage.circuit), outage.circuit)
    return list(unique.values())
