"""One contract, every cache backend: in-process memory and Redis.

The Redis variant runs against the ``redis_url`` fixture of ``kernel.testing`` (``SVC_TEST_REDIS_URL``, default ``redis://127.0.0.1:6379/15``)
and is skipped only when that server does not answer. Each test gets its own namespace and
removes only its own keys afterwards.
"""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
import redis
import redis.asyncio

from kernel.cache import Cache, FallbackCache, MemoryCache, RedisCache, make_cache


def _purge(url: str, namespace: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=namespace + "*", count=500))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.fixture
def namespace() -> str:
    return f"svctest:cache:{uuid.uuid4().hex}:"


class Backend:
    """A cache under test and ``advance(seconds)``, which moves its time on: the memory cache's
    clock, or every Redis key's remaining TTL of the test's namespace (expiry is the only thing
    time changes there), so that expiry is asserted without sleeping (docs/testing.md, rule 6)."""

    def __init__(self, cache: Cache, advance: Any) -> None:
        self.cache, self.advance = cache, advance


@pytest.fixture(params=["memory", "redis"])
async def backend(request, namespace):
    """Each backend, empty."""
    if request.param == "memory":
        now = [1000.0]

        async def advance_clock(seconds: float) -> None:
            now[0] += seconds

        yield Backend(MemoryCache(clock=lambda: now[0]), advance_clock)
        return
    url = request.getfixturevalue("redis_url")
    raw = redis.asyncio.Redis.from_url(url)

    async def advance_ttls(seconds: float) -> None:
        async for key in raw.scan_iter(match=namespace + "*", count=500):
            left = await raw.pttl(key)
            if left < 0:  # no expiry (-1), or gone meanwhile (-2)
                continue
            if left <= seconds * 1000:
                await raw.delete(key)
            else:
                await raw.pexpire(key, int(left - seconds * 1000))

    cache = RedisCache(url, namespace=namespace)
    try:
        yield Backend(cache, advance_ttls)
    finally:
        await cache.close()
        await raw.aclose()
        _purge(url, namespace)


@pytest.fixture
def cache(backend: Backend) -> Cache:
    return backend.cache


# -- the contract --------------------------------------------------------------------------


async def test_get_of_a_missing_key_is_none(cache: Cache):
    assert await cache.get("missing") is None


async def test_set_then_get_returns_the_string(cache: Cache):
    await cache.set("k", '{"a": 1, "é": "ü"}')
    assert await cache.get("k") == '{"a": 1, "é": "ü"}'
    await cache.set("k", "")
    assert await cache.get("k") == ""


async def test_set_replaces_the_value(cache: Cache):
    await cache.set("k", "one")
    await cache.set("k", "two")
    assert await cache.get("k") == "two"


