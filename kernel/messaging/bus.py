"""The event bus: filters inside the transaction, actions after commit.

``bus.on_filter(event, fn)`` and ``bus.on_action(event, fn)`` return an unregister handle.
A filter runs in priority order inside the unit of work and may return a replacement payload
or raise to veto. An action runs after commit; its failure is logged, never raised to the
writer. With Redis configured, actions also fan out to every other process through pub/sub,
so a cache invalidation emitted on one worker reaches all of them; without Redis, the workers of
``svc serve --workers N`` fan out through the node's broker (``kernel.broker``, handed in as
``client``), which numbers each message so that a worker applies it before its next request.

Event names are dotted strings (``items.create``, ``articles.items.update``); a handler may
subscribe with a ``*`` pattern (``*.items.create``, ``*``).
"""

from __future__ import annotations

import contextlib
import fnmatch
import inspect
import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from kernel.base import sandbox
from kernel.base.jsoncodec import loads as json_loads
from kernel.redisio.pubsub_listener import PubSubListener, open_redis
from kernel.redisio.redis_fallback import RedisCircuit, RedisOutage, unreachable
from kernel.redisio.redis_writes import RedisWrites

log = logging.getLogger("svc.bus")

Handler = Callable[[str, Any, "EventContext"], Any]
CHANNEL = "svc:bus"


@dataclass
class EventContext:
    """What every handler gets: the site, the principal, the open transaction (filters only),
    the kernel, and whether the event came from another process.

    ``uow`` (filters only) is the unit of work the event runs in: a filter that writes passes it
    on (``items.api.create(..., uow=ctx.uow)``) so its writes join the same transaction and
    roll back with it; opening a transaction of its own would wait on the locks this transaction
    holds, so ``Database.begin`` refuses it at once with ``kernel.db.NestedWriteError``. ``cause`` is the write cause of that unit of work, if any.
    """

    site_id: str | None
    principal: Any = None
    kernel: Any = None
    conn: Any = None
    remote: bool = False
    request_id: str | None = None
    uow: Any = None  # filters only: the unit of work (``ctx.uow.emit``, ``ctx.uow.after_commit``)
    cause: str | None = None


@dataclass(order=True)
class _Registration:
    priority: int
    seq: int
    pattern: str = field(compare=False)
    handler: Handler = field(compare=False)


_ENCODE_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS


def _encode(message: dict[str, Any]) -> bytes:
    """A fan-out message as JSON, what does not serialise as ``str()`` of it (as the standard
    library's ``default=str`` wrote it, datetimes included), through orjson: an item write's
    action carries the item, and every process decodes every message."""
    try:
        return orjson.dumps(message, default=str, option=_ENCODE_OPTIONS)
    except orjson.JSONEncodeError:  # integers beyond 64 bits: as the standard library writes them
        return json.dumps(message, default=str).encode()


