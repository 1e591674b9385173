"""The worker: claims due jobs from the database and runs them as tasks on one event loop.

Job functions are coroutines, so a worker runs up to ``concurrency`` of them at once on the
loop that owns the app's database engine and clients: a job waiting on I/O never holds a
thread, and a slow job does not stop the others. Each claim takes a lease that the worker
renews while the job runs (its heartbeat); a worker that dies stops renewing, and once its
leases expire any other worker reclaims those jobs (at least once: jobs must be idempotent).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import socket
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernel.base.backoff import backoff_delay
from kernel.db.meta import now_utc
from kernel.db.unavailable import unavailable_dependency
from kernel.jobs import store

if TYPE_CHECKING:
    from kernel.jobs.queue import JobQueue

logger = logging.getLogger("kernel.jobs")

UNKNOWN_JOB_DELAY = 60.0  # seconds before a job no worker here knows is offered again
UNAVAILABLE_RETRY_SECONDS = 10.0  # about when a job that met a database restart is offered again


def worker_name() -> str:
    """``host:pid:random``: what ``claimed_by`` shows, unique per worker instance."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class JobRun:
    """The outcome of one run: ``ok``, or the error and whether the job will be retried."""

    id: str
    name: str
    ok: bool
    error: str | None = None
    retry_at: dt.datetime | None = None


