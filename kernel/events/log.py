"""The event log: write (inside the writer's transaction), read after a cursor, prune.

Order and cursors
-----------------
Events of a site are read in ``(txid, id)`` order, and a cursor is such a pair. ``id`` comes
from a sequence taken at insert; on its own it is not a safe cursor on PostgreSQL, because
sequence values are taken before commit and transactions commit in any order: A takes id 10,
B takes 11, B commits, a reader reads up to 11, then A commits and a reader at ``id > 11`` has
lost 10 for good.

**PostgreSQL: a visibility horizon.** Each event stores ``txid``, its transaction's id
(``pg_current_xact_id()``, 64 bits, assigned in increasing order, never reused). A reader reads
only events with ``txid < x``, where ``x`` is ``pg_snapshot_xmin(pg_current_snapshot())`` (the
oldest transaction still running) refined to the oldest one running in this database (see
``PG_HORIZON_SQL``): every transaction with an id below ``x`` has finished or cannot write this
table, so the set of events with ``txid < x`` is final (the committed ones are visible to every
later statement, and no transaction can get an id below ``x`` any more). Reading that final set in ``(txid, id)`` order and
advancing the cursor to the last event returned, every event that commits later has
``txid >= x``, which sorts after the cursor: nothing is ever skipped.

Ordering by ``id`` with the same horizon would not be enough: T1 gets xid 100 (by an earlier
write), T2 gets xid 101, T2 inserts its event (id 25), T1 inserts its event (id 30) and
commits. With T2 still open, ``x`` is 101, event 30 (txid 100) is readable and event 25 is not;
a cursor at id 30 then skips 25 when T2 commits. Sorting by ``txid`` first puts T2's events
after T1's, where they cannot be skipped.

The price: the order is the order in which transactions got their ids (their first write),
which is commit order for transactions that do not overlap, but not always for ones that do;
events of one transaction keep their order. And one long-running write transaction anywhere in
the database holds the horizon back (events wait; none is lost).

**SQLite: one writer.** A write transaction holds SQLite's write lock from ``BEGIN IMMEDIATE``
to commit (and the kernel's write gate orders writers, ``kernel/db/engine.py``), so an id is
taken only when every earlier writer has committed: ``id`` order is commit order, and ``txid``
is 0 for all. ``AUTOINCREMENT`` keeps ids from being reused after pruning.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import and_, delete, func, insert, or_, select, text, true
from sqlalchemy.ext.asyncio import AsyncConnection

from kernel.db.meta import aware, dialect_insert, iso, now_utc
from kernel.events.tables import checkpoints, events, retention

TYPE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
MAX_LIMIT = 1000
_INSERT = insert(events)  # built once: every write's transaction runs it
# The horizon on PostgreSQL: the oldest transaction still running *in this database* (else the
# snapshot's xmax). Transaction ids are cluster-wide, so pg_snapshot_xmin alone would let any
# transaction of another database on the server hold dispatch back; one of those cannot write
# svc_events, so it is left out when pg_stat_activity names its database. An id it cannot place
# (another role's session, a prepared transaction) counts as this database's: slower, never
# wrong. Two running ids never share their low 32 bits (wraparound keeps them within 2^31).
PG_HORIZON_SQL = text("""
WITH s AS MATERIALIZED (SELECT pg_current_snapshot() AS snap)
SELECT coalesce(
  (SELECT min(x::text::bigint) FROM s, pg_snapshot_xip(s.snap) AS x
    WHERE (x::text::bigint % 4294967296) NOT IN (
      SELECT backend_xid::text::bigint FROM pg_stat_activity
       WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database())),
  (SELECT pg_snapshot_xmax(snap)::text::bigint FROM s))
""")


class Cursor(NamedTuple):
    """A position in a site's log: after the event ``(txid, id)``. ``str()`` is its token."""

    txid: int
    id: int

    def __str__(self) -> str:
        return f"{self.txid}-{self.id}"

    @classmethod
    def parse(cls, token: str) -> Cursor:
        """The cursor of a token from ``str(cursor)``; ValueError when it is not one."""
        if not isinstance(token, str) or len(token) > 41:
            raise ValueError("malformed cursor")
        txid, sep, event_id = token.partition("-")
        if not sep or not txid.isdigit() or not event_id.isdigit():
            raise ValueError("malformed cursor")
        return cls(int(txid), int(event_id))


