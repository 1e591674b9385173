"""JobQueue: register coroutine jobs as huey tasks, enqueue them, consume them."""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huey import RedisHuey, SqliteHuey
from huey.api import Task, TaskWrapper
from huey.exceptions import RetryTask
from huey.utils import normalize_time

from kernel.jobs.bridge import JobFn, LoopBridge
from kernel.jobs.consumer import (
    ThreadConsumer,
    run_blocking_worker,
    start_thread_consumer,
    stop_thread_consumer,
)
from kernel.jobs.schedule import RedisSlotClaims, Schedule, SqliteSlotClaims, make_schedule

logger = logging.getLogger("kernel.jobs")

# huey stores a task as "<function module>.<task name>" and finds its code by that string
# when it dequeues. A fixed prefix keeps queued work runnable when this module moves.
TASK_MODULE = "svc.jobs"
# huey's context=True passes the task instance as this keyword, so jobs cannot use it.
RESERVED_KWARG = "task"


@dataclass
class RegisteredJob:
    """One registration: what ``registered()`` lists and what ``enqueue`` needs."""

    name: str
    kind: str  # "task" | "periodic"
    owner: str | None
    wrapper: TaskWrapper
    schedule: Schedule | None = None
    retries: int = 0
    retry_delay: float = 0

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "schedule": self.schedule.describe() if self.schedule else None,
            "owner": self.owner,
            "retries": self.retries,
        }


