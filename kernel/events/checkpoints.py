"""Consumer checkpoints: one row per (site, consumer) with its cursor, lease and retry state.

A dispatcher claims a row before it hands events to the consumer: in one short transaction it
locks the row (``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so a worker never waits on another's
claim; on SQLite the write lock serialises claims) and, when no live lease and no pending
retry stand in the way, writes its own lease. Then it reads and calls the consumer outside any
transaction, and acknowledges each batch in another short transaction that moves the cursor,
extends the lease, and only succeeds while the lease is still its own. A worker that dies
leaves its lease to expire; the next claim after that starts from the last acknowledged
cursor, so only unacknowledged events are handed out twice.

A claim creates a missing checkpoint only for a plain consumer (``start``). A consumer-group
member's checkpoint is made by the plugin when the member is created and removed when it is
deleted, each in the member's own transaction; a claim never makes one again (``start=None``:
``NoCheckpoint``). A dispatcher that listed a member just before it was deleted would otherwise
re-create the checkpoint after the delete committed (at ``START``, never dropped again when the
batch was empty or the worker stopped before the handler could notice).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, delete, or_, select, update

from kernel.db.meta import aware, dialect_insert, now_utc
from kernel.events.log import START, Cursor
from kernel.events.tables import checkpoints


@dataclass(frozen=True)
class Claim:
    """A lease on (site, consumer) held by ``owner`` from the checkpoint ``cursor``."""

    site_id: str
    consumer: str
    owner: str
    cursor: Cursor
    attempts: int


class NoCheckpoint(LookupError):
    """``claim(..., start=None)`` found no checkpoint: the group member was deleted (or never
    made one), and nothing is to be delivered to it."""


def _key(site_id: str, consumer: str) -> Any:
    return and_(checkpoints.c.site_id == site_id, checkpoints.c.consumer == consumer)


async def claim(db: Any, site_id: str, consumer: str, owner: str, lease_seconds: float,
                start: Cursor | None = START) -> Claim | None:
    """Take the lease of (site, consumer), creating its checkpoint at ``start``; ``None`` when
    another worker holds it (or is claiming it) or a retry is not due yet. With ``start=None``
    (a group member) the checkpoint must exist: ``NoCheckpoint`` when it does not."""
    now = now_utc()
    locked = select(checkpoints).where(_key(site_id, consumer)).with_for_update(skip_locked=True)
    async with db.begin() as conn:
        row = (await conn.execute(locked)).mappings().first()
        if row is None:
            exists = (await conn.execute(select(checkpoints.c.site_id).where(_key(site_id, consumer)))).first()
            if exists is not None:
                return None  # locked by another worker's claim right now (or by a delete)
            if start is None:
                raise NoCheckpoint(consumer)
            # Two workers may both find no row: the second insert does nothing, then skips the lock.
            await conn.execute(dialect_insert(db.dialect)(checkpoints).values(
                site_id=site_id, consumer=consumer, cursor_txid=start.txid, cursor_id=start.id, attempts=0,
                updated_at=now).on_conflict_do_nothing())
            row = (await conn.execute(locked)).mappings().first()
            if row is None:
                return None
        lease_until, retry_at = aware(row["lease_until"]), aware(row["retry_at"])
        if row["lease_owner"] not in (None, owner) and lease_until is not None and lease_until > now:
            return None
        if retry_at is not None and retry_at > now:
            return None
        await conn.execute(update(checkpoints).where(_key(site_id, consumer)).values(
            lease_owner=owner, lease_until=now + dt.timedelta(seconds=lease_seconds), updated_at=now))
    return Claim(site_id, consumer, owner, Cursor(int(row["cursor_txid"]), int(row["cursor_id"])),
                 int(row["attempts"]))


async def ack(db: Any, held: Claim, cursor: Cursor, lease_seconds: float, *, release: bool = False) -> bool:
    """Move the checkpoint to ``cursor`` (forward only), clear the failure state, and extend the
    lease (or ``release`` it). False when the lease is no longer ``held``'s."""
    now = now_utc()
    values: dict[str, Any] = {"cursor_txid": cursor.txid, "cursor_id": cursor.id, "attempts": 0,
                              "retry_at": None, "last_error": None, "updated_at": now}
    if release:
        values.update(lease_owner=None, lease_until=None)
    else:
        values["lease_until"] = now + dt.timedelta(seconds=lease_seconds)
    not_behind = or_(checkpoints.c.cursor_txid < cursor.txid,
                     and_(checkpoints.c.cursor_txid == cursor.txid, checkpoints.c.cursor_id <= cursor.id))
    async with db.begin() as conn:
        result = await conn.execute(update(checkpoints).where(
            _key(held.site_id, held.consumer), checkpoints.c.lease_owner == held.owner, not_behind).values(**values))
    return bool(result.rowcount)


