"""The dispatcher: hands committed events to durable consumers, per site, at least once.

One dispatcher runs in each process that serves (``svc serve`` workers, ``svc worker``) when
some plugin registered a consumer. It wakes

- at once when a unit of work of this process commits events (``wake(site_id)``);
- every ``SVC_EVENTS_POLL_SECONDS``, to find what other processes committed (a scan of the
  events after the last horizon it saw), retries that fell due, and leases whose worker died.
  A scan knows the (type, collection) of what it found and wakes only the consumers that take
  them; every ``CATCH_UP_SECONDS`` it wakes every consumer of the sites written since the last
  such pass, so the checkpoint of a consumer whose events are rare keeps up with the log (its
  next read then starts near the head, not days back). A process's first scan does not wake
  every site that ever wrote: it marks only the pairs left behind (``log.lagging``: checkpoints
  behind their site's head, and sites with events for a plain consumer that has no checkpoint
  there), so starting a worker costs a few queries whatever the number of sites;
- when a failed consumer's backoff ends.

For each (site, consumer) with work it runs one task: claim the lease, read a batch after the
checkpoint, call the consumer, acknowledge, and again until the site is caught up. A consumer
that raises keeps its checkpoint, waits ``base * 2 ** (attempts - 1)`` seconds (with jitter, at
most ``SVC_EVENTS_RETRY_MAX_SECONDS``; ``kernel.base.backoff``) and gets the same batch again; other
consumers and other sites go on meanwhile. Pairs run concurrently, each pair at most once per process, and across
processes the lease keeps one worker per pair.

A ``ConsumerGroup`` is a family of consumers that exist per site at run time (the change feed's
webhook subscriptions, a store-sync pipeline): ``members(kernel, site_id)`` lists the live ones,
and each member is a consumer of its own, with its own checkpoint (``<group>:<key>``), lease,
retries and order. A wake-up for a site lists its members once, then dispatches each member as
its own pair, so one slow or failing member never delays another.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from kernel.base.backoff import backoff_delay
from kernel.db.meta import now_utc
from kernel.db.unavailable import unavailable_dependency
from kernel.events import checkpoints
from kernel.events.log import START, Cursor, Event, head, horizon, lagging, read_after
from kernel.events.tables import events

log = logging.getLogger("svc.events")

Handler = Callable[[Any, str, list[Event]], Awaitable[None]]
# A group member's handler: (kernel, site_id, member key, events, attempt), attempt counting from 1.
MemberHandler = Callable[[Any, str, str, list[Event], int], Awaitable[None]]
RetryDelay = Callable[[int, BaseException], float]
CONCURRENCY = 8  # (site, consumer) pairs dispatched at once by one process, in each lane
# A delivery still running after this many seconds (a slow or hanging endpoint) gives its place
# in the quick lane up, and its pair waits in the slow lane from then on, until a delivery of it
# ends in time again: slow endpoints never hold every place and so never delay quick ones
# (bench/faults/slow_webhook.py). A pair's own order, lease and retries are unchanged.
SLOW_AFTER = 1.0
EXPECT_RETRY = 0.05  # seconds between reads for a local commit not visible yet
HELD_RETRY = 0.25  # seconds before a local commit's pair, held by another worker, is tried again


@dataclass(frozen=True)
class EventConsumer:
    """A durable consumer: ``handle(kernel, site_id, events)`` gets batches of one site's events
    in log order; returning acknowledges the batch, raising retries it after a backoff.

    ``types`` (``items.create``, ``items.*``) and ``collections`` narrow what it gets (empty:
    everything); ``batch_size`` overrides ``SVC_EVENTS_BATCH``. Names are unique and stable:
    the checkpoint is kept under the name.
    """

    name: str
    handle: Handler
    types: Sequence[str] = ()
    collections: Sequence[str] = ()
    batch_size: int | None = None
    # ``retry_delay(attempts, error)``: seconds before the failed batch is tried again (default:
    # exponential backoff with jitter, ``SVC_EVENTS_RETRY_*``).
    retry_delay: RetryDelay | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not 0 < len(self.name) <= 100:
            raise ValueError(f"event consumer name must be 1 to 100 characters, got {self.name!r}")
        if not callable(self.handle):
            raise TypeError(f"event consumer {self.name!r}: handle must be callable")
        object.__setattr__(self, "types", tuple(self.types))
        object.__setattr__(self, "collections", tuple(self.collections))

    async def deliver(self, kernel: Any, site_id: str, events: list[Event], attempt: int) -> None:
        await self.handle(kernel, site_id, events)


@dataclass(frozen=True)
class GroupMember:
    """One live member of a ``ConsumerGroup`` in a site: its ``key`` (unique in the group, at
    most 60 characters) and its own filters."""

    key: str
    types: Sequence[str] = ()
    collections: Sequence[str] = ()


@dataclass(frozen=True)
class ConsumerGroup:
    """Durable consumers that exist per site at run time (see the module docstring).

    ``members(kernel, site_id)`` lists the members that should receive events now (not the paused
    or dead ones); ``handle(kernel, site_id, key, events, attempt)`` delivers a batch to one, and
    returning acknowledges it, raising retries it after ``retry_delay(attempts, error)``. A
    member's checkpoint is ``checkpoint_name(key)``: set it (``kernel.events.set_checkpoint``)
    in the transaction that creates the member, and remove it in the one that deletes it. The
    dispatcher never creates one: a listed member without a checkpoint is taken as deleted since
    the listing and gets nothing.
    """

    name: str
    members: Callable[[Any, str], Awaitable[Sequence[GroupMember]]]
    handle: MemberHandler
    retry_delay: RetryDelay | None = None
    batch_size: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not 0 < len(self.name) <= 39 or ":" in self.name:
            raise ValueError(f"consumer group name must be 1 to 39 characters without ':', got {self.name!r}")
        if not callable(self.members) or not callable(self.handle):
            raise TypeError(f"consumer group {self.name!r}: members and handle must be callable")

    def checkpoint_name(self, key: str) -> str:
        return f"{self.name}:{key}"

    def member(self, m: GroupMember) -> MemberConsumer:
        return MemberConsumer(self.checkpoint_name(m.key), _unused_handler, m.types, m.collections,
                              self.batch_size, self.retry_delay, group=self, key=m.key)


async def _unused_handler(kernel: Any, site_id: str, events: list[Event]) -> None:  # pragma: no cover
    raise AssertionError("a group member is delivered through its group")


@dataclass(frozen=True)
class MemberConsumer(EventConsumer):
    """A ``ConsumerGroup`` member as the dispatcher runs it."""

    group: ConsumerGroup | None = None
    key: str = ""

    async def deliver(self, kernel: Any, site_id: str, events: list[Event], attempt: int) -> None:
        assert self.group is not None
        await self.group.handle(kernel, site_id, self.key, events, attempt)


_KINDS = select(events.c.site_id, events.c.type, events.c.collection).distinct()
Kinds = frozenset[tuple[str, str | None]]  # (type, collection) of the events a commit wrote
CATCH_UP_SECONDS = 60.0


def _type_matches(patterns: Sequence[str], type_: str) -> bool:
    """``type_`` against a consumer's ``types`` (as the log's filter reads them: exact,
    ``items.*``, ``*.create``); no patterns match every type."""
    if not patterns:
        return True
    for pattern in patterns:
        if pattern == type_ or (pattern.endswith(".*") and type_.startswith(pattern[:-1])) or \
                (pattern.startswith("*.") and type_.endswith(pattern[1:])):
            return True
    return False


def wants(consumer: EventConsumer, kinds: Kinds) -> bool:
    """Whether any of ``kinds`` passes ``consumer``'s type and collection filters."""
    return any(_type_matches(consumer.types, type_) and (not consumer.collections or collection in consumer.collections)
               for type_, collection in kinds)


