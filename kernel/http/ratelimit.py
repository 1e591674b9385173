"""Sliding-window rate limits, in process or on Redis.

Algorithm: the sliding-window counter. Time is cut into fixed windows of ``window`` seconds
aligned to the epoch; a key keeps the hit count of the current window and of the previous
one. The hits in the last ``window`` seconds are estimated as

    previous * (share of the previous window still inside the sliding window) + current

and a hit is allowed when that estimate plus one stays within ``limit``. Denied hits are not
counted, so a client retrying while blocked does not extend its own block. This keeps four
numbers per key whatever the limit (a log of timestamps in a sorted set would keep up to
6,000 entries per user for the item-read limit) and it has no burst at window edges, at the
price of assuming the previous window's hits were spread evenly.

``RateDecision.reset`` is the epoch second (rounded up) at which the window next admits a hit:
the current second while slots remain, else when the next hit will be allowed. It is never more
than one window ahead: the time of the last counted hit is kept too, and one window after it
every counted hit has left the sliding window, so the state is cleared (the estimate alone could
hold a client back for up to two windows).

Both backends run the same integer arithmetic on milliseconds (``_slide`` here, the same steps
in a Lua script on Redis), so one test suite checks both. The Redis script reads, updates and
expires a small hash in one atomic step, and takes the time from Redis ``TIME``, so API
workers with drifting clocks share one timeline. The memory backend limits each process on
its own; the workers of ``svc serve --workers N`` without Redis share the node's broker
(``BrokerRateLimiter``: the same arithmetic, kept by the broker). ``make_rate_limiter`` wraps
the Redis one (and the broker one) in a
``FallbackRateLimiter``: while Redis does not answer, each process limits on its own again (a
client may get up to N times the limit from N processes), and it goes back to Redis once Redis
answers (``kernel.redisio.redis_fallback``).
"""

from __future__ import annotations

import abc
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernel.cache import REDIS_TIMEOUT, make_redis_client, redact_url
from kernel.redisio.redis_fallback import RedisCircuit, RedisOutage

RATE_KEYS = ("principal", "ip")


@dataclass(frozen=True)
class RateBucket:
    """A named rate limit that routes use, declared by a plugin's ``register_rate_limits``.

    ``limit``: hits per ``window`` seconds, or the name of a setting that holds that number
    (kernel or plugin setting; ``0`` disables the bucket). ``per``: ``"principal"`` counts per
    user or API key and site (anonymous callers per IP), ``"ip"`` per client IP across sites (an
    attacker must not multiply a login limit by naming more sites).
    """

    limit: int | str
    window: float = 60.0
    per: str = "principal"

    def limit_in(self, settings: Any) -> int:
        """The limit now: the number, or the setting's value."""
        if isinstance(self.limit, str):
            return int(settings.get(self.limit, 0) or 0)
        return self.limit


def collect_rate_buckets(pm: Any, kernel: Any) -> dict[str, RateBucket]:
    """Every bucket the enabled plugins declare; a bad or duplicate declaration fails the boot."""
    from kernel.hooks.plugins import PluginError

    buckets: dict[str, RateBucket] = {}
    owners: dict[str, str] = {}
    for impl in reversed(pm.hook.register_rate_limits.get_hookimpls()):
        for name, bucket in (impl.function(kernel=kernel) or {}).items():
            where = f"plugin {impl.plugin_name!r}: rate-limit bucket {name!r}"
            if name in buckets:
                raise PluginError(f"{where} is already declared by plugin {owners[name]!r}")
            if not isinstance(bucket, RateBucket):
                raise PluginError(f"{where} must be a kernel.RateBucket, got {type(bucket).__name__}")
            if bucket.per not in RATE_KEYS:
                raise PluginError(f"{where}: per must be one of {RATE_KEYS}, got {bucket.per!r}")
            if not (isinstance(bucket.window, (int, float)) and bucket.window > 0):
                raise PluginError(f"{where}: window must be a positive number of seconds")
            if isinstance(bucket.limit, str):
                if bucket.limit not in kernel.settings.values and bucket.limit not in kernel.settings.extra:
                    raise PluginError(f"{where}: its limit names the setting {bucket.limit!r}, which nobody declares")
            elif not isinstance(bucket.limit, int) or isinstance(bucket.limit, bool) or bucket.limit < 0:
                raise PluginError(f"{where}: limit must be an integer >= 0 or a setting name")
            buckets[name] = bucket
            owners[name] = impl.plugin_name
    return buckets