async def fail(db: Any, held: Claim, error: str, retry_at: dt.datetime) -> int:
    """Record a failed batch: one more attempt, the next try not before ``retry_at``, the lease
    released. Returns the attempts so far."""
    attempts = held.attempts + 1
    async with db.begin() as conn:
        await conn.execute(update(checkpoints).where(
            _key(held.site_id, held.consumer), checkpoints.c.lease_owner == held.owner).values(
            attempts=attempts, retry_at=retry_at, last_error=error[:500], lease_owner=None, lease_until=None,
            updated_at=now_utc()))
    return attempts


async def release_all(db: Any, owner: str) -> None:
    """Give up every lease ``owner`` holds (a dispatcher stopping), so no one waits for them."""
    async with db.begin() as conn:
        await conn.execute(update(checkpoints).where(checkpoints.c.lease_owner == owner).values(
            lease_owner=None, lease_until=None))


async def due(conn: Any, now: dt.datetime) -> list[tuple[str, str]]:
    """(site, consumer) pairs whose retry is due or whose lease expired (its worker died)."""
    rows = await conn.execute(select(checkpoints.c.site_id, checkpoints.c.consumer).where(or_(
        checkpoints.c.retry_at <= now,
        and_(checkpoints.c.lease_owner.is_not(None), checkpoints.c.lease_until < now))))
    return [(r[0], r[1]) for r in rows]


async def read(conn: Any, site_id: str, consumer: str) -> dict[str, Any] | None:
    """The checkpoint of (site, consumer) as ``{cursor, attempts, retryAt, lastError, leaseOwner}``."""
    row = (await conn.execute(select(checkpoints).where(_key(site_id, consumer)))).mappings().first()
    if row is None:
        return None
    return {"cursor": Cursor(int(row["cursor_txid"]), int(row["cursor_id"])), "attempts": int(row["attempts"]),
            "retryAt": aware(row["retry_at"]), "lastError": row["last_error"], "leaseOwner": row["lease_owner"],
            "leaseUntil": aware(row["lease_until"])}


async def put(conn: Any, dialect: str, site_id: str, consumer: str, cursor: Cursor) -> None:
    """Set (or create) the checkpoint of (site, consumer) at ``cursor``, in the caller's
    transaction: a rewind or a fresh start. Clears the failure state and the lease, so a worker
    delivering from the old position cannot acknowledge over it."""
    now = now_utc()
    values = {"cursor_txid": cursor.txid, "cursor_id": cursor.id, "attempts": 0, "retry_at": None,
              "last_error": None, "lease_owner": None, "lease_until": None, "updated_at": now}
    await conn.execute(dialect_insert(dialect)(checkpoints).values(site_id=site_id, consumer=consumer, **values)
                       .on_conflict_do_update(index_elements=[checkpoints.c.site_id, checkpoints.c.consumer],
                                              set_=values))


async def remove(conn: Any, site_id: str, consumer: str) -> None:
    """Drop the checkpoint of (site, consumer) (a group member deleted), in the caller's transaction."""
    await conn.execute(delete(checkpoints).where(_key(site_id, consumer)))


async def make_due(db: Any, site_id: str, consumer: str) -> bool:
    """End a pending retry's wait now (an on-demand dispatch); False without a checkpoint."""
    async with db.begin() as conn:
        result = await conn.execute(update(checkpoints).where(_key(site_id, consumer), checkpoints.c.retry_at.is_not(None))
                                    .values(retry_at=now_utc()))
        if result.rowcount:
            return True
        return (await conn.execute(select(checkpoints.c.site_id).where(_key(site_id, consumer)))).first() is not None
