"""Redis cache: shared by every API worker and job worker of a deployment.

All keys live under a namespace prefix (default ``svc:cache:``) so the cache can share a Redis
database with the bus, the rate limiter and the job queue, and ``delete_prefix`` never
touches anything else.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from kernel.cache.base import Cache, check_ttl, check_value

if TYPE_CHECKING:
    import redis.asyncio as aioredis

# INCRBY and the first expiry in one step: a counter created by incr must not outlive its
# window because the process died between two commands.
_INCR_SCRIPT = """
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
if ARGV[2] ~= '' and redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return value
"""

_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***``, for logs and health output."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


POOL_SIZE = 200  # connections per client and process
REDIS_TIMEOUT = 2.0  # SVC_REDIS_TIMEOUT's default


def make_redis_client(url: str, timeout: float = REDIS_TIMEOUT) -> aioredis.Redis:
    """An asyncio Redis client returning ``str``; short timeouts so a dead Redis fails fast.

    ``timeout`` (SVC_REDIS_TIMEOUT) bounds connecting, each command's answer and the wait for a
    pooled connection: a Redis that accepts but never answers (paused, blackholed) raises
    ``redis.TimeoutError`` after it, which the fallbacks (``kernel.redisio.redis_fallback``) take as down.
    The pool *waits* (up to ``timeout``) for a free connection when all ``POOL_SIZE``
    are busy: redis-py's default pool raises ``MaxConnectionsError`` at once instead (100
    connections since redis-py 8), which turned a burst of requests (a noisy site's flood of
    rate-limited reads, each one Redis call) into 500s for every site of the process."""
    import redis.asyncio as aioredis  # here, not at the top: a process without Redis does not import it

    try:
        pool = aioredis.BlockingConnectionPool.from_url(
            url,
            decode_responses=True,
            socket_connect_timeout=timeout,
            socket_timeout=timeout,
            health_check_interval=30,
            max_connections=POOL_SIZE,
            timeout=timeout,
        )
        return aioredis.Redis.from_pool(pool)  # closing the client closes its pool
    except ValueError as exc:
        raise ValueError(f"SVC_REDIS_URL={redact_url(url)!r} is not a valid Redis URL: {exc}") from None


def _ms(ttl: float) -> int:
    return max(1, round(ttl * 1000))


def _text(value: Any) -> str | None:
    # A client shared from elsewhere may not decode responses.
    if value is None or isinstance(value, str):
        return value
    return bytes(value).decode("utf-8")


class RedisCache(Cache):
    """Cache entries as Redis strings under ``namespace``; pass ``client`` to share a connection pool."""

    shared = True

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        namespace: str = "svc:cache:",
        *,
        client: aioredis.Redis | None = None,
        timeout: float = REDIS_TIMEOUT,
    ) -> None:
        self.url = url
        self.namespace = namespace
        self._owns_client = client is None
        self._client = client if client is not None else make_redis_client(url, timeout)
        self._incr = self._client.register_script(_INCR_SCRIPT)

    def describe(self) -> str:
        return f"redis {redact_url(self.url)} namespace {self.namespace!r}"

    def _key(self, key: str) -> str:
        return self.namespace + key

    async def get(self, key: str) -> str | None:
        """The value, or None when missing or expired."""
        return self._counted(_text(await self._client.get(self._key(key))))

    async def set(self, key: str, value: str, ttl: float | None = None) -> None:
        """Store ``value``; SET without PX also clears an old expiry, as the contract wants."""
        check_value(value)
        check_ttl(ttl)
        await self._client.set(self._key(key), value, px=None if ttl is None else _ms(ttl))

    async def delete(self, key: str) -> None:
        """Remove ``key`` if present."""
        await self._client.delete(self._key(key))

    async def incr(self, key: str, amount: int = 1, ttl: float | None = None) -> int:
        """Add ``amount`` atomically; ``ttl`` is applied only if the key has no expiry yet."""
        from redis.exceptions import ResponseError  # loaded with the client: a dictionary look-up

        check_ttl(ttl)
        try:
            value = await self._incr(
                keys=[self._key(key)], args=[int(amount), "" if ttl is None else _ms(ttl)]
            )
        except ResponseError as exc:
            if "not an integer" in str(exc):
                raise ValueError(f"cache value under {key!r} is not an integer") from None
            raise
        return int(value)

    async def bump(self, *keys: str) -> None:
        """One pipeline of INCRs (not the script ``incr`` runs for its ``ttl``): one round trip."""
        if keys:
            async with self._client.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.incr(self._key(key))
                await pipe.execute()

    async def delete_prefix(self, prefix: str) -> int:
        """Remove keys starting with ``prefix`` using SCAN (never KEYS, which blocks Redis)."""
        # The prefix is literal: escape glob characters so 'a*' does not match 'ab'.
        pattern = _GLOB_SPECIAL.sub(r"\\\1", self._key(prefix)) + "*"
        removed = 0
        batch: list[str] = []
        async for key in self._client.scan_iter(match=pattern, count=500):
            batch.append(key)
            if len(batch) >= 500:
                removed += await self._client.unlink(*batch)
                batch.clear()
        if batch:
            removed += await self._client.unlink(*batch)
        return removed

    async def check(self) -> str:
        """PING the server: "ok" or the connection error."""
        await self._client.ping()
        return "ok"

    async def close(self) -> None:
        """Close the connection pool if this cache created it."""
        if self._owns_client:
            await self._client.aclose()