def check_route_buckets(routes: list[Any], buckets: dict[str, RateBucket]) -> None:
    """Fail the boot when a route names a bucket no enabled plugin declares."""
    from kernel.hooks.plugins import PluginError

    for route in routes:
        named = route.rate_limit.values() if isinstance(route.rate_limit, dict) else [route.rate_limit]
        for name in named:
            if name is not None and name not in buckets:
                known = ", ".join(sorted(buckets)) or "none"
                raise PluginError(
                    f"route {route.template} of plugin {route.plugin!r} names the rate-limit bucket {name!r}, "
                    f"which no enabled plugin declares (declared: {known}); declare it in register_rate_limits"
                )


@dataclass(frozen=True)
class RateDecision:
    """The answer for one hit: allowed or not, the limit, slots left, and the epoch second at
    which the window next admits a hit (never more than the window ahead)."""

    allowed: bool
    limit: int
    remaining: int
    reset: int


def _window_ms(limit: int, window: float) -> int:
    if not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    if not window > 0:
        raise ValueError(f"window must be a positive number of seconds, got {window!r}")
    return max(1, round(window * 1000))


def _ceil_seconds(ms: int) -> int:
    return -(-ms // 1000)


def _slide(
    state: tuple[int, int, int, int] | None, now: int, limit: int, width: int
) -> tuple[tuple[int, int, int, int], bool, int, int]:
    """One hit at ``now`` (ms) against ``state`` = (window index, current, previous, last hit).

    Returns the new state, allowed, remaining and the reset time in ms: when the window next
    admits a hit (``now`` while slots remain). Counts are scaled by ``width`` so every
    comparison is exact integer arithmetic. The Lua script mirrors this.

    ``last`` is the time of the last counted hit: one window after it, every counted hit has
    left the sliding window, so the state is cleared then. Without it the estimate could hold a
    client back up to two windows (hits at the start of a window are assumed spread over it).
    """
    index = now // width
    w, cur, prev, last = state if state is not None else (index, 0, 0, now)
    if now >= last + width:
        w, cur, prev = index, 0, 0
    if w == index - 1:
        prev, cur = cur, 0
    elif w < index - 1:
        prev, cur = 0, 0
    elif w > index:
        index = w  # the clock stepped back: stay in the window already recorded
    elapsed = max(0, now - index * width)
    used = prev * (width - elapsed) + cur * width
    allowed = used + width <= limit * width
    if allowed:
        cur += 1
        used += width
        last = max(last, now)
    room = limit * width - used
    remaining = room // width if room > 0 else 0
    if remaining > 0:
        return (index, cur, prev, last), allowed, remaining, now
    # The next hit fits once prev * (width - elapsed) + cur * width <= (limit - 1) * width.
    spare = (limit - 1) * width - cur * width
    if spare >= 0 and prev > 0:
        # The previous window's share decays enough within the current window.
        reset = index * width + width - spare // prev
    else:
        # Only once the current window has become the previous one and decays.
        reset = (index + 2) * width - ((limit - 1) * width) // cur
    return (index, cur, prev, last), allowed, remaining, min(reset, last + width)


_SLIDE_SCRIPT = """
local limit = tonumber(ARGV[1])
local width = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local index = math.floor(now / width)
local state = redis.call('HMGET', KEYS[1], 'w', 'c', 'p', 'l')
local w = tonumber(state[1])
local cur = tonumber(state[2]) or 0
local prev = tonumber(state[3]) or 0
local last = tonumber(state[4])
if w == nil then
  w = index
  cur = 0
  prev = 0
  last = now
elseif last == nil then
  last = (w + 1) * width - 1
end
if now >= last + width then
  w = index
  cur = 0
  prev = 0
end
if w == index - 1 then
  prev = cur
  cur = 0
elseif w < index - 1 then
  prev = 0
  cur = 0
elseif w > index then
  index = w
end
local elapsed = now - index * width
if elapsed < 0 then elapsed = 0 end
local used = prev * (width - elapsed) + cur * width
local allowed = 0
if used + width <= limit * width then
  allowed = 1
  cur = cur + 1
  used = used + width
  if now > last then last = now end
end
local room = limit * width - used
local remaining = 0
if room > 0 then remaining = math.floor(room / width) end
local reset
if remaining > 0 then
  reset = now
else
  local spare = (limit - 1) * width - cur * width
  if spare >= 0 and prev > 0 then
    reset = index * width + width - math.floor(spare / prev)
  else
    reset = (index + 2) * width - math.floor(((limit - 1) * width) / cur)
  end
  if last + width < reset then reset = last + width end
end
redis.call('HSET', KEYS[1], 'w', index, 'c', cur, 'p', prev, 'l', last)
redis.call('PEXPIRE', KEYS[1], 2 * width)
return {allowed, remaining, reset}
"""


class RateLimiter(abc.ABC):
    """Counts hits per key; ``hit`` says whether this one is within ``limit`` per ``window`` seconds."""

    @abc.abstractmethod
    async def hit(self, key: str, limit: int, window: float = 60.0) -> RateDecision:
        """Record a hit on ``key`` if allowed, and return the decision."""

    async def check(self) -> str:
        """Health check: "ok" or an exception."""
        return "ok"

    async def close(self) -> None:
        """Release connections."""
        return None

    @abc.abstractmethod
    def describe(self) -> str:
        """The backend, for logs and health output (never credentials)."""


class MemoryRateLimiter(RateLimiter):
    """Per-process limits; state for at most ``max_keys`` keys (least recently hit dropped first)."""

    def __init__(self, clock: Callable[[], float] = time.time, max_keys: int = 100_000) -> None:
        self._clock = clock
        self.max_keys = max_keys
        # key -> (window index, current, previous, last counted hit, expiry in ms)
        self._state: OrderedDict[str, tuple[int, int, int, int, int]] = OrderedDict()

    def describe(self) -> str:
        return "memory"

    async def hit(self, key: str, limit: int, window: float = 60.0) -> RateDecision:
        """Decide and record in one synchronous step (atomic on the event loop)."""
        allowed, remaining, reset = self.hit_ms(key, limit, _window_ms(limit, window))
        return RateDecision(allowed, limit, remaining, _ceil_seconds(reset))

    def hit_ms(self, key: str, limit: int, width: int) -> tuple[bool, int, int]:
        """One hit on a window of ``width`` ms: (allowed, remaining, reset in epoch ms); the
        node's broker (``kernel.broker``) answers its workers with it."""
        now = int(self._clock() * 1000)
        entry = self._state.pop(key, None)
        state = entry[:4] if entry is not None and entry[4] > now else None
        (index, cur, prev, last), allowed, remaining, reset = _slide(state, now, limit, width)
        self._state[key] = (index, cur, prev, last, now + 2 * width)
        while len(self._state) > self.max_keys:
            self._state.popitem(last=False)
        return allowed, remaining, reset


class BrokerRateLimiter(RateLimiter):
    """Limits shared by the workers of one node without Redis: the same arithmetic, kept by the
    node's broker (``kernel.broker``, run by the parent of ``svc serve --workers N``)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.namespace = ""

    def describe(self) -> str:
        return f"broker {self.client.path}"

    async def hit(self, key: str, limit: int, window: float = 60.0) -> RateDecision:
        allowed, remaining, reset = await self.client.slide(key, limit, _window_ms(limit, window))
        return RateDecision(allowed, limit, remaining, _ceil_seconds(reset))

    async def check(self) -> str:
        await self.client.ping()
        return "ok"

    async def close(self) -> None:
        await self.client.aclose()


class RedisRateLimiter(RateLimiter):
    """Limits shared by every worker: one hash per key under ``namespace``, updated by a Lua script.

    ``clock`` is for tests: when given, its time is sent to the script instead of Redis TIME.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        namespace: str = "svc:ratelimit:",
        *,
        client: Any = None,
        clock: Callable[[], float] | None = None,
        timeout: float = REDIS_TIMEOUT,
    ) -> None:
        self.url = url
        self.namespace = namespace
        self._owns_client = client is None
        self._client = client if client is not None else make_redis_client(url, timeout)
        self._script = self._client.register_script(_SLIDE_SCRIPT)
        self._clock = clock

    def describe(self) -> str:
        return f"redis {redact_url(self.url)} namespace {self.namespace!r}"

    async def hit(self, key: str, limit: int, window: float = 60.0) -> RateDecision:
        """Decide and record atomically on the Redis server."""
        width = _window_ms(limit, window)
        now = -1 if self._clock is None else int(self._clock() * 1000)
        allowed, remaining, reset = await self._script(keys=[self.namespace + key], args=[limit, width, now])
        return RateDecision(bool(int(allowed)), limit, int(remaining), _ceil_seconds(int(reset)))

    async def check(self) -> str:
        """PING the server."""
        await self._client.ping()
        return "ok"

    async def close(self) -> None:
        """Close the connection pool if this limiter created it."""
        if self._owns_client:
            await self._client.aclose()


