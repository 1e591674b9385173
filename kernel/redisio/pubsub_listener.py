"""The lifecycle of a Redis pub/sub listener, shared by the bus's fan-out (``kernel/messaging/bus.py``) and
the live topics (``kernel/messaging/topics.py``).

A listener subscribes (its owner says to what), reads one message at a time with a 1 s timeout,
and hands each to its owner. When Redis goes away it says so once, closes the subscription and
subscribes again behind a capped exponential backoff, for as long as the process runs; its owner
hears of each new subscription (``on_connected``) to resynchronise what it may have missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kernel.base.backoff import REDIS_RECONNECT_BASE, REDIS_RECONNECT_MAX, backoff_delay


def open_redis(redis_url: str, redis_timeout: float, client: Any = None) -> Any:
    """``client``, or an asyncio Redis client for ``redis_url`` with short connect and socket
    timeouts: a Redis that stops answering must not hold a writer's publish for long (the
    listener's reads pass their own 1 s timeout and are not cut by it)."""
    if client is not None:
        return client
    import redis.asyncio as aioredis

    return aioredis.from_url(redis_url, socket_connect_timeout=redis_timeout, socket_timeout=redis_timeout)


async def _close(pubsub: Any) -> None:
    if pubsub is not None:
        with contextlib.suppress(Exception):
            await pubsub.aclose()


class PubSubListener:
    """One pub/sub subscription kept alive in a task.

    ``subscribe(pubsub)`` subscribes a fresh ``PubSub`` to what the owner listens to (awaited on
    every connection); ``handle(message)`` gets each message (sync or async); ``on_connected()``
    runs after each subscription made by the task (the first one too when ``connect`` before
    ``start`` did not succeed). ``name`` goes in the owner's ``log`` lines ("Redis bus listener ...")."""

    def __init__(
        self,
        name: str,
        log: logging.Logger,
        subscribe: Callable[[Any], Awaitable[None]],
        handle: Callable[[dict[str, Any]], Any],
        *,
        on_connected: Callable[[], None] | None = None,
        ignore_subscribe_messages: bool = False,
    ) -> None:
        self.name = name
        self.log = log
        self._subscribe = subscribe
        self._handle = handle
        self._on_connected = on_connected
        self._ignore_subscribe = ignore_subscribe_messages
        self.pubsub: Any = None
        self.connected = False
        self._task: asyncio.Task[None] | None = None

    async def connect(self, redis: Any) -> None:
        """Subscribe now; raises what Redis raises (the subscription is closed again). There is
        no await between the owner's ``subscribe`` returning and ``pubsub`` being set."""
        pubsub = redis.pubsub()
        try:
            await self._subscribe(pubsub)
        except BaseException:
            await _close(pubsub)
            raise
        self.pubsub = pubsub
        self.connected = True

    def start(self, redis: Any) -> None:
        """Listen in a task of the running loop (subscribing first if ``connect`` has not)."""
        self._task = asyncio.get_running_loop().create_task(self._run(redis))

    async def _run(self, redis: Any) -> None:
        attempt = 0
        try:
            while True:
                try:
                    if self.pubsub is None:
                        await self.connect(redis)
                        attempt = 0
                        if self._on_connected is not None:
                            self._on_connected()
                    message = await self.pubsub.get_message(
                        ignore_subscribe_messages=self._ignore_subscribe, timeout=1.0
                    )
                    if message is not None:
                        result = self._handle(message)
                        if inspect.isawaitable(result):
                            await result
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - keep listening whatever Redis does
                    if self.connected:
                        self.log.warning("Redis %s listener lost its connection: %s", self.name, exc)
                    self.connected = False
                    pubsub, self.pubsub = self.pubsub, None
                    await _close(pubsub)
                    attempt += 1
                    await asyncio.sleep(backoff_delay(attempt, REDIS_RECONNECT_BASE, REDIS_RECONNECT_MAX))
        finally:
            self.connected = False

    async def stop(self) -> None:
        """Cancel the task and close the subscription."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        pubsub, self.pubsub = self.pubsub, None
        self.connected = False
        await _close(pubsub)
