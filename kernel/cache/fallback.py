"""The Redis cache with a per-process fallback while Redis does not answer (``kernel.redisio.redis_fallback``)."""

from __future__ import annotations

from kernel.cache.base import Cache
from kernel.cache.memory import MemoryCache
from kernel.redisio.redis_fallback import RedisCircuit, RedisOutage, nothing, zero
from kernel.redisio.redis_writes import RedisWrites


class FallbackCache(Cache):
    """The Redis cache, or an in-process ``MemoryCache`` while Redis does not answer.

    Entries written to the fallback stay in this process and are not copied to Redis when it
    returns: a cache may forget, and every user of it has a short expiry or a version in its
    key, so at worst an entry cached before the outage is read once more until it expires.
    """

    def __init__(self, primary: Cache, fallback: MemoryCache | None = None, *, circuit: RedisCircuit | None = None,
                 writes: RedisWrites | None = None) -> None:
        """``circuit``: the process's state of this Redis, shared with its other parts
        (``kernel.redis_circuit``); without it, one of its own. ``writes``: the process's
        queue of Redis writes (``kernel.redis_writes``) on the same server, which sends the
        ``bump``s with the publishes of the same write."""
        self.primary = primary
        self.memory = fallback if fallback is not None else MemoryCache(max_entries=10_000)
        self.outage = RedisOutage("cache", "a per-process memory cache", circuit=circuit)
        self.writes = writes

    @property  # type: ignore[override]
    def shared(self) -> bool:
        return self.primary.shared

    @property
    def namespace(self) -> str:
        return str(getattr(self.primary, "namespace", ""))

    @property  # type: ignore[override]
    def hits(self) -> int:
        """Reads that found a value, on Redis or on the fallback (``/metrics``)."""
        return self.primary.hits + self.memory.hits

    @property  # type: ignore[override]
    def misses(self) -> int:
        return self.primary.misses + self.memory.misses

    def describe(self) -> str:
        return self.primary.describe() + ("" if self.outage.up else " (Redis down: per-process memory)")

    async def get(self, key: str) -> str | None:
        return await self.outage.call(lambda: self.primary.get(key), lambda: self.memory.get(key))

    async def set(self, key: str, value: str, ttl: float | None = None) -> None:
        await self.outage.call(lambda: self.primary.set(key, value, ttl), lambda: self.memory.set(key, value, ttl))

    async def delete(self, key: str) -> None:
        # Also from the fallback: an entry cached there during the outage must not outlive its
        # deletion once Redis is back.
        await self.memory.delete(key)
        await self.outage.call(lambda: self.primary.delete(key), nothing)

    async def incr(self, key: str, amount: int = 1, ttl: float | None = None) -> int:
        return await self.outage.call(lambda: self.primary.incr(key, amount, ttl),
                                      lambda: self.memory.incr(key, amount, ttl))

    async def bump(self, *keys: str) -> None:
        if self.writes is None:
            await self.outage.call(lambda: self.primary.bump(*keys), lambda: self.memory.bump(*keys))
            return
        # An item write's generation counters go with its publishes (one pipeline); a counter
        # Redis did not take moves in the fallback, as ``outage.call`` would have moved it.
        sent = [self.writes.send(self.outage, "INCR", self.namespace + key, failed=lambda key=key: self.memory.add(key))
                for key in keys]
        for answer in sent:
            await answer

    async def delete_prefix(self, prefix: str) -> int:
        removed = await self.memory.delete_prefix(prefix)
        return removed + await self.outage.call(lambda: self.primary.delete_prefix(prefix), zero)

    async def check(self) -> str:
        """A real PING through ``RedisOutage.probe``: "ok", or the degraded detail."""
        return await self.outage.probe(self.primary.check)

    async def close(self) -> None:
        await self.primary.close()
        await self.memory.close()