class FallbackRateLimiter(RateLimiter):
    """The Redis limiter, or a per-process ``MemoryRateLimiter`` while Redis does not answer.

    The fallback starts counting from zero, so the first window of an outage admits up to the
    limit again in each process; a limit is a bound on abuse, not an exact quota.
    """

    def __init__(self, primary: RateLimiter, fallback: RateLimiter | None = None, *,
                 circuit: RedisCircuit | None = None) -> None:
        """``circuit``: the process's state of this Redis, shared with its other parts
        (``kernel.redis_circuit``); without it, one of its own."""
        self.primary = primary
        self.memory = fallback if fallback is not None else MemoryRateLimiter()
        self.outage = RedisOutage("rate limits", "per-process rate limits", circuit=circuit)

    @property
    def namespace(self) -> str:
        return str(getattr(self.primary, "namespace", ""))

    def describe(self) -> str:
        return self.primary.describe() + ("" if self.outage.up else " (Redis down: per-process limits)")

    async def hit(self, key: str, limit: int, window: float = 60.0) -> RateDecision:
        """Decide on Redis, or in this process while Redis is down."""
        return await self.outage.call(lambda: self.primary.hit(key, limit, window),
                                      lambda: self.memory.hit(key, limit, window))

    async def check(self) -> str:
        """A real PING through ``RedisOutage.probe``: "ok", or the degraded detail."""
        return await self.outage.probe(self.primary.check)

    async def close(self) -> None:
        await self.primary.close()


def make_rate_limiter(settings: Any, circuit: RedisCircuit | None = None, broker: Any = None) -> RateLimiter:
    """``RedisRateLimiter`` (in a ``FallbackRateLimiter`` on ``circuit``) when ``settings.redis_url``
    is set, else the node's broker (``broker``, a ``kernel.workers.broker.BrokerClient``, likewise with a
    per-process fallback), else ``MemoryRateLimiter``."""
    url = (getattr(settings, "redis_url", "") or "").strip()
    if not url and broker is not None:
        return FallbackRateLimiter(BrokerRateLimiter(broker), circuit=circuit)
    if url:
        namespace = getattr(settings, "redis_namespace", "") or "svc"
        timeout = getattr(settings, "redis_timeout", REDIS_TIMEOUT)
        return FallbackRateLimiter(RedisRateLimiter(url, namespace=f"{namespace}:ratelimit:", timeout=timeout),
                                   circuit=circuit)
    return MemoryRateLimiter()
