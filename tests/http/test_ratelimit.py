"""The sliding-window rate limiter, one contract over the memory and Redis backends.

Most tests drive a fake clock (the Redis variant then sends that time to its script instead of
using Redis TIME), so sliding behaviour is checked exactly without sleeping. One test per
backend uses the real clock with a 1 s window and generous sleeps.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import uuid
from types import SimpleNamespace

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.http.ratelimit import (
    FallbackRateLimiter,
    MemoryRateLimiter,
    RedisRateLimiter,
    _slide,
    make_rate_limiter,
)

REDIS_URL = os.environ.get("SVC_TEST_REDIS_URL", "redis://127.0.0.1:6379/5")
T0 = 1_700_000_000.0  # a window boundary for 10 s windows


class FakeClock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now



@pytest.fixture(params=["memory", "redis"])
async def make_limiter(request):
    """A factory of limiters of one backend; ``make_limiter(clock=None)``."""
    made = []
    namespace = f"svctest:rl:{uuid.uuid4().hex}:"
    url = request.getfixturevalue("redis_url") if request.param == "redis" else None

    def make(clock=None):
        if url is None:
            limiter = MemoryRateLimiter(clock=clock or time.time)
        else:
            limiter = RedisRateLimiter(url, namespace=namespace, clock=clock)
        made.append(limiter)
        return limiter

    yield make
    for limiter in made:
        await limiter.close()
    if url is not None:
        client = redis.Redis.from_url(url)
        keys = list(client.scan_iter(match=namespace + "*", count=500))
        if keys:
            client.delete(*keys)
        client.close()


async def test_allows_up_to_the_limit_then_denies(make_limiter):
    limiter = make_limiter()
    decisions = [await limiter.hit("user:1", 5, 60) for _ in range(6)]
    assert [d.allowed for d in decisions] == [True] * 5 + [False]
    assert [d.remaining for d in decisions] == [4, 3, 2, 1, 0, 0]
    assert all(d.limit == 5 for d in decisions)
    now = time.time()
    assert now - 1 <= decisions[-1].reset <= now + 61  # never more than the window ahead


async def test_keys_are_counted_apart(make_limiter):
    limiter = make_limiter()
    assert (await limiter.hit("a", 1, 60)).allowed
    assert not (await limiter.hit("a", 1, 60)).allowed
    assert (await limiter.hit("b", 1, 60)).allowed


@pytest.mark.parametrize(("limit", "window"), [(0, 60), (-1, 60), (5, 0), (5, -1), (2.5, 60)])
async def test_bad_arguments(make_limiter, limit, window):
    with pytest.raises(ValueError):
        await make_limiter().hit("k", limit, window)


async def test_the_window_slides(make_limiter):
    clock = FakeClock(T0 + 9)
    limiter = make_limiter(clock)
    assert all([(await limiter.hit("k", 10, 10)).allowed for _ in range(10)])
    assert not (await limiter.hit("k", 10, 10)).allowed
    # A fixed window would start afresh here; the sliding window still sees all 10 hits.
    clock.now = T0 + 10
    assert not (await limiter.hit("k", 10, 10)).allowed
    # Half-way through the next window half of those hits are taken to have slid out.
    clock.now = T0 + 15
    allowed = [(await limiter.hit("k", 10, 10)).allowed for _ in range(6)]
    assert allowed == [True] * 5 + [False]
    # Two windows later nothing is left.
    clock.now = T0 + 30
    decision = await limiter.hit("k", 10, 10)
    assert decision.allowed and decision.remaining == 9


async def test_hits_leave_one_window_after_the_last_one(make_limiter):
    # All hits at the start of a window: the estimate alone would spread them over the window
    # and hold the client back until the end of the next one, two windows after them.
    clock = FakeClock(T0)
    limiter = make_limiter(clock)
    assert all([(await limiter.hit("k", 3, 10)).allowed for _ in range(3)])
    clock.now = T0 + 9.999
    denied = await limiter.hit("k", 3, 10)
    assert not denied.allowed and denied.reset == int(T0 + 10)
    clock.now = T0 + 10
    decision = await limiter.hit("k", 3, 10)
    assert decision.allowed and decision.remaining == 2


async def test_a_denied_hit_is_allowed_again_at_its_reset(make_limiter):
    clock = FakeClock(T0 + 3.25)
    limiter = make_limiter(clock)
    for _ in range(4):
        await limiter.hit("k", 4, 10)
    for _ in range(20):  # hammering while blocked must not push the reset out
        denied = await limiter.hit("k", 4, 10)
        assert not denied.allowed and denied.remaining == 0
        clock.now += 0.1
    assert denied.reset > clock.now
    clock.now = float(denied.reset)
    assert (await limiter.hit("k", 4, 10)).allowed


async def test_reset_is_when_the_window_next_admits_a_hit(make_limiter):
    clock = FakeClock(T0 + 2.5)
    limiter = make_limiter(clock)
    first = await limiter.hit("k", 3, 10)
    # Slots remain: the window admits the next hit now (this second, rounded up).
    assert first.allowed and first.remaining == 2 and first.reset == int(T0 + 3)
    await limiter.hit("k", 3, 10)
    last = await limiter.hit("k", 3, 10)
    # The last slot taken: the next hit is admitted once these hits have slid out, one window
    # after them, not two windows after the start of the current one.
    assert last.allowed and last.remaining == 0 and last.reset == int(T0 + 12.5) + 1
    clock.now = T0 + 12.499  # the exact moment is 12.5, rounded up in the header
    assert not (await limiter.hit("k", 3, 10)).allowed
    clock.now = float(last.reset)
    assert (await limiter.hit("k", 3, 10)).allowed


@pytest.mark.parametrize("start", [0.0, 0.001, 4.2, 9.999])
async def test_reset_is_never_more_than_the_window_ahead(make_limiter, start):
    clock = FakeClock(T0 + start)
    limiter = make_limiter(clock)
    for step in [0.0, 0.0, 0.3, 2.0, 7.7, 0.01, 5.0, 11.0, 0.0, 0.0, 0.0, 19.5]:
        clock.now += step
        decision = await limiter.hit("k", 2, 10)
        assert clock.now <= decision.reset <= clock.now + 10 + 1  # rounded up to the second
        if decision.remaining:
            assert decision.reset == -(-clock.now // 1)


async def test_concurrent_hits_never_exceed_the_limit(make_limiter):
    limiter = make_limiter()
    decisions = await asyncio.gather(*(limiter.hit("burst", 20, 60) for _ in range(50)))
    assert sum(d.allowed for d in decisions) == 20


async def test_real_clock_window_frees_after_it_passes(make_limiter):
    limiter = make_limiter()
    assert all([(await limiter.hit("slow", 3, 1.0)).allowed for _ in range(3)])
    assert not (await limiter.hit("slow", 3, 1.0)).allowed
    await asyncio.sleep(2.1)  # two whole windows: every counted hit has slid out
    decision = await limiter.hit("slow", 3, 1.0)
    assert decision.allowed and decision.remaining == 2


async def test_memory_and_redis_decide_alike(redis_url):
    rng = random.Random(7)
    memory_clock, redis_clock = FakeClock(T0 + 1.234), FakeClock(T0 + 1.234)
    memory = MemoryRateLimiter(clock=memory_clock)
    namespace = f"svctest:rl:{uuid.uuid4().hex}:"
    shared = RedisRateLimiter(redis_url, namespace=namespace, clock=redis_clock)
    try:
        for _ in range(150):
            step = rng.choice([0, 0, 0.05, 0.4, 1.7, 3.3, 12.5])
            memory_clock.now += step
            redis_clock.now += step
            key = rng.choice(["a", "b"])
            assert await memory.hit(key, 7, 10) == await shared.hit(key, 7, 10)
    finally:
        await shared.close()
        client = redis.Redis.from_url(redis_url)
        keys = list(client.scan_iter(match=namespace + "*"))
        if keys:
            client.delete(*keys)
        client.close()


async def test_redis_state_expires_after_two_windows(redis_url):
    namespace = f"svctest:rl:{uuid.uuid4().hex}:"
    limiter = RedisRateLimiter(redis_url, namespace=namespace)
    client = redis.Redis.from_url(redis_url)
    try:
        await limiter.hit("k", 5, 10)
        assert 0 < client.pttl(namespace + "k") <= 20_000
    finally:
        await limiter.close()
        client.delete(namespace + "k")
        client.close()


def _fits(state, at: int, limit: int, width: int, slots: int) -> bool:
    """Whether ``slots`` more hits fit at ``at`` (ms) given ``state``, without recording them."""
    index, cur, prev, last = state
    if at >= last + width:
        return slots <= limit
    if index == at // width - 1:
        index, cur, prev = index + 1, 0, cur
    elif index < at // width - 1:
        index, cur, prev = at // width, 0, 0
    used = prev * (width - (at - index * width)) + cur * width
    return used + slots * width <= limit * width


@given(
    hits=st.lists(st.integers(min_value=0, max_value=25_000), min_size=1, max_size=40),
    limit=st.integers(min_value=1, max_value=8),
    width=st.sampled_from([1_000, 7_000, 10_000]),
)
@settings(deadline=None)  # pure arithmetic; the default 200 ms deadline flaked on a loaded machine
def test_reset_is_the_first_moment_the_window_admits_a_hit(hits, limit, width):
    now, state = 1_700_000_000_000, None
    for step in hits:
        now += step
        state, _, remaining, reset = _slide(state, now, limit, width)
        assert now <= reset <= now + width
        assert _fits(state, reset, limit, width, 1)
        if remaining:
            assert reset == now
        else:
            assert reset > now and not _fits(state, reset - 1, limit, width, 1)


def test_make_rate_limiter_picks_the_backend():
    assert isinstance(make_rate_limiter(SimpleNamespace(redis_url="")), MemoryRateLimiter)
    limiter = make_rate_limiter(SimpleNamespace(redis_url=REDIS_URL, redis_namespace="t9"))
    assert isinstance(limiter, FallbackRateLimiter) and isinstance(limiter.primary, RedisRateLimiter)
    assert limiter.namespace == "t9:ratelimit:"
    assert "t9" in limiter.describe()


async def test_a_refused_redis_falls_back_to_per_process_limits(caplog):
    from kernel.testing import free_port

    limiter = make_rate_limiter(SimpleNamespace(redis_url=f"redis://127.0.0.1:{free_port()}/0"))
    try:
        decisions = [await limiter.hit("k", 2, 60) for _ in range(3)]
        assert [d.allowed for d in decisions] == [True, True, False]  # still limited, in process
        assert limiter.outage.up is False and limiter.outage.fallbacks == 3
        warnings = [r for r in caplog.records if "Redis unreachable for rate limits" in r.getMessage()]
        assert len(warnings) == 1
        assert (await limiter.check()).startswith("degraded: Redis unreachable since ")
    finally:
        await limiter.close()


async def test_the_fallback_limiter_goes_back_to_redis_when_it_answers(redis_url):
    from redis.exceptions import ConnectionError as RedisConnectionError

    limiter = make_rate_limiter(SimpleNamespace(redis_url=redis_url, redis_namespace=f"svctest-{os.getpid()}"))
    key = f"back-{time.time_ns()}"
    try:
        limiter.outage.failed(RedisConnectionError("refused"))  # as a refused call leaves it
        assert (await limiter.hit(key, 5, 60)).remaining == 4  # served in process
        assert await limiter.check() == "ok"  # a probe that reaches Redis ends the outage
        assert limiter.outage.up is True
        assert (await limiter.hit(key, 5, 60)).remaining == 4  # counted on Redis, which had none
        assert (await limiter.hit(key, 5, 60)).remaining == 3
    finally:
        await limiter.primary._client.delete(limiter.namespace + key)
        await limiter.close()
