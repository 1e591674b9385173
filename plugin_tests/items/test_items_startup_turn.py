"""The items plugin's startup upkeep takes turns (write_triggered.in_startup_turn): started
together, its tasks each held a pooled connection at once."""

from __future__ import annotations

import asyncio
import types

from plugins.items.core import write_triggered


async def test_startup_jobs_run_one_after_the_other_and_return_their_results():
    kernel = types.SimpleNamespace(state={})
    seen: list[str] = []

    def job(name: str):
        async def run(k):
            assert k is kernel
            seen.append(f"{name} in")
            await asyncio.sleep(0.01)  # a query's wait: the other job would enter here
            seen.append(f"{name} out")
            return name

        return run

    results = await asyncio.gather(
        *(write_triggered.in_startup_turn(kernel, job(n)) for n in ("a", "b", "c"))
    )
    assert results == ["a", "b", "c"]
    assert seen == ["a in", "a out", "b in", "b out", "c in", "c out"]
