"""The durable event log: a transactional outbox, per site, read by durable consumers.

- ``tables.py``       ``svc_events`` (append-only), ``svc_event_checkpoints``, ``svc_event_retention``.
- ``log.py``          writing rows, ``read_after`` with the visibility horizon, cursors, pruning.
- ``checkpoints.py``  claims (leases), acknowledgements, failures and their backoff state.
- ``dispatch.py``     ``EventConsumer`` and the per-process ``Dispatcher``.

A write emits with ``uow.emit("items.update", collection=..., item_id=..., fields=[...])``;
the rows are inserted in the unit of work's transaction just before it commits, so the data and
its events commit together or not at all. Events are thin: identifiers, the operation and the
changed field names, never field values. Plugins register consumers with the
``register_event_consumers`` hook; ``kernel.events`` (an ``EventLog``) reads the log for
everything else (the change feed).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from typing import Any

from kernel.db.meta import now_utc
from kernel.events import checkpoints
from kernel.events.dispatch import ConsumerGroup, Dispatcher, EventConsumer, GroupMember
from kernel.events.log import (
    START,
    Cursor,
    Event,
    EventPage,
    backlog,
    cursor_before,
    earliest_cursor,
    head,
    prune_site,
    read_after,
    sites_to_prune,
)

log = logging.getLogger("svc.events")

__all__ = ["COMMITTED_TOPIC", "START", "ConsumerGroup", "Cursor", "Event", "EventConsumer", "EventLog", "EventPage",
           "GroupMember"]

# The live topic a unit of work publishes on, in its site, after it committed events: ``{}``,
# a wake-up signal and nothing more (lossy, like every topic). Readers that wait for new events
# (the change feed's long poll) subscribe to it in every process, through Redis when configured,
# and then read the log; the log, not the signal, is the truth.
COMMITTED_TOPIC = "events.committed"


class EventLog:
    """``kernel.events``: the consumers registered at boot, the reader API, retention, and the
    dispatcher of this process."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.consumers: dict[str, EventConsumer] = {}
        self.groups: dict[str, ConsumerGroup] = {}
        self.dispatcher: Dispatcher | None = None

    def register(self, consumer: EventConsumer | ConsumerGroup) -> None:
        """Add a durable consumer or consumer group (done at boot from ``register_event_consumers``)."""
        if not isinstance(consumer, (EventConsumer, ConsumerGroup)):
            raise TypeError(f"register_event_consumers must return EventConsumer or ConsumerGroup objects, "
                            f"got {consumer!r}")
        taken = consumer.name in self.consumers or consumer.name in self.groups or any(
            consumer.name.startswith(f"{group}:") for group in self.groups) or (
            isinstance(consumer, ConsumerGroup) and any(c.startswith(f"{consumer.name}:") for c in self.consumers))
        if taken:
            raise ValueError(f"event consumer {consumer.name!r} is registered twice")
        if isinstance(consumer, ConsumerGroup):
            self.groups[consumer.name] = consumer
        else:
            self.consumers[consumer.name] = consumer

    # ------------------------------------------------------------------ reading

    async def read_after(self, site_id: str, cursor: Cursor | str = START, limit: int = 100, *,
                         types: Sequence[str] = (), collections: Sequence[str] = ()) -> EventPage:
        """Events of ``site_id`` after ``cursor`` (a ``Cursor`` or its token), in log order, at
        most ``limit`` (up to 1,000), with the cursor to continue from. Never skips an event
        that commits later. ValueError for a malformed cursor token."""
        if isinstance(cursor, str):
            cursor = Cursor.parse(cursor)
        db = self.kernel.db
        async with db.connect() as conn:
            page = await read_after(conn, db.dialect, site_id, cursor, limit, types=types, collections=collections)
            await conn.rollback()
        return page

    async def head(self, site_id: str) -> Cursor:
        """The cursor after the last readable event of the site (the tail)."""
        db = self.kernel.db
        async with db.connect() as conn:
            return await head(conn, db.dialect, site_id)

    async def backlog(self, site_id: str, cursor: Cursor, *, types: Sequence[str] = (),
                      collections: Sequence[str] = ()) -> tuple[int, dt.datetime | None]:
        """A consumer's lag: the readable events after ``cursor`` (matching the filters), and when
        the oldest of them occurred (None when there is none)."""
        db = self.kernel.db
        async with db.connect() as conn:
            found = await backlog(conn, db.dialect, site_id, cursor, types=types, collections=collections)
            await conn.rollback()
        return found

    async def cursor_before(self, site_id: str, when: dt.datetime) -> Cursor:
        """The position just before the site's first event that occurred after ``when`` (a
        replay by time); the head when none did."""
        db = self.kernel.db
        async with db.connect() as conn:
            found = await cursor_before(conn, db.dialect, site_id, when)
            await conn.rollback()
        return found

    async def set_checkpoint(self, conn: Any, site_id: str, consumer: str, cursor: Cursor) -> None:
        """Put the checkpoint of (site, consumer) at ``cursor`` inside the caller's transaction
        ``conn``: a group member's start, or a rewind (replay). Clears retries and the lease."""
        await checkpoints.put(conn, self.kernel.db.dialect, site_id, consumer, cursor)

    async def remove_checkpoint(self, conn: Any, site_id: str, consumer: str) -> None:
        """Drop the checkpoint of (site, consumer) inside ``conn`` (a group member deleted)."""
        await checkpoints.remove(conn, site_id, consumer)

    async def dispatch_now(self, site_id: str, consumer: str) -> bool:
        """End a pending retry's wait and dispatch (site, consumer) now in this process (other
        processes see it due at their next scan). False when it has no checkpoint."""
        found = await checkpoints.make_due(self.kernel.db, site_id, consumer)
        if found and self.dispatcher is not None:
            self.dispatcher.wake(site_id)
        return found

    async def earliest_cursor(self, site_id: str) -> Cursor:
        """The oldest cursor that has lost nothing to retention; an older one is expired."""
        async with self.kernel.db.connect() as conn:
            return await earliest_cursor(conn, site_id)

    async def is_expired(self, site_id: str, cursor: Cursor) -> bool:
        """Whether events after ``cursor`` were pruned (the change feed answers 410)."""
        return cursor < await self.earliest_cursor(site_id)

    async def checkpoint(self, site_id: str, consumer: str) -> dict[str, Any] | None:
        """A consumer's checkpoint in a site: ``{cursor, attempts, retryAt, lastError, leaseOwner,
        leaseUntil}``, or None before its first dispatch there."""
        async with self.kernel.db.connect() as conn:
            return await checkpoints.read(conn, site_id, consumer)

    # ------------------------------------------------------------------ retention

    async def prune(self, now: dt.datetime | None = None) -> int:
        """Delete events older than ``SVC_CDC_RETENTION_DAYS`` in every site; returns how many.
        One query finds the sites with an event to prune; only those are visited."""
        days = int(self.kernel.settings.cdc_retention_days)
        before = (now or now_utc()) - dt.timedelta(days=days)
        total = 0
        for site_id in await self.sites_to_prune(before):
            total += await self.prune_before(site_id, before)
        if total:
            log.info("pruned %d events older than %d days", total, days)
        return total

    async def sites_to_prune(self, before: dt.datetime, site_ids: Sequence[str] | None = None) -> list[str]:
        """The sites (of ``site_ids``, else every site) with an event ``prune_before(site,
        before)`` would delete, in one query."""
        db = self.kernel.db
        chunks = [None] if site_ids is None else [list(site_ids)[i:i + 500] for i in range(0, len(site_ids), 500)]
        found: list[str] = []
        async with db.connect() as conn:
            for chunk in chunks:
                found.extend(await sites_to_prune(conn, before, chunk))
            await conn.rollback()
        return found

    async def prune_before(self, site_id: str, before: dt.datetime) -> int:
        """Delete the site's events that occurred before ``before`` (the change feed's
        retention target); returns how many."""
        db = self.kernel.db
        total = 0
        while True:
            async with db.begin() as conn:
                deleted = await prune_site(conn, db.dialect, site_id, before)
            total += deleted
            if deleted < 500:
                return total

    # ------------------------------------------------------------------ dispatch

    def committed(self, site_id: str | None, kinds: Any = None) -> None:
        """A unit of work of this process committed events of ``site_id`` (``kinds``: the
        ``(type, collection)`` pairs it wrote, when known): wake the dispatcher."""
        if self.dispatcher is not None and site_id is not None:
            self.dispatcher.wake(site_id, frozenset(kinds) if kinds is not None else None)

    async def signal(self, site_id: str | None) -> None:
        """Publish ``COMMITTED_TOPIC`` in ``site_id`` (after a commit that wrote events) so that
        waiting readers of every process read the log again. Never raises for a lost signal."""
        topics = getattr(self.kernel, "topics", None)
        if topics is not None and site_id is not None:
            await topics.publish(site_id, COMMITTED_TOPIC, {})

    async def start(self) -> None:
        """Start this process's dispatcher (when there are consumers and dispatch is on)."""
        if self.dispatcher is None and (self.consumers or self.groups) and self.kernel.settings.events_dispatch:
            self.dispatcher = Dispatcher(self.kernel, list(self.consumers.values()), list(self.groups.values()))
            self.dispatcher.start()

    async def stop(self) -> None:
        if self.dispatcher is not None:
            await self.dispatcher.stop()
            self.dispatcher = None