START = Cursor(0, 0)


@dataclass(frozen=True)
class Event:
    """One durable event: identifiers, the operation and the changed field names; no values."""

    id: int
    site_id: str
    type: str
    collection: str | None
    item_id: str | None
    fields: list[str] | None
    occurred_at: dt.datetime
    cursor: Cursor
    request_id: str | None = None
    actor: str | None = None
    cause: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The contract's shape: ``{ id, type, collection, itemId?, fields?, occurredAt }``."""
        out: dict[str, Any] = {"id": str(self.id), "type": self.type, "collection": self.collection}
        if self.item_id is not None:
            out["itemId"] = self.item_id
        if self.fields is not None:
            out["fields"] = list(self.fields)
        out["occurredAt"] = iso(self.occurred_at)
        return out


@dataclass(frozen=True)
class EventPage:
    """What ``read_after`` returns: the events, the cursor to read on from, and whether the
    log (up to the horizon) holds more."""

    events: list[Event]
    next_cursor: Cursor
    has_more: bool


def event_row(site_id: str, type_: str, *, collection: str | None = None, item_id: str | None = None,
              fields: Iterable[str] | None = None, request_id: str | None = None, actor: str | None = None,
              cause: str | None = None, occurred_at: dt.datetime | None = None) -> dict[str, Any]:
    """One checked row for ``svc_events`` (ValueError on a bad type or field list)."""
    if not isinstance(type_, str) or len(type_) > 80 or not TYPE.match(type_):
        raise ValueError(f"event type {type_!r} is not '<resource>.<operation>'")
    names = None
    if fields is not None:
        names = sorted({str(f) for f in fields})
    return {"site_id": site_id, "type": type_, "collection": collection,
            "item_id": None if item_id is None else str(item_id), "fields": names,
            "occurred_at": occurred_at or now_utc(), "request_id": request_id,
            "actor": None if actor is None else str(actor)[:64], "cause": None if cause is None else cause[:300]}