class Bus:
    """Filter and action events for one app, with optional Redis fan-out of actions."""

    def __init__(self, redis_url: str = "", *, channel: str = CHANNEL, redis_timeout: float = 2.0,
                 circuit: RedisCircuit | None = None, writes: RedisWrites | None = None,
                 client: Any = None) -> None:
        """``circuit``: the process's state of this Redis, shared with its other parts
        (``kernel.redis_circuit``), so a publish skips at once while another part found Redis
        down; without it, one of its own. ``writes``: the process's queue of Redis writes
        (``kernel.redis_writes``), which sends the publishes; without it, one of its own.
        ``client``: the connection to use instead of one made from ``redis_url`` (the node's
        broker, ``kernel.workers.broker.BrokerClient``, which speaks the same pub/sub)."""
        self.node_id = uuid.uuid4().hex
        self.redis_url = redis_url
        self.redis_timeout = redis_timeout
        self.channel = channel
        self._filters: list[_Registration] = []
        self._actions: list[_Registration] = []
        self._seq = 0
        self._redis: Any = None
        self._client = client
        # Without Redis under ``svc serve --workers N`` (kernel.workers.fanout_gate.FanoutGate): told the
        # broker's number of every bus message handled here, so a request waits for the drops.
        self.gate: Any = None
        self._own_writes = writes is None and bool(redis_url)
        self._writes = writes if writes is not None else RedisWrites(redis_url, redis_timeout=redis_timeout,
                                                                      client=client)
        self._listener = PubSubListener("bus", log, self._subscribe, self._on_message,
                                        on_connected=self._reconnected, ignore_subscribe_messages=True)
        self.reconnects = 0  # times the listener subscribed again after losing Redis
        self.kernel: Any = None
        # Publishing while Redis is down: one WARNING, then the fan-out is skipped (other
        # processes fall back on their caches' short expiry) and retried once a second.
        self.publish_outage = RedisOutage("bus", "this process only (other processes wait for cache expiry)",
                                          circuit=circuit)

    @property
    def redis_connected(self) -> bool:
        """True while the listener holds a working subscription (always False without Redis)."""
        return self._listener.connected

    # ------------------------------------------------------------------ registration

    def _add(self, bucket: list[_Registration], pattern: str, handler: Handler, priority: int) -> Callable[[], None]:
        self._seq += 1
        reg = _Registration(priority, self._seq, pattern, handler)
        bucket.append(reg)
        bucket.sort()

        def unregister() -> None:
            with contextlib.suppress(ValueError):
                bucket.remove(reg)

        return unregister

    def on_filter(self, event: str, handler: Handler, priority: int = 100) -> Callable[[], None]:
        """Run ``handler(event, payload, ctx)`` inside the transaction; lower priority first."""
        return self._add(self._filters, event, handler, priority)

    def on_action(self, event: str, handler: Handler, priority: int = 100) -> Callable[[], None]:
        """Run ``handler(event, payload, ctx)`` after commit, on every process."""
        return self._add(self._actions, event, handler, priority)

    @staticmethod
    def _matching(bucket: list[_Registration], event: str) -> list[_Registration]:
        return [
            r for r in bucket
            if r.pattern == event or ("*" in r.pattern and fnmatch.fnmatchcase(event, r.pattern))
        ]

    def has_handlers(self, event: str) -> bool:
        return bool(self._matching(self._filters, event) or self._matching(self._actions, event))

    # ------------------------------------------------------------------ emitting

    async def filter(self, event: str, payload: Any, ctx: EventContext) -> Any:
        """Run the filters of ``event`` in order; each may replace the payload or raise to veto."""
        for reg in self._matching(self._filters, event):
            with sandbox.cleared():  # an extension's write does not limit the built-in handlers
                result = reg.handler(event, payload, ctx)
                if inspect.isawaitable(result):
                    result = await result
            if result is not None:
                payload = result
        return payload

    async def action(self, event: str, payload: Any, ctx: EventContext, *, fan_out: bool = True) -> None:
        """Run the local action handlers of ``event`` and publish it to the other processes (when
        any handler takes it: a process has the same handlers as the others)."""
        handlers = self._matching(self._actions, event)
        await self._run_actions(event, payload, ctx, handlers)
        # Every process runs the same handlers: an event none of them takes is not published
        # (``posts.items.create`` beside ``items.create`` on every item write).
        if fan_out and self._redis is not None and handlers:
            message = {
                "origin": self.node_id,
                "event": event,
                "payload": payload,
                "siteId": ctx.site_id,
                "principal": _principal_summary(ctx.principal),
            }
            # A lost fan-out must not break the writer: ``send`` counts Redis's answer on the
            # outage and never raises it.
            await self._writes.send(self.publish_outage, "PUBLISH", self.channel, _encode(message))

    async def _run_actions(self, event: str, payload: Any, ctx: EventContext,
                           handlers: list[_Registration] | None = None) -> None:
        for reg in self._matching(self._actions, event) if handlers is None else handlers:
            try:
                with sandbox.cleared():
                    result = reg.handler(event, payload, ctx)
                    if inspect.isawaitable(result):
                        await result
            except Exception:  # noqa: BLE001 - actions never break the write that caused them
                log.exception("action handler for %s failed", event)

    # ------------------------------------------------------------------ Redis fan-out

    async def start(self) -> None:
        """Connect to Redis (when configured) and listen for other processes' actions. Redis
        down at boot is logged and the listener keeps trying behind (a process restarted during
        a Redis outage starts, like the topics); a connection lost later is re-established too."""
        if not self.redis_url or self._redis is not None:
            return
        # Short timeouts: a Redis that stops answering must not hold a writer's after-commit
        # actions (publish) for long; the listener's reads have their own 1 s timeout.
        self._redis = open_redis(self.redis_url, self.redis_timeout, self._client)
        try:
            await self._listener.connect(self._redis)
        except unreachable() as exc:
            log.warning("Redis bus listener cannot subscribe at start (%s); retrying in the background", exc)
            self.publish_outage.failed(exc)
        self._listener.start(self._redis)

    async def _subscribe(self, pubsub: Any) -> None:
        await pubsub.subscribe(self.channel)
        if self.gate is not None:
            await self._caught_up(pubsub)

    def _reconnected(self) -> None:
        self.reconnects += 1
        self.publish_outage.succeeded()  # Redis answers: publish again at once
        log.info("Redis bus listener reconnected")

    async def _caught_up(self, pubsub: Any) -> None:
        """The broker's confirmation names the last bus message numbered before this subscription:
        what this process may have missed until then (a first start, or a lost connection) is
        dropped from every site cache, and the gate counts everything up to it as applied."""
        confirmed = await pubsub.get_message(timeout=self.redis_timeout)
        if confirmed is None or confirmed.get("type") != "subscribe":
            raise ConnectionError("the broker did not confirm the bus subscription")
        if self.kernel is not None:
            self.kernel.site_caches.invalidate_site(None)
        self.gate.resync(int(confirmed.get("gen") or 0))

    async def _on_message(self, message: dict[str, Any]) -> None:
        await self._receive(message.get("data"))
        if self.gate is not None:
            self.gate.applied_up_to(int(message.get("gen") or 0))

    async def _receive(self, data: Any) -> None:
        try:
            message = json_loads(data)
        except (TypeError, ValueError):
            log.warning("ignoring a malformed bus message")
            return
        if message.get("origin") == self.node_id:
            return
        ctx = EventContext(
            site_id=message.get("siteId"),
            principal=message.get("principal"),
            kernel=self.kernel,
            remote=True,
        )
        await self._run_actions(message.get("event", ""), message.get("payload"), ctx)

    async def stop(self) -> None:
        await self._listener.stop()
        if self._own_writes:
            await self._writes.aclose()
        if self._redis is not None:
            if self._redis is not self._client:
                with contextlib.suppress(Exception):
                    await self._redis.aclose()
            self._redis = None


def _principal_summary(principal: Any) -> dict[str, Any] | None:
    if principal is None:
        return None
    summary = getattr(principal, "summary", None)
    return summary() if callable(summary) else None

