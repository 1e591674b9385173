"""Connection slots: at most ``limit`` open connections of one kind per site, across workers and nodes.

The realtime WebSockets (``SVC_REALTIME_MAX_CONNECTIONS``) and the GraphQL event streams
(``SVC_GQL_MAX_SUBSCRIPTIONS``) each hold one ``ConnectionLimiter``, made by
``connection_limiter(kernel, kind, limit, lease)``, which picks where the count lives:

- **Redis** (``SVC_REDIS_URL``): each site has a sorted set ``<namespace>:<kind>:conns:<site>``
  whose members are connection ids and whose scores are lease deadlines (Unix seconds).
  Admitting a connection runs one Lua script: drop the expired members, count, add when under
  the limit. Each process renews the leases of the connections it holds every third of the
  lease, and removes a member when its connection closes. A worker that dies without closing
  stops renewing, so its members expire after one lease: the count never leaks for good.
- **The node's broker** (``svc serve --workers N`` without Redis, ``kernel.broker``): the broker
  counts; a lease lasts as long as the worker's connection to the broker, so a dead worker's
  slots go with it, and a worker that reconnects lists the slots it still holds again.
- **This process** (one process, no Redis): a count in memory.

While Redis (or the broker) does not answer, a connection is admitted against this process's
own count (the limit then holds per process), with one WARNING on ``svc.redis`` and
``svc_redis_up{component=...} 0`` (``kernel.redisio.redis_fallback``). With Redis, connections admitted
meanwhile are added to the site's sorted set at the first lease renewal after Redis returns, so
the shared count includes them again; with the broker they stay counted in their process only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import Any

from kernel.redisio.redis_fallback import RedisOutage, unreachable

log = logging.getLogger("svc.slots")

ADMIT = """
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""


def connection_limiter(kernel: Any, kind: str, limit: int, lease: float) -> ConnectionLimiter:
    """The slots of ``kind`` (``realtime``, ``graphql``) for ``kernel``: on Redis when
    ``SVC_REDIS_URL`` is set, else on the node's broker when the workers have one, else in this
    process. Start it with ``start()`` and stop it with ``await stop()``."""
    redis = None
    if kernel.settings.redis_url:
        from kernel.cache.redis_cache import make_redis_client

        redis = make_redis_client(kernel.settings.redis_url, kernel.settings.redis_timeout)
    shared = redis is not None or kernel.broker is not None
    limiter = ConnectionLimiter(redis, kernel.settings.redis_namespace, limit, lease, kind=kind,
                                broker=kernel.broker, circuit=kernel.redis_circuit if shared else None)
    if shared:
        kernel.state.setdefault("redis_outages", []).append(limiter.outage)
    return limiter


class ConnectionLimiter:
    """Counts open connections of one kind per site; ``admit`` returns a connection id or None (full)."""

    def __init__(self, redis: Any, namespace: str, limit: int, lease: float, *, circuit: Any = None,
                 broker: Any = None, kind: str = "realtime") -> None:
        """``circuit``: the kernel's state of this Redis (``kernel.redis_circuit``), shared
        with its other parts; without it, one of its own. ``broker``: the node's broker
        (``kernel.workers.broker.BrokerClient``), used when there is no ``redis``."""
        self.redis = redis
        self.broker = broker if redis is None else None
        self.namespace = namespace
        self.kind = kind
        self.limit = limit
        self.lease = lease
        self.held: dict[str, set[str]] = {}  # site -> ids this process holds
        self.unlisted: dict[str, set[str]] = {}  # site -> ids admitted while Redis was down
        self.outage = RedisOutage(f"{kind} connections", "per-process connection counts", circuit=circuit)
        self._task: asyncio.Task[None] | None = None
        self._admit = redis.register_script(ADMIT) if redis is not None else None

    def key(self, site_id: str) -> str:
        return f"{self.namespace}:{self.kind}:conns:{site_id}"

    def count_local(self, site_id: str) -> int:
        return len(self.held.get(site_id, ()))

    async def admit(self, site_id: str) -> str | None:
        conn_id = uuid.uuid4().hex
        if self.limit <= 0:
            self.held.setdefault(site_id, set()).add(conn_id)
            return conn_id
        if self.broker is not None and self.outage.should_try():
            try:
                lease = await self.broker.admit(self.key(site_id), self.limit)
            except unreachable() as exc:
                self.outage.failed(exc)
            else:
                self.outage.succeeded()
                if lease is not None:
                    self.held.setdefault(site_id, set()).add(lease)
                return lease
        admit = self._admit
        if admit is not None and self.outage.should_try():
            now = time.time()
            try:
                ok = await admit(keys=[self.key(site_id)],
                                 args=[now, self.limit, now + self.lease, conn_id, int(self.lease * 2) + 1])
            except unreachable() as exc:
                self.outage.failed(exc)
            else:
                self.outage.succeeded()
                if not int(ok):
                    return None
                self.held.setdefault(site_id, set()).add(conn_id)
                return conn_id
        # No Redis, or Redis down: this process's own count (one WARNING per outage, above).
        if self.count_local(site_id) >= self.limit:
            return None
        if admit is not None or self.broker is not None:
            self.outage.served_by_fallback()
            self.unlisted.setdefault(site_id, set()).add(conn_id)
        self.held.setdefault(site_id, set()).add(conn_id)
        return conn_id

    async def release(self, site_id: str, conn_id: str) -> None:
        for table in (self.held, self.unlisted):
            ids = table.get(site_id)
            if ids is not None:
                ids.discard(conn_id)
                if not ids:
                    del table[site_id]
        if self.broker is not None:
            await self.broker.release(self.key(site_id), conn_id)  # never raises: a lost connection lost it
        if self.redis is not None and self.outage.up:  # while down, its lease expires by itself
            try:
                await self.redis.zrem(self.key(site_id), conn_id)
            except Exception as exc:  # noqa: BLE001 - the lease expires anyway
                log.warning("%s: could not release a connection slot of %s: %s", self.kind, site_id, exc)

    async def renew(self) -> None:
        """Push the lease deadline of every socket this process holds."""
        if self.redis is None or not self.held:
            return
        deadline = time.time() + self.lease
        unlisted = {site: set(ids) for site, ids in self.unlisted.items()}
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                for site_id, ids in list(self.held.items()):
                    # xx: a socket released meanwhile is not added back; those admitted while
                    # Redis was down are not in the set yet and are added without it.
                    new = unlisted.get(site_id, set()) & ids
                    if ids - new:
                        pipe.zadd(self.key(site_id), dict.fromkeys(ids - new, deadline), xx=True)
                    if new:
                        pipe.zadd(self.key(site_id), dict.fromkeys(new, deadline))
                    pipe.expire(self.key(site_id), int(self.lease * 2) + 1)
                await pipe.execute()
        except unreachable() as exc:
            self.outage.failed(exc)
            return
        self.outage.succeeded()
        for site_id, ids in unlisted.items():
            left = self.unlisted.get(site_id)
            if left is not None:
                left -= ids
                if not left:
                    del self.unlisted[site_id]

    def start(self) -> None:
        if self.redis is not None and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._heartbeat())

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                await self.renew()  # Redis down is handled (and logged once) inside
            except Exception as exc:  # noqa: BLE001 - retried at the next beat
                log.warning("%s: lease renewal failed: %s", self.kind, exc)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self.redis is not None:
            for site_id, ids in list(self.held.items()):
                with contextlib.suppress(Exception):
                    await self.redis.zrem(self.key(site_id), *ids)
            self.held.clear()
            with contextlib.suppress(Exception):
                await self.redis.aclose()
