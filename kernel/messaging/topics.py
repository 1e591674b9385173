"""Live topics: small per-site signals fanned out to whoever listens now.

``await kernel.topics.publish(site_id, "articles.items", {"id": "a1", "action": "update"})``
delivers a JSON-able message to every subscriber of that site's topic, in this process and in
every other: through Redis pub/sub with ``SVC_REDIS_URL`` set, else, under ``svc serve
--workers N``, through the node's broker (``kernel.broker``, the same channels and patterns). A subscriber reads
with an async iterator::

    async with kernel.topics.subscribe(site_id, "articles.*") as sub:
        async for item in sub:
            if isinstance(item, Lagged):   # messages were lost here (slow reader, reconnect)
                ...                        # resynchronise: re-read through the API
            else:
                item.topic, item.data      # a TopicMessage

Topics are live and lossy by design (the event log is the durable path): each subscription
has a bounded queue, and the publisher never waits for a reader. A full queue either drops
the new message and later hands the reader a ``Lagged(missed=n)`` marker (``overflow="lag"``,
the default), or ends the subscription (``overflow="drop"``: the iterator stops and
``sub.dropped`` is true). Messages carry identifiers, never field values.

Across processes each message is published once to Redis, on the channel
``<namespace>:topic:<site>:<topic>``; a process subscribes in Redis only to the channels (and
patterns) its local subscribers need. Local subscribers are served directly, without the
Redis round trip; a process ignores its own messages coming back. When the Redis connection
breaks, the listener reconnects with backoff and subscribes again; every subscription then
receives ``Lagged(missed=None)`` because what was published meanwhile is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import logging
import re
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Any

from kernel.redisio.pubsub_listener import PubSubListener, open_redis
from kernel.redisio.redis_fallback import RedisCircuit, RedisOutage
from kernel.redisio.redis_writes import RedisWrites

log = logging.getLogger("svc.topics")

SITE_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
TOPIC = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}$")
PATTERN = re.compile(r"^[A-Za-z0-9_.:*-]{1,200}$")
MAX_MESSAGE_BYTES = 8192
OVERFLOW_POLICIES = ("lag", "drop")
_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")


@dataclass(frozen=True)
class TopicMessage:
    """One signal: the site, the topic it was published on, and its JSON data (read-only)."""

    site_id: str
    topic: str
    data: Any


@dataclass(frozen=True)
class Lagged:
    """A marker in a subscription's stream: messages were lost at this point.

    ``missed`` is how many (the reader was too slow), or ``None`` when unknown (the Redis
    connection was lost and re-established). A reader that must not miss state re-reads it.
    """

    missed: int | None


@dataclass
class TopicStats:
    """Counters shown on ``/metrics``."""

    published: int = 0
    delivered: int = 0
    lagged: int = 0
    dropped_subscribers: int = 0
    publish_failures: int = 0
    reconnects: int = 0


class Subscription:
    """A bounded queue of one site's topic (or pattern), read with ``async for``.

    Open it with ``async with topics.subscribe(...) as sub`` or ``await sub.start()`` (then
    ``await sub.aclose()``); only an open subscription receives messages.
    """

    def __init__(self, topics: Topics, site_id: str, pattern: str, size: int, overflow: str) -> None:
        self.topics = topics
        self.site_id = site_id
        self.pattern = pattern
        self.is_pattern = "*" in pattern
        self.size = size
        self.overflow = overflow
        self.dropped = False
        self.closed = False
        self._queue: deque[TopicMessage | Lagged] = deque()
        self._missed = 0
        self._unknown_loss = False
        self._wakeup = asyncio.Event()
        self._started = False

    # -------------------------------------------------------------- publisher side (never blocks)

    def _offer(self, message: TopicMessage) -> None:
        if self.closed:
            return
        if len(self._queue) >= self.size:
            if self.overflow == "drop":
                self.dropped = True
                self.topics.stats.dropped_subscribers += 1
                self.topics._detach(self)
            else:
                self._missed += 1
                self.topics.stats.lagged += 1
            self._wakeup.set()
            return
        marker = self._take_marker()
        if marker is not None:
            self._queue.append(marker)  # one slot over the bound, so the gap sits where it happened
        self._queue.append(message)
        self.topics.stats.delivered += 1
        self._wakeup.set()

    def _lost_unknown(self) -> None:
        if not self.closed:
            self._unknown_loss = True
            self._wakeup.set()

    def _take_marker(self) -> Lagged | None:
        if self._unknown_loss:
            self._unknown_loss = False
            self._missed = 0
            return Lagged(None)
        if self._missed:
            missed, self._missed = self._missed, 0
            return Lagged(missed)
        return None

    # -------------------------------------------------------------- reader side

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> TopicMessage | Lagged:
        while True:
            if self._queue:
                return self._queue.popleft()
            marker = self._take_marker()
            if marker is not None:
                return marker
            if self.closed:
                raise StopAsyncIteration
            self._wakeup.clear()
            await self._wakeup.wait()

    async def get(self, timeout: float | None = None) -> TopicMessage | Lagged:
        """The next item; ``TimeoutError`` after ``timeout`` seconds, ``StopAsyncIteration`` once closed."""
        async with asyncio.timeout(timeout):  # not wait_for: it can lose a cancellation (3.11)
            return await self.__anext__()

    def pending(self) -> int:
        """Items waiting in the queue (markers included)."""
        return len(self._queue)

    async def start(self) -> Subscription:
        """Attach to the topic (and, with Redis, wait until Redis confirms the subscription)."""
        if not self._started:
            self._started = True
            await self.topics._attach(self)
        return self

    async def aclose(self) -> None:
        """Detach; the iterator ends once the queue is read. Safe to call twice."""
        if not self.closed:
            self.topics._detach(self)
        await self.topics._release_redis()

    async def __aenter__(self) -> Subscription:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class Topics:
    """Per-site live topics of one app: in-process fan-out, plus Redis pub/sub when configured."""

    def __init__(self, redis_url: str = "", *, namespace: str = "svc", queue_size: int = 256,
                 max_message_bytes: int = MAX_MESSAGE_BYTES, redis_timeout: float = 2.0,
                 circuit: RedisCircuit | None = None, writes: RedisWrites | None = None,
                 client: Any = None) -> None:
        """``circuit``: the process's state of this Redis, shared with its other parts
        (``kernel.redis_circuit``); without it, one of its own. ``writes``: the process's queue
        of Redis writes (``kernel.redis_writes``), which sends the publishes; without it, one of
        its own. ``client``: the connection to use instead of one made from ``redis_url`` (the
        node's broker, ``kernel.workers.broker.BrokerClient``, which speaks the same pub/sub)."""
        self.node_id = uuid.uuid4().hex
        self.redis_url = redis_url
        self.redis_timeout = redis_timeout
        # A Redis that hangs (paused, blackholed) keeps the listener's subscription looking alive
        # (its reads just time out empty), so publishing notices it: one publisher per second
        # tries Redis, the others skip the fan-out at once instead of each waiting redis_timeout;
        # on the kernel's circuit, a timeout of the cache or the bus in the same write counts too.
        self.publish_outage = RedisOutage("topics", "this process only (other processes miss live signals)",
                                          circuit=circuit)
        self.namespace = namespace
        self.queue_size = queue_size
        self.max_message_bytes = max_message_bytes
        self.stats = TopicStats()
        self._exact: dict[tuple[str, str], set[Subscription]] = {}
        self._patterns: dict[str, dict[str, set[Subscription]]] = {}
        self._redis: Any = None
        self._client = client
        self._own_writes = writes is None and bool(redis_url)
        self._writes = writes if writes is not None else RedisWrites(redis_url, redis_timeout=redis_timeout,
                                                                      client=client)
        self._listener = PubSubListener("topic", log, self._subscribe_all, self._on_redis_message,
                                        on_connected=self._connected)
        self._ready = asyncio.Event()
        self._ever_connected = False
        self._remote: dict[str, bool] = {}  # channel or pattern subscribed in Redis -> is a pattern
        self._confirm: dict[str, list[asyncio.Future[None]]] = {}
        self._control = f"{namespace}:topic-control:{self.node_id}"

    # ------------------------------------------------------------------ public API

    @property
    def subscriber_count(self) -> int:
        """Open subscriptions in this process."""
        return len(self._all_subscriptions())

    @property
    def redis_connected(self) -> bool:
        """True while the Redis listener holds a working connection (always False without Redis)."""
        return self._redis_up

    def subscribe(self, site_id: str, topic: str, *, queue_size: int | None = None,
                  overflow: str = "lag") -> Subscription:
        """A subscription to ``topic`` of ``site_id``; ``*`` in ``topic`` matches any characters
        (``articles.*``). Open it with ``async with`` or ``await sub.start()``."""
        _check_site(site_id)
        if not PATTERN.match(topic):
            raise ValueError(f"topic pattern {topic!r} must match {PATTERN.pattern}")
        if overflow not in OVERFLOW_POLICIES:
            raise ValueError(f"overflow must be one of {OVERFLOW_POLICIES}")
        size = self.queue_size if queue_size is None else queue_size
        if size < 1:
            raise ValueError("queue_size must be at least 1")
        return Subscription(self, site_id, topic, size, overflow)

    async def publish(self, site_id: str, topic: str, message: Any) -> None:
        """Send ``message`` (JSON-able, at most ``max_message_bytes`` encoded) to the subscribers
        of ``topic`` in ``site_id``, here and in the other processes. Never waits for a reader;
        a Redis failure is logged and counted, never raised."""
        _check_site(site_id)
        if not TOPIC.match(topic):
            raise ValueError(f"topic {topic!r} must match {TOPIC.pattern}")
        encoded = json.dumps(message, separators=(",", ":"), allow_nan=False)
        if len(encoded.encode()) > self.max_message_bytes:
            raise ValueError(f"a topic message is a small signal: at most {self.max_message_bytes} bytes")
        self.stats.published += 1
        self._deliver_local(TopicMessage(site_id, topic, json.loads(encoded)))
        if self._redis is None or not self._redis_up:
            if self._redis is not None:
                self.stats.publish_failures += 1
            return
        envelope = json.dumps({"o": self.node_id, "s": site_id, "t": topic, "m": encoded})
        # Never raised: ``send`` counts Redis's answer on the outage, and a failure here.
        await self._writes.send(self.publish_outage, "PUBLISH", self._channel(site_id, topic), envelope,
                                failed=self._publish_failed)

    def _publish_failed(self) -> None:
        self.stats.publish_failures += 1

    # ------------------------------------------------------------------ local fan-out

    def _deliver_local(self, message: TopicMessage) -> None:
        for sub in list(self._exact.get((message.site_id, message.topic), ())):
            sub._offer(message)
        for pattern, subs in list(self._patterns.get(message.site_id, {}).items()):
            if fnmatch.fnmatchcase(message.topic, pattern):
                for sub in list(subs):
                    sub._offer(message)

    def _subscribers_of(self, site_id: str, pattern: str, is_pattern: bool) -> set[Subscription]:
        if is_pattern:
            return self._patterns.setdefault(site_id, {}).setdefault(pattern, set())
        return self._exact.setdefault((site_id, pattern), set())

    async def _attach(self, sub: Subscription) -> None:
        self._subscribers_of(sub.site_id, sub.pattern, sub.is_pattern).add(sub)
        if self._redis is None:
            return
        key = self._redis_key(sub)
        if key in self._remote:
            return
        self._remote[key] = sub.is_pattern
        if self._pubsub is None or not self._redis_up:
            return  # the listener subscribes to everything in _remote when it reconnects
        waiter = asyncio.get_running_loop().create_future()
        self._confirm.setdefault(key, []).append(waiter)
        try:
            if sub.is_pattern:
                await self._pubsub.psubscribe(key)
            else:
                await self._pubsub.subscribe(key)
            await asyncio.wait_for(asyncio.shield(waiter), 5.0)
        except Exception as exc:  # noqa: BLE001 - the listener's reconnect subscribes again
            log.warning("Redis subscription to %s not confirmed: %s", key, exc)

    def _detach(self, sub: Subscription) -> None:
        sub.closed = True
        sub._wakeup.set()
        if sub.is_pattern:
            by_pattern = self._patterns.get(sub.site_id, {})
            subs = by_pattern.get(sub.pattern)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del by_pattern[sub.pattern]
                if not by_pattern:
                    self._patterns.pop(sub.site_id, None)
        else:
            subs = self._exact.get((sub.site_id, sub.pattern))
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._exact[(sub.site_id, sub.pattern)]

    async def _release_redis(self) -> None:
        """Unsubscribe in Redis from channels and patterns no local subscriber needs any more."""
        if self._redis is None:
            return
        needed = {self._channel(site, topic) for site, topic in self._exact}
        needed |= {self._pattern_key(site, p) for site, by in self._patterns.items() for p in by}
        stale = {k: p for k, p in self._remote.items() if k not in needed}
        if not stale:
            return
        for key in stale:
            del self._remote[key]
        if self._pubsub is None or not self._redis_up:
            return
        patterns = [k for k, is_pattern in stale.items() if is_pattern]
        channels = [k for k, is_pattern in stale.items() if not is_pattern]
        try:
            if channels:
                await self._pubsub.unsubscribe(*channels)
            if patterns:
                await self._pubsub.punsubscribe(*patterns)
        except Exception as exc:  # noqa: BLE001 - a reconnect starts from _remote anyway
            log.debug("Redis unsubscribe failed: %s", exc)

    # ------------------------------------------------------------------ Redis names

    def _channel(self, site_id: str, topic: str) -> str:
        return f"{self.namespace}:topic:{site_id}:{topic}"

    def _pattern_key(self, site_id: str, pattern: str) -> str:
        # Only the pattern's own ``*`` may act as a glob: the namespace is escaped.
        return _GLOB_SPECIAL.sub(r"\\\1", f"{self.namespace}:topic:{site_id}:") + pattern

    def _redis_key(self, sub: Subscription) -> str:
        if sub.is_pattern:
            return self._pattern_key(sub.site_id, sub.pattern)
        return self._channel(sub.site_id, sub.pattern)

    # ------------------------------------------------------------------ Redis listener

    async def start(self) -> None:
        """Connect to Redis (when configured) and start the listener; returns once it listens."""
        if not self.redis_url or self._redis is not None:
            return
        # The socket timeout bounds a publish to a Redis that hangs; the listener's reads pass
        # their own (1 s) and are not cut by it.
        self._redis = open_redis(self.redis_url, self.redis_timeout, self._client)
        self._ready = asyncio.Event()
        self._listener.start(self._redis)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), 5.0)  # Redis down at boot: keep retrying behind

    @property
    def _pubsub(self) -> Any:
        return self._listener.pubsub

    @property
    def _redis_up(self) -> bool:
        return self._listener.connected

    async def _subscribe_all(self, pubsub: Any) -> None:
        await pubsub.subscribe(self._control)
        done: set[str] = set()
        # Subscriptions opened while this runs see no pubsub yet and leave their key in
        # _remote: loop until nothing is left, with no await between the last check and the
        # listener publishing its pubsub (PubSubListener.connect).
        while todo := {k: p for k, p in self._remote.items() if k not in done}:
            channels = [k for k, is_pattern in todo.items() if not is_pattern]
            patterns = [k for k, is_pattern in todo.items() if is_pattern]
            if channels:
                await pubsub.subscribe(*channels)
            if patterns:
                await pubsub.psubscribe(*patterns)
            done.update(todo)

    def _connected(self) -> None:
        for waiters in self._confirm.values():
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
        self._confirm.clear()
        if self._ever_connected:
            self.stats.reconnects += 1
            log.info("Redis topic listener reconnected")
            for sub in self._all_subscriptions():
                sub._lost_unknown()
        self._ever_connected = True
        self._ready.set()

    def _on_redis_message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind in ("subscribe", "psubscribe"):
            key = _text(message.get("channel"))
            for waiter in self._confirm.pop(key, []):
                if not waiter.done():
                    waiter.set_result(None)
            return
        if kind not in ("message", "pmessage"):
            return
        try:
            envelope = json.loads(message["data"])
            if envelope.get("o") == self.node_id:
                return
            item = TopicMessage(envelope["s"], envelope["t"], json.loads(envelope["m"]))
        except (KeyError, TypeError, ValueError):
            log.warning("ignoring a malformed topic message")
            return
        # Redis delivers a message once per matching channel or pattern subscription, so each
        # copy goes only to the local subscribers behind that one subscription.
        if kind == "message":
            subs = self._exact.get((item.site_id, item.topic), set())
        else:
            pattern = _text(message.get("pattern"))
            prefix = self._pattern_key(item.site_id, "")
            subs = self._patterns.get(item.site_id, {}).get(pattern[len(prefix):], set()) \
                if pattern.startswith(prefix) else set()
        for sub in list(subs):
            sub._offer(item)

    def _all_subscriptions(self) -> list[Subscription]:
        subs = [s for group in self._exact.values() for s in group]
        subs += [s for by in self._patterns.values() for group in by.values() for s in group]
        return subs

    async def stop(self) -> None:
        """End every subscription (their iterators stop) and close the Redis connection."""
        for sub in self._all_subscriptions():
            self._detach(sub)
        await self._listener.stop()
        if self._own_writes:
            await self._writes.aclose()
        if self._redis is not None:
            if self._redis is not self._client:
                with contextlib.suppress(Exception):
                    await self._redis.aclose()
            self._redis = None
        self._remote.clear()


def _check_site(site_id: Any) -> None:
    if not isinstance(site_id, str) or not SITE_ID.match(site_id):
        raise ValueError(f"site id {site_id!r} is not a site id")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")