async def write(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert event rows on the writer's connection, in its transaction (one statement)."""
    if rows:
        await conn.execute(_INSERT, list(rows))


async def horizon(conn: AsyncConnection, dialect: str) -> int | None:
    """The visibility horizon (PostgreSQL): every event with a smaller ``txid`` is committed or
    gone for good, and visible to any statement from now on. None on SQLite (no horizon)."""
    if dialect != "postgresql":
        return None
    return int((await conn.execute(PG_HORIZON_SQL)).scalar_one())


def _visible(bound: int | None) -> Any:
    """Only events below the horizon (PostgreSQL); everything committed (SQLite)."""
    return true() if bound is None else events.c.txid < bound


def _after(cursor: Cursor) -> Any:
    # Spelled out rather than a row comparison, so both dialects use the (site, txid, id) index.
    return or_(events.c.txid > cursor.txid, and_(events.c.txid == cursor.txid, events.c.id > cursor.id))


def _type_filter(types: Sequence[str]) -> Any:
    """``items.create`` matches itself; ``items.*`` every type starting ``items.``; ``*.create``
    every type ending ``.create`` (an operation of any resource)."""
    exact = [t for t in types if not t.endswith(".*") and not t.startswith("*.")]
    prefixes = [t[:-1] for t in types if t.endswith(".*")]
    suffixes = [t[1:] for t in types if t.startswith("*.")]
    clauses = []
    if exact:
        clauses.append(events.c.type.in_(exact))
    clauses.extend(events.c.type.startswith(p, autoescape=True) for p in prefixes)
    clauses.extend(events.c.type.endswith(s, autoescape=True) for s in suffixes)
    return or_(*clauses)


def _event(row: Any) -> Event:
    return Event(id=int(row["id"]), site_id=row["site_id"], type=row["type"], collection=row["collection"],
                 item_id=row["item_id"], fields=row["fields"], occurred_at=row["occurred_at"],
                 cursor=Cursor(int(row["txid"]), int(row["id"])), request_id=row["request_id"],
                 actor=row["actor"], cause=row["cause"])


async def head(conn: AsyncConnection, dialect: str, site_id: str, bound: int | None = None) -> Cursor:
    """The position of the last readable event of the site; with none, the last pruned position
    (``START`` when retention never pruned any)."""
    if bound is None:
        bound = await horizon(conn, dialect)
    row = (await conn.execute(
        select(events.c.txid, events.c.id).where(events.c.site_id == site_id, _visible(bound))
        .order_by(events.c.txid.desc(), events.c.id.desc()).limit(1))).first()
    return await earliest_cursor(conn, site_id) if row is None else Cursor(int(row[0]), int(row[1]))


async def lagging(conn: AsyncConnection, bound: int | None,
                  consumers: Sequence[Any] = ()) -> list[tuple[str, str]]:
    """The (site, checkpoint name) pairs with readable events to deliver, in every site, in one
    query per kind of pair: checkpoints behind their site's head, and (for each of ``consumers``,
    plain consumers with their ``name``, ``types`` and ``collections``) sites holding events it
    takes but no checkpoint of it. A dispatcher's first scan asks this instead of waking every
    consumer of every site that ever wrote an event (at 10,000 sites that was some 50,000
    queries at each worker's start). Each checkpoint costs one probe of the site's position index.
    """
    behind = (select(events.c.id).where(
        events.c.site_id == checkpoints.c.site_id, _visible(bound),
        or_(events.c.txid > checkpoints.c.cursor_txid,
            and_(events.c.txid == checkpoints.c.cursor_txid, events.c.id > checkpoints.c.cursor_id)))
        .exists())
    found = [(r[0], r[1]) for r in await conn.execute(
        select(checkpoints.c.site_id, checkpoints.c.consumer).where(behind))]
    for consumer in consumers:
        none_yet = ~(select(checkpoints.c.site_id).where(checkpoints.c.site_id == events.c.site_id,
                                                         checkpoints.c.consumer == consumer.name).exists())
        stmt = select(events.c.site_id).where(_visible(bound), none_yet).distinct()
        if consumer.types:
            stmt = stmt.where(_type_filter(consumer.types))
        if consumer.collections:
            stmt = stmt.where(events.c.collection.in_(list(consumer.collections)))
        found.extend((site_id, consumer.name) for (site_id,) in await conn.execute(stmt))
    return found


async def read_after(conn: AsyncConnection, dialect: str, site_id: str, cursor: Cursor = START,
                     limit: int = 100, *, types: Sequence[str] = (),
                     collections: Sequence[str] = ()) -> EventPage:
    """Up to ``limit`` events of ``site_id`` after ``cursor``, in log order, and the next cursor.

    ``types`` (``items.create`` or ``items.*``) and ``collections`` filter; the next cursor
    still moves past the events they leave out, so a filtered reader does not scan them again.
    """
    limit = max(1, min(int(limit), MAX_LIMIT))
    # The head first: events that become readable after it sort after it (see the module
    # docstring), so bounding the page by it keeps both answers consistent without one snapshot.
    last = await head(conn, dialect, site_id, await horizon(conn, dialect))
    if last <= cursor:
        return EventPage([], cursor, False)
    stmt = (select(events).where(events.c.site_id == site_id, _after(cursor),
                                 or_(events.c.txid < last.txid, and_(events.c.txid == last.txid,
                                                                      events.c.id <= last.id)))
            .order_by(events.c.txid, events.c.id).limit(limit + 1))
    if types:
        stmt = stmt.where(_type_filter(types))
    if collections:
        stmt = stmt.where(events.c.collection.in_(list(collections)))
    rows = (await conn.execute(stmt)).mappings().all()
    found = [_event(r) for r in rows[:limit]]
    if len(rows) > limit:
        return EventPage(found, found[-1].cursor, True)
    return EventPage(found, last, False)


async def backlog(conn: AsyncConnection, dialect: str, site_id: str, cursor: Cursor, *,
                  types: Sequence[str] = (), collections: Sequence[str] = ()) -> tuple[int, dt.datetime | None]:
    """How many readable events of the site (matching the filters) lie after ``cursor``, and when
    the oldest of them occurred: a consumer's lag."""
    where = [events.c.site_id == site_id, _after(cursor), _visible(await horizon(conn, dialect))]
    if types:
        where.append(_type_filter(types))
    if collections:
        where.append(events.c.collection.in_(list(collections)))
    count, oldest = (await conn.execute(select(func.count(), func.min(events.c.occurred_at)).where(*where))).one()
    return int(count), aware(oldest)


async def cursor_before(conn: AsyncConnection, dialect: str, site_id: str, when: dt.datetime) -> Cursor:
    """The position just before the site's first event that occurred after ``when``: the head
    when there is none, the earliest position when no event before it is left."""
    first = (await conn.execute(select(events.c.txid, events.c.id).where(
        events.c.site_id == site_id, events.c.occurred_at > when)
        .order_by(events.c.txid, events.c.id).limit(1))).first()
    if first is None:
        return await head(conn, dialect, site_id)
    prior = (await conn.execute(select(events.c.txid, events.c.id).where(
        events.c.site_id == site_id, ~_after(Cursor(int(first[0]), int(first[1] - 1))))
        .order_by(events.c.txid.desc(), events.c.id.desc()).limit(1))).first()
    return await earliest_cursor(conn, site_id) if prior is None else Cursor(int(prior[0]), int(prior[1]))


async def earliest_cursor(conn: AsyncConnection, site_id: str) -> Cursor:
    """The oldest cursor still complete: the last pruned position, or ``START`` when the site
    never lost an event to retention. A cursor before it is expired."""
    row = (await conn.execute(select(retention.c.pruned_txid, retention.c.pruned_id)
                              .where(retention.c.site_id == site_id))).first()
    return START if row is None else Cursor(int(row[0]), int(row[1]))


async def prune_site(conn: AsyncConnection, dialect: str, site_id: str, before: dt.datetime,
                     chunk: int = 500) -> int:
    """Delete the site's oldest events up to the first one that occurred at or after ``before``
    (at most ``chunk``); record the last deleted position. Returns how many were deleted."""
    rows = (await conn.execute(
        select(events.c.txid, events.c.id, events.c.occurred_at).where(events.c.site_id == site_id)
        .order_by(events.c.txid, events.c.id).limit(chunk))).all()
    last = None
    for txid, event_id, occurred_at in rows:
        if aware(occurred_at) >= before:
            break
        last = Cursor(int(txid), int(event_id))
    if last is None:
        return 0
    result = await conn.execute(delete(events).where(
        events.c.site_id == site_id,
        or_(events.c.txid < last.txid, and_(events.c.txid == last.txid, events.c.id <= last.id))))
    upsert = dialect_insert(dialect)(retention).values(
        site_id=site_id, pruned_txid=last.txid, pruned_id=last.id, pruned_at=now_utc())
    await conn.execute(upsert.on_conflict_do_update(
        index_elements=[retention.c.site_id],
        set_={"pruned_txid": last.txid, "pruned_id": last.id, "pruned_at": now_utc()}))
    return int(result.rowcount or 0)


async def sites_to_prune(conn: AsyncConnection, before: dt.datetime,
                         site_ids: Sequence[str] | None = None) -> list[str]:
    """The sites (of ``site_ids``, else of every site) whose first event in log order occurred
    before ``before``: exactly those ``prune_site`` would delete from. One statement across
    sites, each site's first event read through the ``(site_id, txid, id)`` index, so a run
    costs nothing per site that has nothing to prune (issue 27, "scale")."""
    from kernel.tenancy.tables import sites

    first = (select(events.c.occurred_at).where(events.c.site_id == sites.c.id)
             .order_by(events.c.txid, events.c.id).limit(1).scalar_subquery())
    stmt = select(sites.c.id).where(first < before).order_by(sites.c.id)
    if site_ids is not None:
        stmt = stmt.where(sites.c.id.in_(list(site_ids)))
    return list((await conn.execute(stmt)).scalars())


async def forget_site(conn: AsyncConnection, site_id: str) -> None:
    """Remove a deleted site's events, checkpoints and watermark (inside its deletion)."""
    for table in (events, checkpoints, retention):
        await conn.execute(delete(table).where(table.c.site_id == site_id))