class JobQueue:
    """Background jobs on huey: SQLite in the data dir by default, Redis when configured.

    Plugins register coroutine functions at boot (``register_jobs`` hook); the app binds the
    kernel and its event loop; huey's consumer threads then run each job on that loop.
    """

    def __init__(self, settings: Any, name: str = "svc") -> None:
        redis_url = getattr(settings, "redis_url", "") or ""
        if redis_url:
            # results=False: nobody reads job return values, and stored results never expire.
            self.huey = RedisHuey(name, url=redis_url, results=False)
            self.backend = "redis"
            self._claims: Any = RedisSlotClaims(self.huey.storage)
        else:
            data_path = Path(settings.data_path)
            data_path.mkdir(parents=True, exist_ok=True)
            self.huey = SqliteHuey(name, filename=str(data_path / "queue.sqlite3"), results=False)
            self.backend = "sqlite"
            self._claims = SqliteSlotClaims(self.huey.storage)
        self.name = name
        self._jobs: dict[str, RegisteredJob] = {}
        self._bridge = LoopBridge()
        self._consumer: ThreadConsumer | None = None
        self._last_slot: dict[str, int] = {}

    # -- registration ---------------------------------------------------------------------

    def task(
        self,
        name: str,
        fn: JobFn,
        *,
        retries: int = 3,
        retry_delay: float = 10,
        timeout: float | None = 300,
        owner: str | None = None,
    ) -> Callable[[], None]:
        """Register ``async def fn(kernel, **kwargs)`` as the queued job ``name``.

        A failure is retried ``retries`` times, ``retry_delay`` seconds apart; a run longer
        than ``timeout`` seconds is cancelled and counts as a failure. Returns a function that
        unregisters the job. ValueError if the name is taken, TypeError if ``fn`` is not a
        coroutine function.
        """
        self._check_new(name, fn)
        decorate = self.huey.task(retries=retries, retry_delay=retry_delay, context=True, name=name)
        wrapper = decorate(self._runner(name, fn, timeout))
        self._jobs[name] = RegisteredJob(
            name, "task", owner, wrapper, retries=retries, retry_delay=retry_delay
        )
        return lambda: self._unregister(name)

    def periodic(
        self,
        name: str,
        fn: JobFn,
        *,
        every_seconds: int | None = None,
        cron: str | None = None,
        timeout: float | None = 300,
        owner: str | None = None,
    ) -> Callable[[], None]:
        """Register ``async def fn(kernel)`` to run every ``every_seconds`` or on a UTC ``cron``.

        Resolution is one second for ``every_seconds`` and one minute for cron; a tick runs once
        across all consumers sharing the queue (see ``schedule.py``). Not retried: the next
        tick is the retry. Returns an unregister function.
        """
        schedule = make_schedule(every_seconds, cron)
        self._check_new(name, fn)

        def due(timestamp: dt.datetime) -> bool:
            return self._periodic_due(name, schedule, timestamp)

        decorate = self.huey.periodic_task(due, retries=0, context=True, name=name)
        wrapper = decorate(self._runner(name, fn, timeout))
        self._jobs[name] = RegisteredJob(name, "periodic", owner, wrapper, schedule=schedule)
        return lambda: self._unregister(name)

    def registered(self) -> list[dict[str, Any]]:
        """Every registered job as ``{name, kind, schedule, owner, retries}``, by name."""
        return [self._jobs[name].describe() for name in sorted(self._jobs)]

    def _check_new(self, name: str, fn: Any) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"job name must be a non-empty string, got {name!r}")
        if name in self._jobs:
            raise ValueError(f"job {name!r} is already registered")
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"job {name!r}: fn must be an async function fn(kernel, **kwargs)")

    def _unregister(self, name: str) -> None:
        job = self._jobs.pop(name, None)
        if job is not None:
            job.wrapper.unregister()
            self._last_slot.pop(name, None)

    def _runner(self, name: str, fn: JobFn, timeout: float | None) -> Callable[..., Any]:
        """The synchronous function huey calls in a worker thread for job ``name``."""
        bridge = self._bridge

        def run(task: Task | None = None, **kwargs: Any) -> None:
            try:
                bridge.run(name, fn, kwargs, timeout)
            except RetryTask:
                raise
            except Exception as exc:
                # One line naming the job; huey logs the trace itself ("Unhandled exception in
                # task <id>") on its "huey" logger, then retries or gives up.
                left = task.retries if task is not None else 0
                job_id = task.id if task is not None else "?"
                if left:
                    logger.warning("job %s (%s) failed, %d retries left: %r", name, job_id, left, exc)
                else:
                    logger.error("job %s (%s) failed, giving up: %r", name, job_id, exc)
                raise

        run.__name__ = run.__qualname__ = name
        run.__module__ = TASK_MODULE
        return run

    def _periodic_due(self, name: str, schedule: Schedule, timestamp: dt.datetime) -> bool:
        # huey hands us naive UTC datetimes (Huey(utc=True)).
        slot = schedule.slot(timestamp.replace(tzinfo=dt.UTC).timestamp())
        if slot is None or self._last_slot.get(name) == slot:
            return False
        try:
            claimed = self._claims.claim(name, slot, schedule.ttl)
        except Exception:
            # An exception here would kill huey's scheduler thread; try again next second.
            logger.exception("could not claim periodic job %s for slot %s", name, slot)
            return False
        self._last_slot[name] = slot
        return claimed

    # -- enqueueing -----------------------------------------------------------------------

    async def enqueue(self, name: str, **kwargs: Any) -> str:
        """Queue job ``name`` with ``kwargs`` (pickled); returns the task id. KeyError if unknown."""
        task = self._make_task(name, kwargs, eta=None)
        await asyncio.to_thread(self.huey.enqueue, task)
        return task.id

    async def enqueue_in(self, name: str, delay_seconds: float, **kwargs: Any) -> str:
        """Queue job ``name`` to run ``delay_seconds`` from now (one-second resolution)."""
        eta = normalize_time(delay=delay_seconds, utc=self.huey.utc)
        task = self._make_task(name, kwargs, eta=eta)
        await asyncio.to_thread(self.huey.enqueue, task)
        return task.id

    def _make_task(self, name: str, kwargs: dict[str, Any], eta: dt.datetime | None) -> Task:
        job = self._jobs.get(name)
        if job is None:
            raise KeyError(f"unknown job {name!r}")
        if RESERVED_KWARG in kwargs:
            raise ValueError(f"job {name!r}: the keyword {RESERVED_KWARG!r} is reserved")
        # Build the task directly: TaskWrapper.s() would swallow job kwargs named id, delay,
        # eta, retries, priority, expires or timeout as huey options.
        return job.wrapper.task_class((), dict(kwargs), eta=eta)

    # -- running --------------------------------------------------------------------------

    def bind(self, kernel: Any, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Run jobs with ``kernel`` on ``loop`` (default: the running loop)."""
        self._bridge.bind(kernel, loop or asyncio.get_running_loop())

    @property
    def consumer_running(self) -> bool:
        return self._consumer is not None

    def start_consumer(self, workers: int = 2) -> None:
        """Start ``workers`` worker threads and a scheduler thread in this process.

        Installs no signal handlers, so any thread may call it. ``bind`` first.
        """
        if not self._bridge.bound:
            raise RuntimeError("call jobs.bind(kernel, loop) before start_consumer()")
        if self._consumer is not None:
            raise RuntimeError("the job consumer is already running")
        self._bridge.reset()
        self._consumer = start_thread_consumer(self.huey, workers)

    async def stop_consumer(self, grace: float = 1.0) -> None:
        """Stop the in-process consumer; no-op if none runs.

        Awaitable so the loop stays free to finish running jobs for ``grace`` seconds; jobs
        still running then are cancelled and requeued. Returns within about grace + 1 s.
        """
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            await stop_thread_consumer(consumer, self._bridge, grace)

    def run_worker(self, kernel_factory: Callable[[], Awaitable[Any]], workers: int = 2) -> None:
        """Block running `svc worker`: call from the main thread; returns on SIGINT/SIGTERM.

        ``kernel_factory`` is an async callable returning a started kernel with an async
        ``shutdown()``; it runs on the worker's own event loop, which jobs then use.
        """
        run_blocking_worker(self.huey, self._bridge, self._bridge.bind, kernel_factory, workers)

    # -- health ---------------------------------------------------------------------------

    async def check(self) -> str:
        """Health: ``ok (N pending)``; raises if the queue's storage does not answer."""

        def probe() -> int:
            if self.backend == "redis":
                self.huey.storage.conn.ping()
            return int(self.huey.pending_count())

        return f"ok ({await asyncio.to_thread(probe)} pending)"

    def close(self) -> None:
        """Release storage connections (the consumer must be stopped)."""
        storage = self.huey.storage
        storage.close()
        pool = getattr(storage, "pool", None)
        if pool is not None:
            pool.disconnect()