class Dispatcher:
    """The background loop of one process; see the module docstring.

    A local commit says which (type, collection) it wrote; a consumer whose filters take none of
    them is not woken for it (its checkpoint moves past such events at the next run or scan),
    so a write does not pay a claim, a read and an acknowledgement per uninterested consumer.
    """

    def __init__(self, kernel: Any, consumers: Sequence[EventConsumer],
                 groups: Sequence[ConsumerGroup] = ()) -> None:
        self.kernel = kernel
        self.consumers = {c.name: c for c in consumers}
        self.groups = {g.name: g for g in groups}
        # The members the last listing of each (site, group) found, by checkpoint name.
        self._members: dict[str, EventConsumer] = {}
        self._site_members: dict[tuple[str, str], set[str]] = {}
        self.owner = f"{uuid.uuid4().hex[:12]}"
        settings = kernel.settings
        self.poll = float(settings.events_poll_seconds)
        self.batch = int(settings.events_batch)
        self.lease = float(settings.events_lease_seconds)
        self.retry_base = float(settings.events_retry_base_seconds)
        self.retry_max = float(settings.events_retry_max_seconds)
        self._wake = asyncio.Event()
        self._dirty: set[tuple[str, str]] = set()
        self._running: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._again: set[tuple[str, str]] = set()  # marked while running: run again after
        self._deferred: set[tuple[str, str]] = set()  # held by another worker: try at the next scan
        # Pairs woken by a local commit whose events a read did not see yet (on PostgreSQL an
        # older transaction, even of another database, can hold the horizon back): retried
        # every EXPECT_RETRY seconds until they show or ``poll`` seconds have passed.
        self._expected: dict[tuple[str, str], float] = {}
        # What local commits wrote since a group's members were last listed (None: anything).
        self._group_kinds: dict[tuple[str, str], Kinds | None] = {}
        self._moved: dict[tuple[str, str], bool] = {}  # the last run moved the checkpoint
        self._timers: set[asyncio.TimerHandle] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._limit = asyncio.Semaphore(CONCURRENCY)  # the quick lane
        self._slow_limit = asyncio.Semaphore(CONCURRENCY)  # pairs whose last delivery was slow
        self._slow: set[tuple[str, str]] = set()
        self.slow_after = SLOW_AFTER
        self.demoted = 0  # deliveries moved to the slow lane while running, for tests and metrics
        # At most this many pairs of one site at once (SVC_EVENTS_SITE_CONCURRENCY), so a site
        # with many webhook subscriptions or event flows does not hold every place.
        self.per_site = int(settings.get("events_site_concurrency", 0) or 0)
        self._site_gates: dict[str, list[Any]] = {}  # site -> [semaphore, tasks using it]
        self._scanned: int | None = None  # the horizon (PostgreSQL) or last id (SQLite) scanned
        self._unswept: set[str] = set()  # sites scanned since the last catch-up pass
        self._catch_up_at = 0.0
        self.batches = 0  # batches acknowledged, for tests and metrics

    # ------------------------------------------------------------------ control

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = self._loop.create_task(self._run(), name="svc-events-dispatcher")

    async def stop(self) -> None:
        for timer in self._timers:
            timer.cancel()
        tasks = [t for t in (self._task, *self._running.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._task = None
        try:  # batches cut short were not acknowledged: the next worker takes them at once
            await checkpoints.release_all(self.kernel.db, self.owner)
        except Exception:  # noqa: BLE001 - stopping anyway; the leases expire on their own
            log.warning("could not release the event leases of %s", self.owner)

    def wake(self, site_id: str, kinds: Kinds | None = None) -> None:
        """Events of ``site_id`` were committed in this process (of these ``kinds``, when
        known): dispatch them now."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._mark_site(site_id, True, kinds)
        else:
            loop.call_soon_threadsafe(self._mark_site, site_id, True, kinds)

    def _mark_site(self, site_id: str, expect: bool = False, kinds: Kinds | None = None) -> None:
        assert self._loop is not None
        names = [name for name, consumer in self.consumers.items() if kinds is None or wants(consumer, kinds)]
        for name in self.groups:
            pair = (site_id, name)
            seen = self._group_kinds.get(pair, frozenset())
            self._group_kinds[pair] = None if kinds is None or seen is None else seen | kinds
            names.append(name)
        for name in names:
            self._dirty.add((site_id, name))
            if expect:
                self._expected[(site_id, name)] = self._loop.time() + self.poll
        self._wake.set()

    def _mark(self, pair: tuple[str, str]) -> None:
        self._dirty.add(pair)
        self._wake.set()

    async def idle(self) -> None:
        """Wait until nothing is marked or running (tests)."""
        while self._dirty or self._running or self._wake.is_set():
            await asyncio.sleep(0.01)

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        next_scan = 0.0
        loop = asyncio.get_running_loop()
        while True:
            try:
                if loop.time() >= next_scan:
                    await self._scan()
                    next_scan = loop.time() + self.poll
                self._start_marked()
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for loses a cancellation
                # that arrives as the wake-up completes, and stop() then waits for the next scan.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(0.0, next_scan - loop.time())):
                        await self._wake.wait()
                self._wake.clear()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the database may be away for a moment; keep going
                if unavailable_dependency(exc):  # a restart or failover: one line, not a trace
                    log.warning("event dispatcher pass failed, the database is unavailable (%s); retrying in %.1fs",
                                type(exc).__name__, self.poll)
                else:
                    log.exception("event dispatcher pass failed; retrying in %.1fs", self.poll)
                await asyncio.sleep(self.poll)

    async def _scan(self) -> None:
        """Mark the sites with events committed since the last scan, due retries and dead leases."""
        db = self.kernel.db
        async with db.connect() as conn:
            if db.dialect == "postgresql":
                bound = await horizon(conn, db.dialect)
                assert bound is not None
                # Every event with txid < horizon is committed and visible now; those at or above
                # the previous horizon are the ones not seen by the previous scan.
                first = self._scanned is None
                found = [] if first else (await conn.execute(
                    _KINDS.where(events.c.txid < bound, events.c.txid >= self._scanned))).all()
                self._scanned = bound
            else:
                bound = None
                last = (await conn.execute(select(events.c.id).order_by(events.c.id.desc()).limit(1))).scalar()
                first = self._scanned is None
                found = [] if first else (await conn.execute(
                    _KINDS.where(events.c.id > self._scanned, events.c.id <= (last or 0)))).all()
                self._scanned = int(last or 0)
            pairs = await checkpoints.due(conn, now_utc())
            if first:
                # The log before this process started: only the pairs left behind, not every site
                # that ever wrote (a start must not cost a query per site and consumer).
                pairs += await lagging(conn, bound, list(self.consumers.values()))
            await conn.rollback()
        kinds: dict[str, set[tuple[str, str | None]]] = {}
        for site_id, type_, collection in found:
            kinds.setdefault(site_id, set()).add((type_, collection))
        self._unswept.update(kinds)
        assert self._loop is not None
        if self._loop.time() >= self._catch_up_at:
            self._catch_up_at = self._loop.time() + CATCH_UP_SECONDS
            for site_id in self._unswept:
                self._mark_site(site_id)
            self._unswept.clear()
        else:
            for site_id, seen in kinds.items():
                self._mark_site(site_id, kinds=frozenset(seen))
        for site_id, name in pairs:
            if name in self.consumers or name in self._members:
                self._mark((site_id, name))
            elif name.partition(":")[0] in self.groups:  # a member not listed yet: list the group
                self._mark((site_id, name.partition(":")[0]))
        self._dirty |= self._deferred
        self._deferred.clear()

    def _start_marked(self) -> None:
        marked, self._dirty = self._dirty, set()
        for pair in marked:
            if pair in self._running:
                self._again.add(pair)  # new events arrived while it ran: look again after
                self._wake.set()
                continue
            run = self._list_members(*pair) if pair[1] in self.groups else self._dispatch_pair(*pair)
            task = asyncio.get_running_loop().create_task(run)
            self._running[pair] = task
            task.add_done_callback(lambda _t, p=pair: self._finished(p))

    def _finished(self, pair: tuple[str, str]) -> None:
        self._running.pop(pair, None)
        if pair in self._again:
            self._again.discard(pair)
            self._mark(pair)

    def _retry_later(self, pair: tuple[str, str], delay: float) -> None:
        assert self._loop is not None
        timer: asyncio.TimerHandle

        def fire() -> None:
            self._timers.discard(timer)
            self._mark(pair)

        timer = self._loop.call_later(delay, fire)
        self._timers.add(timer)

    # ------------------------------------------------------------------ one (site, consumer)

    @contextlib.asynccontextmanager
    async def _slot(self, site_id: str, pair: tuple[str, str] | None = None) -> Any:
        """A ``_Place`` in the pair's lane (the slow one when its last delivery was slow, each
        ``CONCURRENCY`` places), once the site has fewer than ``per_site`` pairs in one (a
        waiting pair holds no place). A place given up to the slow lane keeps the site's slot."""
        lane = self._slow_limit if pair in self._slow else self._limit
        if not 0 < self.per_site < CONCURRENCY:
            async with _Place(lane) as place:
                yield place
            return
        gate = self._site_gates.setdefault(site_id, [asyncio.Semaphore(self.per_site), 0])
        gate[1] += 1
        try:
            async with gate[0], _Place(lane) as place:
                yield place
        finally:
            gate[1] -= 1
            if not gate[1]:
                self._site_gates.pop(site_id, None)

    async def _list_members(self, site_id: str, name: str) -> None:
        """List the group's live members in the site and mark each for dispatch."""
        group, pair = self.groups[name], (site_id, name)
        until = self._expected.pop(pair, None)
        kinds = self._group_kinds.pop(pair, None)
        try:
            async with self._slot(site_id):
                members = [group.member(m) for m in await group.members(self.kernel, site_id)]
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the database may be away; list again later
            log.exception("listing the %s consumers of site %s failed", name, site_id)
            self._retry_later(pair, self.poll)
            return
        names = {m.name for m in members}
        for gone in self._site_members.get(pair, set()) - names:
            self._members.pop(gone, None)
        if names:
            self._site_members[pair] = names
        else:  # most sites have no member of a group: keep no entry for them (memory per site)
            self._site_members.pop(pair, None)
        for member in members:
            self._members[member.name] = member
            if kinds is not None and not wants(member, kinds):
                continue  # woken by commits of nothing it takes
            if until is not None:
                self._expected[(site_id, member.name)] = until
            self._mark((site_id, member.name))

    async def _dispatch_pair(self, site_id: str, name: str) -> None:
        consumer = self.consumers.get(name) or self._members.get(name)
        pair = (site_id, name)
        if consumer is None:  # a group member that is gone (deleted, paused)
            self._expected.pop(pair, None)
            self._slow.discard(pair)
            return
        try:
            async with self._slot(site_id, pair) as place:
                # Not woken by a local commit (a scan, a restart): look before taking a lease,
                # so a caught-up pair costs two reads, not two write transactions.
                if pair in self._expected or await self._has_work(site_id, consumer.name):
                    await self.run_once(site_id, consumer, place)
            until = self._expected.get(pair)
            moved = self._moved.pop(pair, False)
            if until is not None and (moved or asyncio.get_running_loop().time() > until):
                self._expected.pop(pair, None)
            elif until is not None:
                self._retry_later(pair, EXPECT_RETRY)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the claim or the ack failed (database away); retry later
            log.exception("dispatching events of site %s to %s failed", site_id, name)
            self._retry_later((site_id, name), self.poll)

    def _forget(self, site_id: str, member: EventConsumer) -> None:
        """Drop a member listed before it was deleted: no retry, no run until a listing has it
        again (with a checkpoint made by its plugin)."""
        pair = (site_id, member.name)
        self._members.pop(member.name, None)
        group = getattr(member, "group", None)
        if group is not None:
            listed = self._site_members.get((site_id, group.name))
            if listed is not None:
                listed.discard(member.name)
                if not listed:
                    self._site_members.pop((site_id, group.name), None)
        self._expected.pop(pair, None)
        self._again.discard(pair)
        self._slow.discard(pair)

    async def _has_work(self, site_id: str, name: str) -> bool:
        db = self.kernel.db
        async with db.connect() as conn:
            state = await checkpoints.read(conn, site_id, name)
            if state is None or state["retryAt"] is not None or state["leaseOwner"] is not None:
                return True
            tail = await head(conn, db.dialect, site_id)
            await conn.rollback()
        return tail > state["cursor"]

    async def _deliver(self, pair: tuple[str, str], consumer: EventConsumer, site_id: str, events: list[Event],
                       attempt: int, place: _Place | None) -> None:
        """``consumer.deliver``; when it runs past ``slow_after`` in the quick lane, its place
        there is given up (the delivery goes on) and the pair is marked slow."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        task = asyncio.ensure_future(consumer.deliver(self.kernel, site_id, events, attempt))
        try:
            if place is not None and place.held and place.lane is self._limit:
                done, _ = await asyncio.wait({task}, timeout=self.slow_after)
                if not done:
                    self._slow.add(pair)
                    self.demoted += 1
                    place.release()
            await task
        except BaseException:
            if not task.done():  # cut short (the lease's time limit, a stop): end the delivery too
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            raise
        finally:
            if loop.time() - started >= self.slow_after:
                self._slow.add(pair)
            else:
                self._slow.discard(pair)  # quick (or quick to fail): back to the quick lane

    async def run_once(self, site_id: str, consumer: EventConsumer, place: _Place | None = None) -> int:
        """Claim (site, consumer) and feed it until the site is caught up; returns the number of
        events acknowledged (0 when another worker holds the lease or a retry is not due).
        ``place``: the pair's place in a lane, given up when a delivery turns out slow (the pair
        then stops after that batch and queues in the slow lane for the rest)."""
        db = self.kernel.db
        # A group member's checkpoint is made and removed with the member: a claim never makes it
        # again (the member may have been deleted since it was listed; checkpoints.py).
        start = None if isinstance(consumer, MemberConsumer) else START
        try:
            held = await checkpoints.claim(db, site_id, consumer.name, self.owner, self.lease, start)
        except checkpoints.NoCheckpoint:
            self._forget(site_id, consumer)
            return 0
        if held is None:  # another worker has it, or a retry is not due
            pair = (site_id, consumer.name)
            if self._expected.pop(pair, None) is not None:
                # A local commit: the holder may release before reading it; look once more soon.
                self._retry_later(pair, min(self.poll, HELD_RETRY))
            else:
                self._deferred.add(pair)
            return 0
        cursor, done = held.cursor, 0
        limit = consumer.batch_size or self.batch
        while True:
            async with db.connect() as conn:
                page = await read_after(conn, db.dialect, site_id, cursor, limit,
                                        types=consumer.types, collections=consumer.collections)
                await conn.rollback()
            if page.events:
                try:
                    async with asyncio.timeout(self.lease):
                        await self._deliver((site_id, consumer.name), consumer, site_id, page.events,
                                            held.attempts + 1, place)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a consumer's failure is retried, never spread
                    attempts = held.attempts + 1
                    delay = (consumer.retry_delay(attempts, exc) if consumer.retry_delay is not None
                             else backoff_delay(attempts, self.retry_base, self.retry_max))
                    await checkpoints.fail(db, held, f"{type(exc).__name__}: {exc}",
                                           now_utc() + dt.timedelta(seconds=delay))
                    log.warning("event consumer %s failed on site %s (attempt %d), retrying in %.1fs: %r",
                                consumer.name, site_id, attempts, delay, exc)
                    self._expected.pop((site_id, consumer.name), None)  # the backoff decides now
                    self._retry_later((site_id, consumer.name), delay)
                    return done
            pair = (site_id, consumer.name)
            # Woken again meanwhile (a new commit): keep the lease and read on, no new claim.
            last = not page.has_more and pair not in self._again
            if place is not None and place.given_up and not last:
                last = True  # the rest waits for a place in the slow lane (``_finished`` marks it)
                self._again.add(pair)
            else:
                self._again.discard(pair)
            if not await checkpoints.ack(db, held, page.next_cursor, self.lease, release=last):
                log.warning("event consumer %s lost its lease on site %s", consumer.name, site_id)
                return done
            if page.next_cursor != cursor:
                self._moved[pair] = True
            if page.events:
                self.batches += 1
            done += len(page.events)
            cursor = page.next_cursor
            held = checkpoints.Claim(held.site_id, held.consumer, held.owner, cursor, 0)
            if last:
                return done


class _Place:
    """A pair's place in a lane (a semaphore), which it may give up before it ends."""

    def __init__(self, lane: asyncio.Semaphore) -> None:
        self.lane = lane
        self.held = False
        self.given_up = False

    async def __aenter__(self) -> _Place:
        await self.lane.acquire()
        self.held = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.held:
            self.held = False
            self.lane.release()

    def release(self) -> None:
        if self.held:
            self.held, self.given_up = False, True
            self.lane.release()


__all__ = ["ConsumerGroup", "Cursor", "Dispatcher", "EventConsumer", "GroupMember"]
