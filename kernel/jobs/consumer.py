"""Consumers: huey's own Worker and Scheduler loops, run in-process or as `svc worker`.

Both consumers reuse ``huey.consumer.Consumer`` (its Worker threads dequeue and execute, its
Scheduler moves due scheduled tasks to the queue) with two changes:

- the scheduler checks periodic jobs every second instead of every minute, so
  ``every_seconds`` is real (our schedules decide when a job is due, see ``schedule.py``);
- ``ThreadConsumer`` installs no signal handlers, so it can start from any thread inside an
  app that owns its own signals (uvicorn does).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from huey.consumer import Consumer, Scheduler

from kernel.jobs.bridge import LoopBridge

logger = logging.getLogger("kernel.jobs")

# Idle workers poll a non-blocking (SQLite) queue at most this far apart; the latency of a
# freshly enqueued job when the queue was idle. Redis workers block on BRPOP instead.
IDLE_POLL_SECONDS = 0.5


class SecondScheduler(Scheduler):
    """huey's scheduler, asking periodic tasks whether they are due once a second."""

    periodic_task_seconds = 1


class WorkerConsumer(Consumer):
    """The `svc worker` consumer: huey's, with a one-second periodic tick."""

    scheduler_class = SecondScheduler

    def __init__(self, huey: Any, **options: Any) -> None:
        super().__init__(huey, **options)
        # huey restarts itself with os.execl on SIGHUP, which would skip kernel shutdown;
        # stop gracefully instead and let the process supervisor restart us.
        if hasattr(signal, "SIGHUP"):
            self._signal_actions[signal.SIGHUP] = (False, True)


class ThreadConsumer(WorkerConsumer):
    """A consumer started inside a running app: threads only, no signal handlers."""

    def _set_signal_handlers(self) -> None:
        # signal.signal() only works in the main thread, and the app server owns the signals.
        pass

    def threads(self) -> list[threading.Thread]:
        return [proc for _, proc in self.worker_threads] + [self.scheduler]


def start_thread_consumer(huey: Any, workers: int) -> ThreadConsumer:
    """Start worker and scheduler threads in this process and return their consumer."""
    consumer = ThreadConsumer(
        huey, workers=workers, periodic=True, max_delay=IDLE_POLL_SECONDS, check_worker_health=False
    )
    consumer.start()
    return consumer


def join_threads(threads: list[threading.Thread], timeout: float) -> bool:
    """Join all threads within ``timeout`` seconds in total; True if they all ended."""
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(deadline - time.monotonic(), 0))
    return not any(thread.is_alive() for thread in threads)


async def stop_thread_consumer(consumer: ThreadConsumer, bridge: LoopBridge, grace: float) -> None:
    """Stop a ThreadConsumer without blocking the loop its running jobs need.

    Workers finish the job in hand for up to ``grace`` seconds; jobs still running then are
    cancelled and requeued (delivery is at least once).
    """
    consumer.stop_flag.set()
    threads = consumer.threads()
    if await asyncio.to_thread(join_threads, threads, grace):
        return
    cancelled = bridge.interrupt()
    if cancelled:
        logger.warning("stopped %d running job(s) at shutdown; they are requeued", cancelled)
    # A Redis worker may still sit in BRPOP for up to its read timeout (1 s).
    if not await asyncio.to_thread(join_threads, threads, 2.0):
        logger.warning("job consumer threads did not stop in time; leaving them (daemon threads)")


def run_blocking_worker(
    huey: Any,
    bridge: LoopBridge,
    bind: Callable[[Any, Any], None],
    kernel_factory: Callable[[], Awaitable[Any]],
    workers: int,
) -> None:
    """The body of `svc worker`: a private loop thread, a kernel on it, huey's consumer here.

    Must run in the main thread (huey installs SIGINT/SIGTERM/SIGHUP handlers). SIGINT stops
    gracefully (running jobs finish, up to 30 s), SIGTERM at once (running jobs requeued).
    """
    loop = asyncio.new_event_loop()
    loop_thread = threading.Thread(target=loop.run_forever, name="svc-jobs-loop", daemon=True)
    loop_thread.start()
    kernel: Any = None
    try:
        kernel = _on_loop(loop, kernel_factory(), None)
        bind(kernel, loop)
        bridge.reset()
        consumer = WorkerConsumer(huey, workers=workers, periodic=True, max_delay=1.0, shutdown_timeout=30)
        consumer.run()
        # Workers left running after a non-graceful stop would otherwise hold their jobs.
        bridge.interrupt()
        join_threads([proc for _, proc in consumer.worker_threads], 2.0)
    finally:
        if kernel is not None:
            try:
                _on_loop(loop, kernel.shutdown(), 30)
            except Exception:
                logger.exception("kernel shutdown failed in the job worker")
        _close_loop(loop, loop_thread)


def _on_loop(loop: asyncio.AbstractEventLoop, coro: Awaitable[Any], timeout: float | None) -> Any:
    async def call() -> Any:
        return await coro

    return asyncio.run_coroutine_threadsafe(call(), loop).result(timeout)


def _close_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    async def cancel_rest() -> None:
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in rest:
            task.cancel()
        await asyncio.gather(*rest, return_exceptions=True)
        await loop.shutdown_asyncgens()
        await loop.shutdown_default_executor()

    try:
        _on_loop(loop, cancel_rest(), 10)
    except Exception:
        logger.exception("could not tidy the job worker's event loop")
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    if not thread.is_alive():
        loop.close()
