"""Redis writes whose answer nobody reads (``PUBLISH``, ``INCR`` of a generation counter), sent
together.

An item write publishes three messages after its commit: the committed-events signal
(``events.committed``), the collection's live topic and the bus fan-out; and the dashboards bump
two generation counters. Each was its own round trip to Redis, and on a busy machine a round trip is mostly the cost of the two system calls
and the wake-ups at both ends, not of Redis. ``RedisWrites`` queues such commands and sends
everything this process queued in the same turn of its event loop as one pipeline: one write,
one read, and one delivery per subscriber for the three messages. Concurrent writers of the
process share a pipeline too.

``send`` returns an awaitable that ends when Redis answered (or the part gave up); it never
raises for Redis's answer: each command carries its part's ``RedisOutage``, and the answer is
counted there (succeeded, failed, served by the fallback) exactly as a direct call counted it.
Inside ``held()``, ``send`` returns at once and the scope's end waits for every command sent
inside it, so a unit of work's after-commit steps queue their publishes into one pipeline and
the writer still answers only once Redis has them (a reader's next request, to any process,
comes after the fan-out reached Redis).

Order: the commands of one process reach Redis in the order they were sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kernel.redisio.redis_fallback import RedisOutage, unreachable

log = logging.getLogger("svc.redis")

_HELD: contextvars.ContextVar[list[asyncio.Future[None]] | None] = contextvars.ContextVar("svc_redis_held", default=None)


@dataclass(slots=True)
class _Command:
    args: tuple[Any, ...]
    outage: RedisOutage
    failed: Callable[[], None] | None
    done: asyncio.Future[None]


class RedisWrites:
    """The process's queue of fire-and-count Redis commands on ``redis_url`` (its own
    connection pool, created at the first command)."""

    def __init__(self, redis_url: str, *, redis_timeout: float = 2.0, client: Any = None) -> None:
        """``client``: the connection to use instead of one made from ``redis_url`` (the node's
        broker, ``kernel.workers.broker.BrokerClient``, which takes ``PUBLISH`` in a pipeline too)."""
        self.redis_url = redis_url
        self.redis_timeout = redis_timeout
        self.pipelines = 0  # pipelines sent (a command count over this is the batching)
        self.commands = 0
        self._client: Any = client
        self._given = client
        self._queue: list[_Command] = []
        self._flushing: asyncio.Task[None] | None = None

    def send(self, outage: RedisOutage, *args: Any, failed: Callable[[], None] | None = None) -> Awaitable[None]:
        """Queue the command ``args``; the awaitable ends once Redis answered (at once inside
        ``held()``). ``failed()`` runs when the command did not reach Redis or Redis refused it
        (the part's own count); the outage is counted on ``outage``."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        if not outage.should_try():
            outage.served_by_fallback()
            if failed is not None:
                failed()
            done.set_result(None)
            return done
        self._queue.append(_Command(args, outage, failed, done))
        if self._flushing is None:
            self._flushing = loop.create_task(self._flush())
        held = _HELD.get()
        if held is None:
            return asyncio.shield(done)  # a cancelled caller does not take the others' answer
        held.append(done)
        return _ANSWERED

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Commands sent inside go out together; the end of the scope waits for their answers."""
        pending: list[asyncio.Future[None]] = []
        token = _HELD.set(pending)
        try:
            yield
        finally:
            _HELD.reset(token)
            if pending:
                await asyncio.shield(asyncio.gather(*pending))

    async def _flush(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                await self._execute(batch)
        finally:
            self._flushing = None

    async def _execute(self, batch: list[_Command]) -> None:
        self.pipelines += 1
        self.commands += len(batch)
        try:
            if self._client is None:
                import redis.asyncio as aioredis

                # The socket timeout bounds a write to a Redis that hangs.
                self._client = aioredis.from_url(self.redis_url, socket_connect_timeout=self.redis_timeout,
                                                 socket_timeout=self.redis_timeout)
            pipe = self._client.pipeline(transaction=False)
            for command in batch:
                pipe.execute_command(*command.args)
            answers = await pipe.execute(raise_on_error=False)
        except unreachable() as exc:  # logged once per outage by the circuit
            for command in batch:
                command.outage.failed(exc)
                _settle(command, ok=False)
        except BaseException as exc:  # cancelled (shutdown), or a bug: neither answered nor not
            for command in batch:
                command.outage.released()
                _settle(command, ok=False)
            if not isinstance(exc, asyncio.CancelledError):
                log.exception("could not send %d Redis commands", len(batch))
            else:
                raise
        else:
            for command, answer in zip(batch, answers, strict=True):
                command.outage.succeeded()
                if isinstance(answer, Exception):
                    log.warning("Redis refused %s for %s: %s", command.args[0], command.outage.component, answer)
                _settle(command, ok=not isinstance(answer, Exception))

    async def aclose(self) -> None:
        """Send what is queued, then close the connections."""
        if self._flushing is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._flushing), self.redis_timeout * 3)
        if self._client is not None and self._client is not self._given:
            with contextlib.suppress(Exception):
                await self._client.aclose()
            self._client = None


def _settle(command: _Command, *, ok: bool) -> None:
    if not ok and command.failed is not None:
        try:
            command.failed()
        except Exception:  # noqa: BLE001 - a count must not keep the others waiting
            log.exception("a Redis write's failure callback failed")
    if not command.done.done():
        command.done.set_result(None)


class _Answered:
    """What ``send`` gives inside ``held()``: awaiting it returns at once."""

    def __await__(self) -> Any:
        return
        yield  # a generator: ``await`` takes it as an awaitable that never suspends


_ANSWERED = _Answered()
