"""The SQL of the job queue: enqueue, claim, finish, retry, lease renewal, status, ticks.

Every function takes the time it should consider "now", so a test can run the queue at any
moment it likes (``kernel.testing.run_due_jobs``) and workers never disagree with themselves.
Claims lock the rows they take: ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so concurrent
workers each get different rows without waiting; on SQLite the claim runs in a write
transaction (``Database.begin``: the process's write gate, the file lock, ``BEGIN
IMMEDIATE``), so claimers take turns and the second sees the first one's claim.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections import Counter
from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import and_, case, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from kernel.db import Database
from kernel.db.meta import dialect_insert, iso
from kernel.jobs.tables import job_ticks, jobs

PENDING, RUNNING, FAILED = "pending", "running", "failed"
ERROR_LIMIT = 4000  # characters of an error kept on the row


def dedupe_value(site_id: str | None, name: str, key: str | None) -> str | None:
    """The stored dedupe column: the key scoped to its site and job name."""
    return None if key is None else f"{site_id or '-'}/{name}/{key}"


async def insert_job(conn: AsyncConnection, *, site_id: str | None, name: str, args: dict[str, Any],
                     due_at: dt.datetime, dedupe_key: str | None, now: dt.datetime,
                     replace: bool = False) -> str | None:
    """Insert one pending job on ``conn`` (the caller's transaction); returns its id, or None
    when a pending job with the same dedupe key already waits (then nothing is inserted). With
    ``replace``, that pending job takes the new arguments and due time instead, and its id is
    returned (a release whose publication time moved)."""
    job_id = uuid.uuid4().hex
    values = {"id": job_id, "site_id": site_id, "name": name, "args": args,
              "dedupe": dedupe_value(site_id, name, dedupe_key), "status": PENDING, "due_at": due_at,
              "attempts": 0, "created_at": now, "updated_at": now}
    if dedupe_key is None:
        await conn.execute(insert(jobs).values(**values))
        return job_id
    # ON CONFLICT DO NOTHING on the partial unique index.
    stmt = dialect_insert(conn.dialect.name)(jobs).values(**values)
    if replace:
        stmt = stmt.on_conflict_do_update(
            index_elements=[jobs.c.dedupe], index_where=jobs.c.status == PENDING,
            set_={"args": stmt.excluded.args, "due_at": stmt.excluded.due_at, "updated_at": stmt.excluded.updated_at})
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=[jobs.c.dedupe], index_where=jobs.c.status == PENDING)
    return (await conn.execute(stmt.returning(jobs.c.id))).scalar()


async def cancel_pending(conn: AsyncConnection, *, site_id: str | None, name: str, dedupe_key: str) -> int:
    """Delete the pending job of this site, name and dedupe key, if one waits; returns how many
    (0 or 1). A job a worker already claimed is not stopped."""
    result = await conn.execute(delete(jobs).where(jobs.c.dedupe == dedupe_value(site_id, name, dedupe_key),
                                                   jobs.c.status == PENDING))
    return int(result.rowcount or 0)


async def rewrite_waiting(conn: AsyncConnection, *, site_id: str, name: str, rewrite: Any) -> int:
    """Pass the arguments of every pending or failed job ``name`` of ``site_id`` to
    ``rewrite(args)``: ``None`` deletes the job, a dict replaces its arguments (and clears its last
    error, which may quote them), the same dict leaves it alone. Returns how many changed."""
    rows = (await conn.execute(select(jobs.c.id, jobs.c.args).where(
        jobs.c.site_id == site_id, jobs.c.name == name, jobs.c.status.in_((PENDING, FAILED))))).all()
    changed = 0
    for job_id, args in rows:
        new = rewrite(dict(args or {}))
        if new is None:
            await conn.execute(delete(jobs).where(jobs.c.id == job_id))
        elif new != args:
            await conn.execute(update(jobs).where(jobs.c.id == job_id).values(args=new, last_error=None))
        else:
            continue
        changed += 1
    return changed


def _due(now: dt.datetime) -> Any:
    """Runnable rows: pending and due, or running under a lease that expired (a dead worker)."""
    return or_(and_(jobs.c.status == PENDING, jobs.c.due_at <= now),
               and_(jobs.c.status == RUNNING, jobs.c.lease_until < now))


async def anything_due(db: Database, now: dt.datetime, names: list[str] | None = None) -> bool:
    """A cheap read before a claim, so an idle worker never takes SQLite's write lock."""
    query = select(jobs.c.id).where(_due(now)).limit(1)
    if names is not None:
        query = query.where(jobs.c.name.in_(names))
    async with db.connect() as conn:
        return (await conn.execute(query)).first() is not None


async def claim(db: Database, worker: str, now: dt.datetime, limit: int, lease_seconds: float,
                names: list[str] | None = None, running: Collection[str] = (), *,
                per_site: int = 0, site_running: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
    """Claim up to ``limit`` runnable jobs for ``worker``: each gets ``running``, the worker's
    name, a lease and one more attempt. Returns the claimed rows (id, site_id, name, args,
    attempts). ``names`` limits the claim to jobs this worker knows; ``running`` are the ids
    the worker still runs: a job whose lease ran out while it runs is not taken again by the
    same worker, whose name fencing cannot tell apart from its earlier claim.

    ``per_site`` (``SVC_JOBS_SITE_CONCURRENCY``; 0: none) caps the jobs of one site this worker
    runs at once, counting ``site_running`` (site -> jobs it runs now): a site with a flood of
    due jobs leaves the other slots to other sites' jobs, which are picked past it."""
    busy = sorted(site for site, n in (site_running or {}).items() if per_site and n >= per_site)
    pick = select(jobs.c.id, jobs.c.site_id).where(_due(now)).order_by(jobs.c.due_at)
    # With a cap, look further than ``limit``: rows of a site that reaches it are passed over.
    pick = pick.limit(limit * 4 if per_site else limit)
    if names is not None:
        pick = pick.where(jobs.c.name.in_(names))
    if running:
        pick = pick.where(jobs.c.id.not_in(list(running)))
    if busy:
        pick = pick.where(or_(jobs.c.site_id.is_(None), jobs.c.site_id.not_in(busy)))
    pick = pick.with_for_update(skip_locked=True)  # nothing on SQLite: the write lock is held
    lease = now + dt.timedelta(seconds=lease_seconds)
    async with db.begin() as conn:
        ids: list[str] = []
        taken = Counter(site_running or {})
        for job_id, site_id in (await conn.execute(pick)).all():
            if site_id is not None and per_site:
                if taken[site_id] >= per_site:
                    continue
                taken[site_id] += 1
            ids.append(job_id)
            if len(ids) >= limit:
                break
        if not ids:
            return []
        await conn.execute(update(jobs).where(jobs.c.id.in_(ids)).values(
            status=RUNNING, claimed_by=worker, lease_until=lease, attempts=jobs.c.attempts + 1, updated_at=now))
        rows = await conn.execute(select(jobs.c.id, jobs.c.site_id, jobs.c.name, jobs.c.args, jobs.c.attempts)
                                  .where(jobs.c.id.in_(ids)).order_by(jobs.c.due_at))
        return [dict(row._mapping) for row in rows]


def _mine(job_id: str, worker: str) -> Any:
    # A worker whose lease ran out may finish after another worker reclaimed the row: then the
    # row is no longer its to change.
    return and_(jobs.c.id == job_id, jobs.c.claimed_by == worker, jobs.c.status == RUNNING)


async def finish(db: Database, job_id: str, worker: str) -> None:
    """The run succeeded: the row goes."""
    async with db.begin() as conn:
        await conn.execute(delete(jobs).where(_mine(job_id, worker)))


async def retry_later(db: Database, job_id: str, worker: str, due_at: dt.datetime, error: str | None,
                      now: dt.datetime, *, count_attempt: bool = True) -> None:
    """Put a claimed job back as pending, due at ``due_at``. When a job with the same dedupe
    key was enqueued while this one ran, that pending job does the same work: this row goes."""
    values: dict[str, Any] = {"status": PENDING, "due_at": due_at, "claimed_by": None, "lease_until": None,
                              "updated_at": now}
    if error is not None:
        values["last_error"] = error[:ERROR_LIMIT]
    if not count_attempt:
        values["attempts"] = jobs.c.attempts - 1
    try:
        async with db.begin() as conn:
            await conn.execute(update(jobs).where(_mine(job_id, worker)).values(**values))
    except IntegrityError:
        async with db.begin() as conn:
            await conn.execute(delete(jobs).where(_mine(job_id, worker)))


async def fail(db: Database, job_id: str, worker: str, error: str, now: dt.datetime, *,
               replace_name: str | None = None) -> None:
    """No retries left: keep the row as ``failed`` with its error, for the operator. With
    ``replace_name`` (periodic jobs, which fail once per tick while broken), earlier failed rows
    of that job go, so the latest failure stands for them instead of piling up."""
    async with db.begin() as conn:
        if replace_name is not None:
            await conn.execute(delete(jobs).where(jobs.c.name == replace_name, jobs.c.status == FAILED,
                                                  jobs.c.id != job_id))
        await conn.execute(update(jobs).where(_mine(job_id, worker)).values(
            status=FAILED, last_error=error[:ERROR_LIMIT], claimed_by=None, lease_until=None, updated_at=now))


async def renew_leases(db: Database, ids: list[str], worker: str, now: dt.datetime, lease_seconds: float) -> None:
    """Extend the leases of the jobs this worker is running (its heartbeat)."""
    if not ids:
        return
    async with db.begin() as conn:
        await conn.execute(update(jobs).where(jobs.c.id.in_(ids), jobs.c.claimed_by == worker,
                                              jobs.c.status == RUNNING)
                           .values(lease_until=now + dt.timedelta(seconds=lease_seconds)))


async def purge_failed(db: Database, before: dt.datetime) -> int:
    """Delete failed rows last touched before ``before``; returns how many."""
    async with db.begin() as conn:
        result = await conn.execute(delete(jobs).where(jobs.c.status == FAILED, jobs.c.updated_at < before))
        return int(result.rowcount or 0)


async def claim_tick(db: Database, name: str, slot: int, now: dt.datetime) -> bool:
    """Claim periodic job ``name``'s ``slot`` and enqueue its run in one transaction; True if this
    caller won (an upsert that only moves the slot forward: a returned row says who won)."""
    stmt = dialect_insert(db.dialect)(job_ticks).values(name=name, slot=slot)
    stmt = stmt.on_conflict_do_update(index_elements=[job_ticks.c.name], set_={"slot": stmt.excluded.slot},
                                      where=job_ticks.c.slot < stmt.excluded.slot).returning(job_ticks.c.slot)
    async with db.begin() as conn:
        won = (await conn.execute(stmt)).first() is not None
        if won:
            await insert_job(conn, site_id=None, name=name, args={}, due_at=now, dedupe_key="tick", now=now)
        return won


async def counts(db: Database, now: dt.datetime, site_id: str | None = None) -> dict[str, dict[str, int]]:
    """Per job name: ``{pending, due, running, failed}`` (``due``: pending and due by ``now``)."""
    due = func.sum(case((jobs.c.due_at <= now, 1), else_=0))
    query = select(jobs.c.name, jobs.c.status, func.count(), due).group_by(jobs.c.name, jobs.c.status)
    if site_id is not None:
        query = query.where(jobs.c.site_id == site_id)
    out: dict[str, dict[str, int]] = {}
    async with db.connect() as conn:
        for name, status, count, due_count in await conn.execute(query):
            row = out.setdefault(name, {"pending": 0, "due": 0, "running": 0, "failed": 0})
            row[status] = row.get(status, 0) + int(count)
            if status == PENDING:
                row["due"] += int(due_count or 0)
    return out


async def recent_failures(db: Database, limit: int, site_id: str | None = None) -> list[dict[str, Any]]:
    """The latest failed jobs, newest first, with their error."""
    query = (select(jobs.c.id, jobs.c.site_id, jobs.c.name, jobs.c.args, jobs.c.attempts, jobs.c.last_error,
                    jobs.c.updated_at).where(jobs.c.status == FAILED)
             .order_by(jobs.c.updated_at.desc(), jobs.c.id).limit(limit))
    if site_id is not None:
        query = query.where(jobs.c.site_id == site_id)
    async with db.connect() as conn:
        rows = await conn.execute(query)
        return [{"id": r.id, "siteId": r.site_id, "name": r.name, "args": r.args, "attempts": r.attempts,
                 "error": r.last_error, "failedAt": iso(r.updated_at)} for r in rows]


async def list_jobs(db: Database, *, site_id: str | None = None, status: str | None = None,
                    limit: int = 100) -> list[dict[str, Any]]:
    """Queued jobs as the status listing shows them, soonest due first."""
    query = select(jobs).order_by(jobs.c.due_at, jobs.c.id).limit(limit)
    if site_id is not None:
        query = query.where(jobs.c.site_id == site_id)
    if status is not None:
        query = query.where(jobs.c.status == status)
    async with db.connect() as conn:
        rows = await conn.execute(query)
        return [{"id": r.id, "siteId": r.site_id, "name": r.name, "args": r.args, "status": r.status,
                 "dueAt": iso(r.due_at), "attempts": r.attempts, "error": r.last_error} for r in rows]
