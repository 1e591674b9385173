"""Run job coroutines on the app's event loop from huey's consumer threads.

huey executes a task synchronously in a worker thread, but job functions are coroutines that
must run on the loop that owns the app's database engine and clients. The bridge hands each
coroutine to that loop with ``run_coroutine_threadsafe`` and blocks the worker thread (never
the loop) until it finishes, times out, or the consumer is stopped.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from huey.exceptions import RetryTask

JobFn = Callable[..., Awaitable[Any]]


class JobNotBound(RuntimeError):
    """A job ran before ``JobQueue.bind(kernel, loop)``, or after its loop closed."""


class JobTimeout(TimeoutError):
    """A job ran longer than its ``timeout``; it is cancelled and counts as a failure."""


class LoopBridge:
    """The kernel and loop jobs run with, and the jobs currently running on that loop."""

    def __init__(self) -> None:
        self.kernel: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._in_flight: set[concurrent.futures.Future[Any]] = set()
        self._stopping = False

    def bind(self, kernel: Any, loop: asyncio.AbstractEventLoop) -> None:
        """Jobs from now on get ``kernel`` and run on ``loop``."""
        self.kernel = kernel
        self.loop = loop

    @property
    def bound(self) -> bool:
        return self.loop is not None and not self.loop.is_closed()

    def reset(self) -> None:
        """Forget an earlier stop, before a consumer starts again."""
        with self._lock:
            self._stopping = False

    def interrupt(self) -> int:
        """Cancel every running job; their workers requeue them. Returns how many."""
        with self._lock:
            self._stopping = True
            futures = list(self._in_flight)
        for future in futures:
            future.cancel()
        return len(futures)

    def run(self, name: str, fn: JobFn, kwargs: dict[str, Any], timeout: float | None) -> Any:
        """Run ``fn(kernel, **kwargs)`` on the bound loop; called from a worker thread."""
        loop, kernel = self.loop, self.kernel
        if loop is None or loop.is_closed():
            raise JobNotBound(f"job {name!r} ran with no event loop bound; call jobs.bind(kernel, loop)")
        coro = fn(kernel, **kwargs)
        try:
            future = asyncio.run_coroutine_threadsafe(coro, loop)
        except RuntimeError:
            coro.close()  # never scheduled: close it so Python does not warn "never awaited"
            raise JobNotBound(f"job {name!r}: the bound event loop is closed") from None
        with self._lock:
            self._in_flight.add(future)
            stopping = self._stopping
        if stopping:
            future.cancel()
        try:
            return future.result(timeout)
        except concurrent.futures.CancelledError:
            # Cancelled by stop_consumer (or by the loop shutting down): the job did not fail,
            # so requeue it without spending a retry (huey adds one back for RetryTask).
            if self._stopping or not loop.is_running():
                raise RetryTask(f"job {name!r} interrupted by shutdown", delay=0) from None
            raise
        except TimeoutError:
            if future.done():
                raise  # the job's own TimeoutError, not our deadline
            future.cancel()
            raise JobTimeout(f"job {name!r} exceeded its {timeout}s timeout") from None
        finally:
            with self._lock:
                self._in_flight.discard(future)
