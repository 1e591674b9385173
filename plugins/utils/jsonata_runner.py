"""Evaluate a JSONata expression so that a hostile one cannot hang or starve a worker.

The library's own bounds (``timeout``, ``stack``) are checked only between evaluation steps, so
one builtin call runs unbounded: measured on this machine with a 1 s bound, ``$sum([1..10000000])``
returned after 14 s, a catastrophic regex in ``$match`` ran past 60 s, and ``$pad("x", 300000000)``
allocated 870 MB. A thread cannot be stopped, so each evaluation runs in a child interpreter
(``jsonata_child.py``), limited in memory and CPU, and killed at the deadline.

A plain ``python -I`` subprocess (about 50 ms to start and import jsonata), not a
``multiprocessing`` forkserver (about 8 ms): forkserver children re-import the server's
``__main__`` (an unguarded launch script would run again in every child), its preload list is
process-global, and its children inherit the worker's environment with its secrets. This child
gets an empty environment and talks JSON over pipes, awaited without blocking a thread.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from kernel.base.errors import ApiError

MAX_EXPRESSION_CHARS = 10_000
GRACE_SECONDS = 0.5  # result transfer, on top of the evaluation time
# The child's start (interpreter, jsonata's import: ~50 ms on a quiet machine, seconds on a loaded
# one) is bounded apart: the evaluation's deadline starts when the child says it is ready.
START_SECONDS = 30
MAX_CONCURRENT = max(1, min(4, os.cpu_count() or 1))
CHILD_SCRIPT = Path(__file__).resolve().parent / "jsonata_child.py"


async def run_in_child(expression: str, data: Any, timeout_ms: int, max_result_chars: int) -> list[Any]:
    """Evaluate in a fresh child process, killed ``timeout_ms`` plus a grace period after it is
    ready (or when it is not ready within ``START_SECONDS``).

    Returns the child's outcome: ``["ok", result]`` or ``[kind, code, message, position]``.
    """
    job = json.dumps({"expression": expression, "data": data}).encode()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-X", "utf8", str(CHILD_SCRIPT), str(timeout_ms), str(max_result_chars),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env={},  # nothing of the worker's configuration (database URL, secrets) reaches the child
    )
    assert process.stdout is not None
    try:
        async with asyncio.timeout(START_SECONDS):
            ready = await process.stdout.readline()
        if ready == b"\n":
            async with asyncio.timeout(timeout_ms / 1000 + GRACE_SECONDS):
                out, _ = await process.communicate(job)
        else:  # died while starting (its limits, a broken interpreter): no outcome
            out = b""
            await process.wait()
    except TimeoutError:
        return ["timeout", None, None, None]
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    if process.returncode != 0 or not out:
        # Killed by its CPU or memory limit, or crashed, before it could answer.
        killed = (process.returncode or 0) < 0
        return ["limit" if killed else "evaluation", None,
                "the evaluation was stopped by a resource limit" if killed else "the evaluation failed", None]
    return json.loads(out)


class JsonataRunner:
    """One per app: evaluates expressions with the app's time limit and concurrency bound."""

    def __init__(self, timeout_ms: int, max_result_chars: int, max_concurrent: int = MAX_CONCURRENT) -> None:
        self.timeout_ms = timeout_ms
        self.max_result_chars = max_result_chars
        self._slots = asyncio.Semaphore(max_concurrent)

    async def evaluate(self, expression: str, data: Any) -> Any:
        """The result as JSON values, or ``ApiError`` 400 (syntax, runtime error, time or memory
        limit) or 503 (every evaluation slot busy for longer than the time limit)."""
        if len(expression) > MAX_EXPRESSION_CHARS:
            raise ApiError.validation(f"'expression' is longer than {MAX_EXPRESSION_CHARS} characters",
                                      path=["expression"])
        try:
            # asyncio.timeout, not wait_for: a cancelled acquire never keeps the slot it lost.
            async with asyncio.timeout(self.timeout_ms / 1000):
                await self._slots.acquire()
        except TimeoutError as exc:
            raise ApiError(503, "SERVICE_UNAVAILABLE", "Too many JSONata evaluations are running; retry shortly",
                           headers={"Retry-After": "1"}) from exc
        try:
            outcome = await run_in_child(expression, data, self.timeout_ms, self.max_result_chars)
        finally:
            self._slots.release()
        return self._answer(outcome)

    def _answer(self, outcome: list[Any]) -> Any:
        kind = outcome[0]
        if kind == "ok":
            return outcome[1]
        _, code, message, position = outcome
        if kind == "timeout":
            message = f"The expression did not finish within {self.timeout_ms} ms"
        elif kind == "syntax":
            message = f"Syntax error: {message}"
        extensions: dict[str, Any] = {"reason": kind}
        if code:
            extensions["jsonataCode"] = code
        if position is not None:
            extensions["position"] = position
        if kind == "timeout":
            extensions["timeoutMs"] = self.timeout_ms
        raise ApiError.validation(message, path=["expression"], **extensions)