async def test_values_must_be_strings(cache: Cache):
    with pytest.raises(TypeError):
        await cache.set("k", b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await cache.set("k", 5)  # type: ignore[arg-type]


@pytest.mark.parametrize("ttl", [0, -1])
async def test_ttl_must_be_positive(cache: Cache, ttl):
    with pytest.raises(ValueError):
        await cache.set("k", "v", ttl=ttl)
    with pytest.raises(ValueError):
        await cache.incr("n", ttl=ttl)


async def test_entries_expire_after_their_ttl(backend: Backend):
    cache = backend.cache
    await cache.set("short", "v", ttl=10)
    await cache.set("long", "v", ttl=30)
    await backend.advance(9)
    assert await cache.get("short") == "v"
    await backend.advance(2)
    assert await cache.get("short") is None
    assert await cache.get("long") == "v"


async def test_set_without_ttl_clears_an_old_expiry(backend: Backend):
    cache = backend.cache
    await cache.set("k", "v", ttl=10)
    await cache.set("k", "w")
    await backend.advance(3600)
    assert await cache.get("k") == "w"


async def test_delete_is_idempotent(cache: Cache):
    await cache.set("k", "v")
    await cache.delete("k")
    assert await cache.get("k") is None
    await cache.delete("k")


async def test_incr_counts_from_zero(cache: Cache):
    assert await cache.incr("n") == 1
    assert await cache.incr("n") == 2
    assert await cache.incr("n", 5) == 7
    assert await cache.incr("n", -10) == -3
    assert await cache.get("n") == "-3"


async def test_incr_of_a_stored_integer_string(cache: Cache):
    await cache.set("n", "41")
    assert await cache.incr("n") == 42


async def test_incr_of_a_non_integer_raises_value_error(cache: Cache):
    await cache.set("n", "not a number")
    with pytest.raises(ValueError):
        await cache.incr("n")
    assert await cache.get("n") == "not a number"


async def test_incr_ttl_is_set_once_and_not_extended(backend: Backend):
    cache = backend.cache
    assert await cache.incr("window", ttl=10) == 1
    # A later ttl must not push the window out: fixed-window counters rely on it.
    assert await cache.incr("window", ttl=30) == 2
    await backend.advance(11)
    assert await cache.get("window") is None
    assert await cache.incr("window", ttl=30) == 1


async def test_concurrent_incr_loses_no_update(cache: Cache):
    await asyncio.gather(*(cache.incr("hits") for _ in range(50)))
    assert await cache.get("hits") == "50"


async def test_bump_adds_one_to_each_key(cache: Cache):
    await cache.set("gen:a", "41")
    await cache.bump("gen:a", "gen:b")
    await cache.bump("gen:b")
    await cache.bump()
    assert (await cache.get("gen:a"), await cache.get("gen:b")) == ("42", "2")


async def test_delete_prefix_removes_only_matching_keys(cache: Cache):
    for key in ("site:1:a", "site:1:b", "site:10:a", "site:2:a", "other"):
        await cache.set(key, "v")
    assert await cache.delete_prefix("site:1:") == 2
    assert await cache.get("site:1:a") is None
    assert await cache.get("site:10:a") == "v"
    assert await cache.get("site:2:a") == "v"
    assert await cache.get("other") == "v"
    assert await cache.delete_prefix("nothing:") == 0


async def test_delete_prefix_is_literal_not_a_glob(cache: Cache):
    await cache.set("a*", "v")
    await cache.set("ab", "v")
    await cache.set("a?c", "v")
    await cache.set("a[b]", "v")
    assert await cache.delete_prefix("a*") == 1
    assert await cache.delete_prefix("a[") == 1
    assert await cache.get("ab") == "v"
    assert await cache.get("a?c") == "v"


async def test_delete_prefix_handles_many_keys(cache: Cache):
    for i in range(1200):
        await cache.set(f"bulk:{i}", "v")
    assert await cache.delete_prefix("bulk:") == 1200
    assert await cache.get("bulk:7") is None


async def test_check_and_describe(cache: Cache):
    assert await cache.check() == "ok"
    assert cache.describe()


# -- backend specifics ---------------------------------------------------------------------


async def test_memory_cache_evicts_the_least_recently_used():
    cache = MemoryCache(max_entries=3)
    for key in ("a", "b", "c"):
        await cache.set(key, key)
    assert await cache.get("a") == "a"  # 'a' is now the most recently used
    await cache.set("d", "d")
    assert await cache.get("b") is None
    assert [await cache.get(k) for k in ("a", "c", "d")] == ["a", "c", "d"]
    assert len(cache) == 3


async def test_memory_cache_expiry_follows_its_clock():
    now = [1000.0]
    cache = MemoryCache(clock=lambda: now[0])
    await cache.set("k", "v", ttl=10)
    now[0] += 9.9
    assert await cache.get("k") == "v"
    now[0] += 0.2
    assert await cache.get("k") is None
    assert len(cache) == 0


async def test_redis_namespaces_keep_caches_apart(redis_url, namespace):
    one = RedisCache(redis_url, namespace=namespace + "one:")
    two = RedisCache(redis_url, namespace=namespace + "two:")
    try:
        await one.set("k", "1")
        await two.set("k", "2")
        assert await one.delete_prefix("") == 1
        assert await two.get("k") == "2"
    finally:
        await one.close()
        await two.close()
        _purge(redis_url, namespace)


async def test_redis_describe_hides_the_password():
    cache = RedisCache("redis://user:hunter2@127.0.0.1:6379/5", namespace="x:")
    try:
        assert "hunter2" not in cache.describe()
        assert "***" in cache.describe()
    finally:
        await cache.close()


async def test_redis_check_raises_when_the_server_is_gone():
    cache = RedisCache("redis://127.0.0.1:1/0", namespace="x:")
    try:
        with pytest.raises(Exception):  # noqa: B017 - any connection error is the point
            await cache.check()
    finally:
        await cache.close()


def test_make_cache_picks_the_backend():
    assert isinstance(make_cache(SimpleNamespace(redis_url="")), MemoryCache)
    cache = make_cache(SimpleNamespace(redis_url="redis://127.0.0.1:6379/5"))
    assert isinstance(cache, FallbackCache) and isinstance(cache.primary, RedisCache)
    assert cache.namespace == "svc:cache:"
    cache = make_cache(SimpleNamespace(redis_url="redis://127.0.0.1:6379/5", redis_namespace="t1"))
    assert cache.namespace == "t1:cache:"
    with pytest.raises(ValueError, match="SVC_REDIS_URL"):
        make_cache(SimpleNamespace(redis_url="http://not-redis"))


async def test_a_refused_redis_falls_back_to_the_process_memory(caplog):
    from kernel.testing import free_port

    cache = make_cache(SimpleNamespace(redis_url=f"redis://127.0.0.1:{free_port()}/0"))
    try:
        await cache.set("k", "v", ttl=30)
        assert await cache.get("k") == "v"
        assert await cache.incr("n", 2) == 2
        await cache.delete("k")
        assert await cache.get("k") is None
        assert cache.outage.up is False and cache.outage.fallbacks == 5
        warnings = [r for r in caplog.records if "Redis unreachable for cache" in r.getMessage()]
        assert len(warnings) == 1
        assert (await cache.check()).startswith("degraded: Redis unreachable since ")
    finally:
        await cache.close()


async def test_the_fallback_cache_goes_back_to_redis_and_forgets_deleted_entries(redis_url, namespace):
    from redis.exceptions import ConnectionError as RedisConnectionError

    cache = FallbackCache(RedisCache(redis_url, namespace=namespace))
    try:
        await cache.set("k", "before")  # in Redis
        cache.outage.failed(RedisConnectionError("refused"))  # as a refused call leaves it
        await cache.set("k", "during")  # in this process only
        assert await cache.get("k") == "during"
        assert await cache.check() == "ok"  # a probe that reaches Redis ends the outage
        assert await cache.get("k") == "before"  # Redis again: what it held
        await cache.delete("k")  # gone from both
        cache.outage.failed(RedisConnectionError("refused"))
        assert await cache.get("k") is None
    finally:
        await cache.close()
        _purge(redis_url, namespace)
