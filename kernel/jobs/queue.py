"""JobQueue: register coroutine jobs, enqueue them (in a transaction), run them, report on them."""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import json
import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kernel.db.meta import now_utc
from kernel.jobs import store
from kernel.jobs.schedule import Schedule, make_schedule
from kernel.jobs.worker import JobRun, JobWorker

logger = logging.getLogger("kernel.jobs")

JobFn = Callable[..., Awaitable[Any]]


class JobNotBound(RuntimeError):
    """The queue was used before ``JobQueue.bind(kernel)``: it needs the kernel's database."""


@dataclass
class RegisteredJob:
    """One registration: what ``registered()`` lists and what a worker needs to run it."""

    name: str
    kind: str  # "task" | "periodic"
    fn: JobFn
    owner: str | None
    schedule: Schedule | None = None
    retries: int = 0
    retry_delay: float = 0.0
    retry_max_delay: float = 0.0
    timeout: float | None = None
    on_give_up: JobFn | None = None  # -- more43: ``async def (kernel, error, **args)`` after the last attempt failed

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "schedule": self.schedule.describe() if self.schedule else None,
            "owner": self.owner,
            "retries": self.retries,
            "retryDelay": self.retry_delay,
            "retryMaxDelay": self.retry_max_delay,
            "timeout": self.timeout,
        }


