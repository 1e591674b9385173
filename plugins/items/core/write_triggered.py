"""Maintenance that runs in the background of one process, at startup and every N item writes.

SQLite's ``ANALYZE`` (planner_stats.py) and the folding of PostgreSQL's count deltas
(counts.py) both want to run once when the process starts and again after enough item writes
have been committed here; neither may slow a request or fail one. ``WriteTriggered`` counts
this process's committed ``items.create|update|delete`` actions (not those relayed from other
processes) and starts ``job`` as an asyncio task when they reach ``threshold``, unless the
previous run is still going. ``job`` may return the next threshold (``None`` keeps it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

log = logging.getLogger("svc.items")
T = TypeVar("T")


class WriteTriggered:
    def __init__(self, kernel: Any, job: Callable[[Any], Awaitable[int | None]], threshold: int,
                 failure: str) -> None:
        self.kernel, self.job, self.threshold, self.failure = kernel, job, threshold, failure
        self.writes = 0
        self.task: asyncio.Task[None] | None = None

    def count(self, event: str, payload: Any, ctx: Any) -> None:
        """The action handler of ``items.create|update|delete``: one committed item write."""
        if ctx.remote:
            return
        self.writes += 1
        if self.writes >= self.threshold:
            self.schedule()

    def schedule(self, job: Callable[[Any], Awaitable[int | None]] | None = None) -> None:
        """Start the job (or ``job``, in its place this once) unless it is running."""
        if self.task is None or self.task.done():
            self.writes = 0
            self.task = asyncio.get_running_loop().create_task(self._run(job or self.job))

    async def _run(self, job: Callable[[Any], Awaitable[int | None]]) -> None:
        try:
            threshold = await job(self.kernel)
            if threshold is not None:
                self.threshold = threshold
        except Exception:  # noqa: BLE001 - maintenance costs speed when it fails, never correctness
            log.exception(self.failure)

    async def stop(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


def install(bus: Any, kernel: Any, key: str, runner: WriteTriggered) -> None:
    """Keep ``runner`` in ``kernel.state[key]`` and count the item writes for it."""
    kernel.state[key] = runner
    for op in ("create", "update", "delete"):
        bus.on_action(f"items.{op}", runner.count)


def start(kernel: Any, key: str, job: Callable[[Any], Awaitable[int | None]] | None = None) -> None:
    """Run once at startup, in the background (when installed), in the startup turn
    (``in_startup_turn``); ``job`` in place of the runner's own for this run, if given."""
    runner: WriteTriggered | None = kernel.state.get(key)
    if runner is not None:
        first = job or runner.job
        runner.schedule(lambda k: in_startup_turn(k, first))


STARTUP_TURN = "items.startup_turn"


async def in_startup_turn(kernel: Any, job: Callable[[Any], Awaitable[T]]) -> T:
    """``job(kernel)``, once the items plugin's other startup upkeep (search backfill, statistics,
    counts, indexes) is done: started together, each took a pooled connection at once, so every
    process start opened five (on PostgreSQL five backends, each paying its start and its catalog
    reads); in turn they share one."""
    turn: asyncio.Lock | None = kernel.state.get(STARTUP_TURN)
    if turn is None:
        turn = kernel.state[STARTUP_TURN] = asyncio.Lock()
    async with turn:
        return await job(kernel)


async def stop(kernel: Any, key: str) -> None:
    runner: WriteTriggered | None = kernel.state.get(key)
    if runner is not None:
        await runner.stop()