class JobWorker:
    """Claims due jobs and runs them on the current loop, up to ``concurrency`` at once."""

    def __init__(self, queue: JobQueue, kernel: Any, *, concurrency: int = 10, poll_seconds: float = 1.0,
                 lease_seconds: float = 60.0, clock: Callable[[], dt.datetime] = now_utc, per_site: int = 0) -> None:
        self.queue = queue
        self.kernel = kernel
        self.concurrency = max(1, concurrency)
        # At most this many jobs of one site at once (0: no cap; SVC_JOBS_SITE_CONCURRENCY).
        self.per_site = per_site if 0 < per_site < self.concurrency else 0
        self.sites: dict[str, str | None] = {}  # running job id -> its site
        self.poll_seconds = poll_seconds
        self.lease_seconds = lease_seconds
        self.clock = clock
        self.name = worker_name()
        self.running: dict[str, asyncio.Task[JobRun]] = {}
        self._wake = asyncio.Event()
        self._stopping = False
        self._last_slot: dict[str, int] = {}

    @property
    def db(self) -> Any:
        return self.kernel.db

    def wake(self) -> None:
        """Look for due jobs now rather than at the next poll."""
        self._wake.set()

    # -- one pass ---------------------------------------------------------------------------

    async def claim_and_start(self, now: dt.datetime) -> int:
        """Claim as many due jobs as there are free slots and start them; returns how many.

        With a per-site cap, a claim may pass over the rows of a site that reached it; another
        claim then looks past that site, so other sites' due jobs fill the free slots now."""
        started = 0
        for _ in range(3):
            free = self.concurrency - len(self.running)
            names = self.queue.names()
            if free <= 0 or not names or not await store.anything_due(self.db, now, names):
                return started
            busy_before = self._busy_sites()
            rows = await store.claim(self.db, self.name, now, free, self.lease_seconds, names, running=self.running,
                                     per_site=self.per_site, site_running=self.site_running())
            for row in rows:
                task = asyncio.get_running_loop().create_task(self.run_claimed(row), name=f"job:{row['name']}")
                self.running[row["id"]] = task
                self.sites[row["id"]] = row["site_id"]
                task.add_done_callback(lambda _t, job_id=row["id"]: self._done(job_id))
            started += len(rows)
            if len(rows) >= free or not self.per_site or self._busy_sites() == busy_before:
                return started
        return started

    def site_running(self) -> dict[str, int]:
        """Site -> jobs of that site this worker runs now."""
        return dict(Counter(site for site in self.sites.values() if site is not None))

    def _busy_sites(self) -> set[str]:
        return {site for site, n in self.site_running().items() if n >= self.per_site}

    def _done(self, job_id: str) -> None:
        self.running.pop(job_id, None)
        self.sites.pop(job_id, None)
        self._wake.set()  # a slot is free

    async def tick_periodic(self, now: dt.datetime) -> None:
        """Enqueue the periodic jobs whose slot has come; one worker wins each slot."""
        for job in self.queue.periodic_jobs():
            assert job.schedule is not None
            slot = job.schedule.slot(now.timestamp())
            if slot is None or self._last_slot.get(job.name) == slot:
                continue
            if await store.claim_tick(self.db, job.name, slot, now):
                self._wake.set()
            self._last_slot[job.name] = slot

    async def run_claimed(self, row: dict[str, Any]) -> JobRun:
        """Run one claimed job to its end and record the outcome on its row."""
        job_id, name = row["id"], row["name"]
        job = self.queue.job(name)
        if job is None:  # unregistered between the claim and now
            now = self.clock()
            await store.retry_later(self.db, job_id, self.name, now + dt.timedelta(seconds=UNKNOWN_JOB_DELAY),
                                    f"no job {name!r} is registered in this worker", now, count_attempt=False)
            return JobRun(job_id, name, False, "unknown job")
        try:
            async with asyncio.timeout(job.timeout):  # not wait_for: it can lose a cancellation (3.11)
                await job.fn(self.kernel, **(row["args"] or {}))
        except asyncio.CancelledError:
            # The worker is stopping: give the job back at once, without spending an attempt.
            now = self.clock()
            await asyncio.shield(store.retry_later(self.db, job_id, self.name, now, None, now,
                                                   count_attempt=False))
            raise
        except Exception as exc:
            if unavailable_dependency(exc):
                return await self._recorded(row, self._put_back(job, row, exc))
            return await self._recorded(row, self._failed(job, row, exc))
        return await self._recorded(row, self._finished(row))

    def _count_run(self, name: str, outcome: str) -> None:
        state = getattr(self.kernel, "state", None)
        if state is not None:  # svc_job_runs_total on svc worker's /metrics (kernel.metrics.worker)
            state.setdefault("job_runs", Counter())[(name, outcome)] += 1

    async def _finished(self, row: dict[str, Any]) -> JobRun:
        self._count_run(row["name"], "succeeded")
        await store.finish(self.db, row["id"], self.name)
        return JobRun(row["id"], row["name"], True)

    async def _recorded(self, row: dict[str, Any], outcome: Any) -> JobRun:
        """Record the outcome; with the database away, the row stays leased and the job runs
        again once its lease expires (at least once), instead of an unretrieved task error."""
        try:
            return await outcome
        except Exception as exc:
            if not unavailable_dependency(exc):
                raise
            logger.warning("job %s (%s): the database is unavailable, its outcome is not recorded; it runs "
                           "again once its lease expires (%s)", row["name"], row["id"], type(exc).__name__)
            return JobRun(row["id"], row["name"], False, "database unavailable")

    async def _put_back(self, job: Any, row: dict[str, Any], exc: Exception) -> JobRun:
        """A job that met an unavailable database or Redis (a restart, a failover) did not fail
        on its own: it goes back to the queue without spending an attempt."""
        self._count_run(job.name, "put_back")
        now = self.clock()
        retry_at = now + dt.timedelta(seconds=backoff_delay(1, UNAVAILABLE_RETRY_SECONDS, UNAVAILABLE_RETRY_SECONDS))
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        logger.warning("job %s (%s) met an unavailable dependency; put back without spending an attempt: %s",
                       job.name, row["id"], error.splitlines()[0])
        await store.retry_later(self.db, row["id"], self.name, retry_at, error, now, count_attempt=False)
        return JobRun(row["id"], job.name, False, error, retry_at)

    async def _failed(self, job: Any, row: dict[str, Any], exc: Exception) -> JobRun:
        now = self.clock()
        if isinstance(exc, TimeoutError) and job.timeout is not None:
            error = f"JobTimeout: ran longer than its {job.timeout}s timeout"
        else:
            error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        attempts = row["attempts"]
        state = getattr(self.kernel, "state", None)
        outcome = "retry" if attempts <= job.retries else "failed"
        if state is not None:  # svc_job_failures_total on /metrics
            state.setdefault("job_failures", Counter())[(job.name, outcome)] += 1
        self._count_run(job.name, outcome)
        if attempts <= job.retries:
            delay = backoff_delay(attempts, job.retry_delay, job.retry_max_delay)
            retry_at = now + dt.timedelta(seconds=delay)
            logger.warning("job %s (%s) failed (attempt %d of %d), retrying in %.1fs: %s", job.name, row["id"],
                           attempts, job.retries + 1, delay, error)
            await store.retry_later(self.db, row["id"], self.name, retry_at, error, now)
            return JobRun(row["id"], job.name, False, error, retry_at)
        logger.error("job %s (%s) failed (attempt %d of %d), giving up: %s", job.name, row["id"], attempts,
                     job.retries + 1, error, exc_info=exc)
        if getattr(job, "on_give_up", None) is not None:  # -- more43: its owner counts the outcome
            try:
                await job.on_give_up(self.kernel, error, **(row["args"] or {}))
            except Exception:
                logger.exception("job %s (%s): its on_give_up failed", job.name, row["id"])
        await store.fail(self.db, row["id"], self.name, error, now,
                         replace_name=job.name if job.kind == "periodic" else None)
        return JobRun(row["id"], job.name, False, error)

    # -- serving ----------------------------------------------------------------------------

    async def serve(self, purge_after_days: int = 14) -> None:
        """Claim and run jobs until ``stop``; a database error is logged and retried next poll."""
        loop = asyncio.get_running_loop()
        next_renewal = next_purge = loop.time()
        while not self._stopping:
            self._wake.clear()
            now = self.clock()
            try:
                await self.tick_periodic(now)
                await self.claim_and_start(now)
                if loop.time() >= next_renewal:
                    await store.renew_leases(self.db, list(self.running), self.name, now, self.lease_seconds)
                    next_renewal = loop.time() + self.lease_seconds / 3
                if loop.time() >= next_purge and purge_after_days > 0:
                    gone = await store.purge_failed(self.db, now - dt.timedelta(days=purge_after_days))
                    if gone:
                        logger.info("purged %d failed job(s) older than %d days", gone, purge_after_days)
                    next_purge = loop.time() + 3600
            except Exception as exc:
                if unavailable_dependency(exc):  # a restart or failover: one line, not a trace
                    logger.warning("job worker %s: claiming jobs failed, the database is unavailable (%s); "
                                   "trying again", self.name, type(exc).__name__)
                else:
                    logger.exception("job worker %s: claiming jobs failed; trying again", self.name)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll_seconds):
                    await self._wake.wait()

    def request_stop(self) -> None:
        """Make ``serve`` return after its current pass; it claims nothing more."""
        self._stopping = True
        self._wake.set()

    async def drain(self, grace: float) -> None:
        """Running jobs get ``grace`` seconds, then are cancelled and given back to the queue.
        Call once ``serve`` has returned, so no claim can start a job after this looked."""
        tasks = list(self.running.values())
        if not tasks:
            return
        _, late = await asyncio.wait(tasks, timeout=grace)
        for task in late:
            task.cancel()
        if late:
            logger.warning("stopped %d running job(s); they are given back to the queue", len(late))
            await asyncio.gather(*late, return_exceptions=True)