class JobQueue:
    """Background jobs in the kernel's database table ``svc_jobs``.

    Plugins register coroutine functions at boot (``register_jobs`` hook). ``enqueue`` writes
    a row, in the caller's unit of work when given one; workers (``start_consumer`` inside
    ``svc serve``, or ``svc worker``) claim due rows and run them on their event loop.
    """

    def __init__(self, settings: Any, name: str = "svc") -> None:
        self.name = name
        self.settings = settings
        self.kernel: Any = None
        self._jobs: dict[str, RegisteredJob] = {}
        self._worker: JobWorker | None = None
        self._serving: asyncio.Task[None] | None = None

    @property
    def backend(self) -> str:
        """The database dialect the queue lives in (``sqlite`` or ``postgresql``)."""
        return self.kernel.db.dialect if self.kernel is not None else "unbound"

    # -- registration -------------------------------------------------------------------------

    def task(self, name: str, fn: JobFn, *, retries: int = 3, retry_delay: float = 10,
             retry_max_delay: float = 3600, timeout: float | None = 300,
             owner: str | None = None, on_give_up: JobFn | None = None) -> Callable[[], None]:
        """Register ``async def fn(kernel, **args)`` as the queued job ``name``.

        A failed run is retried up to ``retries`` times, after an exponential backoff with
        jitter: ``retry_delay`` seconds doubled per failure, capped at ``retry_max_delay``
        (see ``kernel/base/backoff.py``). A run longer than ``timeout`` seconds is cancelled and counts as
        a failure. ``on_give_up(kernel, error, **args)`` (-- more43), if given, runs once when the
        last attempt failed (the job then ends ``failed``): the job's owner counts the outcome (an
        error in it is logged). Returns a function that unregisters the job. ValueError if the name is
        taken or a number is negative, TypeError if ``fn`` is not a coroutine function.
        """
        self._check_new(name, fn)
        if retries < 0 or retry_delay < 0 or retry_max_delay < 0 or (timeout is not None and timeout <= 0):
            raise ValueError(f"job {name!r}: retries and delays must be >= 0, timeout > 0")
        self._jobs[name] = RegisteredJob(name, "task", fn, owner, retries=retries, retry_delay=retry_delay,
                                         retry_max_delay=max(retry_max_delay, retry_delay), timeout=timeout,
                                         on_give_up=on_give_up)
        return lambda: self.unregister(name)

    def periodic(self, name: str, fn: JobFn, *, every_seconds: int | None = None, cron: str | None = None,
                 timeout: float | None = 300, owner: str | None = None) -> Callable[[], None]:
        """Register ``async def fn(kernel)`` to run every ``every_seconds`` or on a UTC ``cron``.

        Each tick is claimed in the database, so it runs once across every worker; missed
        ticks are not replayed. Not retried: the next tick is the retry. Returns an unregister
        function.
        """
        schedule = make_schedule(every_seconds, cron)
        self._check_new(name, fn)
        self._jobs[name] = RegisteredJob(name, "periodic", fn, owner, schedule=schedule, timeout=timeout)
        return lambda: self.unregister(name)

    def registered(self) -> list[dict[str, Any]]:
        """Every registered job (name, kind, schedule, owner, retries, delays, timeout), by name."""
        return [self._jobs[name].describe() for name in sorted(self._jobs)]

    def job(self, name: str) -> RegisteredJob | None:
        return self._jobs.get(name)

    def names(self) -> list[str]:
        return sorted(self._jobs)

    def periodic_jobs(self) -> list[RegisteredJob]:
        return [job for job in self._jobs.values() if job.kind == "periodic"]

    def _check_new(self, name: str, fn: Any) -> None:
        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise ValueError(f"job name must be a non-empty string of at most 200 characters, got {name!r}")
        if name in self._jobs:
            raise ValueError(f"job {name!r} is already registered")
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"job {name!r}: fn must be an async function fn(kernel, **args)")

    def unregister(self, name: str) -> None:
        """Forget job ``name`` (queued runs of it wait until it is registered again)."""
        self._jobs.pop(name, None)

    # -- enqueueing ---------------------------------------------------------------------------

    async def enqueue(self, name: str, /, *, uow: Any = None, dedupe_key: str | None = None,
                      replace: bool = False, run_at: dt.datetime | None = None, delay: float | None = None,
                      **args: Any) -> str | None:
        """Queue job ``name`` with keyword ``args`` (JSON values); returns the job's id, or None
        when a job with the same ``dedupe_key`` (same site and name) is still pending. With
        ``replace=True`` that pending job takes these arguments and due time instead (its id is
        returned): a publication time that moved.

        - ``uow``: write the job in that unit of work, so it exists only if the write commits.
          Without one, the job is committed at once.
        - ``run_at`` (an aware datetime) or ``delay`` (seconds): not before then. Due jobs are
          rows like any other, so they survive restarts.
        - The job's site is its ``site_id`` argument, when it has one: deleting the site
          deletes its queued jobs.

        KeyError for an unknown job, ValueError for bad options, TypeError for arguments that
        are not JSON.
        """
        if name not in self._jobs:
            raise KeyError(f"unknown job {name!r}")
        if self._jobs[name].kind != "task":
            raise ValueError(f"job {name!r} is periodic; it runs on its schedule")
        now = now_utc()
        due_at = self._due_at(name, now, run_at, delay)
        payload = self._json_args(name, args)
        site_id = payload.get("site_id")
        if site_id is not None and not isinstance(site_id, str):
            raise ValueError(f"job {name!r}: site_id must be a string")
        self._check_key(name, dedupe_key)
        if replace and dedupe_key is None:
            raise ValueError(f"job {name!r}: replace=True needs a dedupe_key")
        values = {"site_id": site_id, "name": name, "args": payload, "due_at": due_at, "dedupe_key": dedupe_key,
                  "now": now, "replace": bool(replace)}
        if uow is not None:
            if uow.conn is None:
                raise RuntimeError("enqueue(uow=...) needs a unit of work that has begun (async with)")
            job_id = await store.insert_job(uow.conn, **values)
            uow.after_commit(self.wake)
            return job_id
        db = self._db()
        async with db.begin() as conn:
            job_id = await store.insert_job(conn, **values)
        self.wake()
        return job_id

    async def cancel(self, name: str, /, *, dedupe_key: str, site_id: str | None = None, uow: Any = None) -> bool:
        """Remove the pending job ``name`` with ``dedupe_key`` in ``site_id`` (in ``uow`` when
        given, so it is removed only if that write commits); True if one was waiting. A job a
        worker has already claimed runs to its end."""
        self._check_key(name, dedupe_key)
        if uow is not None:
            if uow.conn is None:
                raise RuntimeError("cancel(uow=...) needs a unit of work that has begun (async with)")
            return await store.cancel_pending(uow.conn, site_id=site_id, name=name, dedupe_key=dedupe_key) > 0
        async with self._db().begin() as conn:
            return await store.cancel_pending(conn, site_id=site_id, name=name, dedupe_key=dedupe_key) > 0

    async def rewrite_waiting(self, name: str, /, *, site_id: str, rewrite: Any, uow: Any) -> int:
        """Rewrite the arguments of the pending and failed jobs ``name`` of ``site_id`` in ``uow``'s
        transaction: ``rewrite(args)`` returns new arguments, the same ones, or ``None`` to delete
        the job (store.rewrite_waiting). For an erasure that must take a value out of queued work.
        A job a worker already claimed runs to its end. Returns how many jobs changed."""
        if uow is None or uow.conn is None:
            raise RuntimeError("rewrite_waiting needs a unit of work that has begun")
        return await store.rewrite_waiting(uow.conn, site_id=site_id, name=name, rewrite=rewrite)

    @staticmethod
    def _check_key(name: str, dedupe_key: Any) -> None:
        if dedupe_key is not None and (not isinstance(dedupe_key, str) or not dedupe_key or len(dedupe_key) > 300):
            raise ValueError(f"job {name!r}: dedupe_key must be a non-empty string of at most 300 characters")

    async def enqueue_in(self, name: str, delay_seconds: float, /, **args: Any) -> str | None:
        """Queue job ``name`` to run ``delay_seconds`` from now (``enqueue(name, delay=...)``)."""
        return await self.enqueue(name, delay=delay_seconds, **args)

    def _due_at(self, name: str, now: dt.datetime, run_at: dt.datetime | None, delay: float | None) -> dt.datetime:
        if run_at is not None and delay is not None:
            raise ValueError(f"job {name!r}: give run_at or delay, not both")
        if run_at is not None:
            if not isinstance(run_at, dt.datetime) or run_at.tzinfo is None:
                raise ValueError(f"job {name!r}: run_at must be a timezone-aware datetime")
            return run_at.astimezone(dt.UTC)
        if delay is not None:
            if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
                raise ValueError(f"job {name!r}: delay must be a number of seconds >= 0")
            return now + dt.timedelta(seconds=delay)
        return now

    @staticmethod
    def _json_args(name: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            # A round trip: what the job receives is exactly what a worker will read back.
            return json.loads(json.dumps(args, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"job {name!r}: arguments must be JSON values ({exc})") from None

    # -- running ------------------------------------------------------------------------------

    def bind(self, kernel: Any, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Run jobs with ``kernel`` (its database holds the queue). ``loop`` is accepted for
        compatibility; jobs run on the loop the consumer starts on."""
        self.kernel = kernel

    def _db(self) -> Any:
        if self.kernel is None:
            raise JobNotBound("the job queue is not bound to a kernel yet; call jobs.bind(kernel)")
        return self.kernel.db

    def make_worker(self, *, concurrency: int | None = None, clock: Callable[[], dt.datetime] = now_utc) -> JobWorker:
        """A worker over this queue with the configured concurrency, poll and lease."""
        self._db()
        settings = self.settings
        return JobWorker(self, self.kernel,
                         concurrency=concurrency or int(_setting(settings, "jobs_concurrency", 10)),
                         poll_seconds=int(_setting(settings, "jobs_poll_ms", 1000)) / 1000,
                         lease_seconds=float(_setting(settings, "jobs_lease_seconds", 60)), clock=clock,
                         per_site=int(_setting(settings, "jobs_site_concurrency", 0)))

    def wake(self) -> None:
        """Tell this process's worker, if any, that a job was committed."""
        if self._worker is not None:
            self._worker.wake()

    @property
    def consumer_running(self) -> bool:
        return self._serving is not None

    def start_consumer(self, workers: int | None = None) -> None:
        """Start a worker on the running loop (an asyncio task). ``workers``: how many jobs it
        runs at once (default ``SVC_JOBS_CONCURRENCY``). ``bind`` first."""
        if self._serving is not None:
            raise RuntimeError("the job consumer is already running")
        worker = self.make_worker(concurrency=workers)
        self._worker = worker
        retention = int(_setting(self.settings, "jobs_failed_retention_days", 14))
        self._serving = asyncio.get_running_loop().create_task(worker.serve(retention), name="svc-jobs-worker")

    async def stop_consumer(self, grace: float = 1.0) -> None:
        """Stop the consumer: running jobs get ``grace`` seconds, then are cancelled and given
        back to the queue (they run again at the next start). No-op if none runs."""
        worker, serving = self._worker, self._serving
        self._worker = self._serving = None
        if worker is None or serving is None:
            return
        worker.request_stop()
        await serving  # a claim in progress finishes and starts its jobs first
        await worker.drain(grace)

    def run_worker(self, startup: Callable[[], Awaitable[Any]], shutdown: Callable[[Any], Awaitable[Any]],
                   workers: int | None = None, grace: float = 30.0) -> None:
        """Block running `svc worker` until SIGINT or SIGTERM (main thread only).

        ``await startup()`` returns the started kernel jobs run with; on a signal, running jobs
        get ``grace`` seconds to finish, the rest are given back to the queue, then
        ``await shutdown(kernel)``.
        """

        async def main() -> None:
            kernel = await startup()
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            try:
                self.bind(kernel)
                self.start_consumer(workers)
                logger.info("job worker %s started", self._worker.name if self._worker else "?")
                await stop.wait()
                await self.stop_consumer(grace)
            finally:
                await shutdown(kernel)

        asyncio.run(main())

    async def run_due(self, now: dt.datetime | None = None, *, periodic: bool = True,
                      max_rounds: int = 100) -> list[JobRun]:
        """Run every job due at ``now`` (default: the current time) to its end, in this task,
        then the jobs those enqueued that are due by then too; returns the runs in order.

        For tests and one-off maintenance: deterministic, no background worker involved.
        Retries land at ``now`` plus their backoff, so they run in a later call whose ``now``
        is past them. With ``periodic``, ticks due at ``now`` are enqueued first.
        """
        moment = now or now_utc()
        worker = self.make_worker(clock=lambda: moment)
        runs: list[JobRun] = []
        if periodic:
            await worker.tick_periodic(moment)
        for _ in range(max_rounds):
            rows = await store.claim(self._db(), worker.name, moment, worker.concurrency,
                                     worker.lease_seconds, self.names()) if self.names() else []
            if not rows:
                break
            runs.extend(await asyncio.gather(*(worker.run_claimed(row) for row in rows)))
        return runs

    # -- status -------------------------------------------------------------------------------

    async def status(self, *, site_id: str | None = None, failures: int = 10) -> dict[str, Any]:
        """What an operator sees (``svc jobs``, ``GET /admin/jobs``): every registered job with
        its pending, due, running and failed counts, totals, and the latest failures."""
        db = self._db()
        now = now_utc()
        counts = await store.counts(db, now, site_id)
        empty = {"pending": 0, "due": 0, "running": 0, "failed": 0}
        listed = []
        for job in self.registered():
            listed.append({**job, **counts.pop(job["name"], empty)})
        for name in sorted(counts):  # queued under a name nothing here registers
            listed.append({"name": name, "kind": None, "registered": False, **counts[name]})
        totals = {key: sum(row[key] for row in listed) for key in empty}
        return {"jobs": listed, "totals": totals, "recentFailures": await store.recent_failures(db, failures, site_id),
                "consumer": self._worker.name if self._worker is not None else None}

    async def check(self) -> str:
        """Health: ``ok (N pending)``; raises if the database does not answer."""
        status = await store.counts(self._db(), now_utc())
        return f"ok ({sum(row['pending'] for row in status.values())} pending)"

    def close(self) -> None:
        """Nothing to release: the queue lives in the kernel's database."""


def _setting(settings: Any, name: str, default: Any) -> Any:
    getter = getattr(settings, "get", None)
    return getter(name, default) if callable(getter) else getattr(settings, name, default)
