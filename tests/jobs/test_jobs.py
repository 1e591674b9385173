"""One contract, both queue backends: SQLite in the data dir and Redis.

The Redis variant runs against the ``redis_url`` fixture of ``kernel.testing`` (``SVC_TEST_REDIS_URL``, default ``redis://127.0.0.1:6379/15``)
and is skipped only when that server does not answer. Every test uses its own huey name, so
its queue, schedule and periodic claims never meet another test's, and removes its keys
(fixtures in ``conftest.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time

import pytest


async def until(predicate, timeout: float = 5.0, what: str = "condition") -> None:
    """Poll ``predicate`` until true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


async def test_enqueued_job_runs_on_the_bound_loop_with_the_bound_kernel(make_queue):
    queue = make_queue()
    runs = []

    async def record(kernel, **kwargs):
        runs.append((kernel, kwargs, asyncio.get_running_loop()))

    queue.task("demo.record", record)
    kernel = object()
    queue.bind(kernel)
    queue.start_consumer(workers=1)
    # "id" and "timeout" are huey option names: they must still reach the job as kwargs.
    task_id = await queue.enqueue("demo.record", site_id="s1", id=7, timeout=2, items=[1, 2])

    await until(lambda: runs, what="the job")
    assert isinstance(task_id, str) and task_id
    assert runs == [
        (kernel, {"site_id": "s1", "id": 7, "timeout": 2, "items": [1, 2]}, asyncio.get_running_loop())
    ]


async def test_enqueue_in_waits_for_the_delay(make_queue):
    queue = make_queue()
    ran_at = []

    async def stamp(kernel):
        ran_at.append(time.monotonic())

    queue.task("demo.later", stamp)
    queue.bind(object())
    queue.start_consumer(workers=1)
    start = time.monotonic()
    await queue.enqueue_in("demo.later", 1)

    await until(lambda: ran_at, timeout=5, what="the delayed job")
    assert ran_at[0] - start >= 0.9


async def test_failing_job_is_retried_then_given_up_and_the_consumer_survives(make_queue, caplog):
    caplog.set_level(logging.WARNING, logger="kernel.jobs")
    caplog.set_level(logging.WARNING, logger="huey")
    queue = make_queue()
    attempts = []
    done = []

    async def explode(kernel, n):
        attempts.append(n)
        raise RuntimeError("boom")

    async def fine(kernel):
        done.append(True)

    queue.task("demo.explode", explode, retries=2, retry_delay=0)
    queue.task("demo.fine", fine)
    queue.bind(object())
    queue.start_consumer(workers=1)
    await queue.enqueue("demo.explode", n=1)

    await until(lambda: "giving up" in caplog.text, what="the final failure")
    await queue.enqueue("demo.fine")
    await until(lambda: done, what="a job after the failure")
    assert attempts == [1, 1, 1]  # the first run and two retries
    failures = [r for r in caplog.records if r.name == "kernel.jobs" and "demo.explode" in r.getMessage()]
    assert [r.levelname for r in failures] == ["WARNING", "WARNING", "ERROR"]
    traces = [r for r in caplog.records if r.name == "huey" and r.exc_info]
    assert len(traces) == 3 and all("boom" in str(r.exc_info[1]) for r in traces)


async def test_periodic_every_second_runs_repeatedly(make_queue):
    queue = make_queue()
    ticks = []

    async def tick(kernel):
        ticks.append((kernel, time.monotonic()))

    queue.periodic("demo.tick", tick, every_seconds=1)
    kernel = object()
    queue.bind(kernel)
    queue.start_consumer(workers=1)

    await until(lambda: len(ticks) >= 2, timeout=5, what="two periodic ticks")
    assert all(k is kernel for k, _ in ticks)
    assert ticks[1][1] - ticks[0][1] >= 0.5  # one per second, not one per scheduler poll


async def test_periodic_tick_is_claimed_once_across_queues(make_queue):
    first, second = make_queue(), make_queue()
    assert first._claims.claim("demo.tick", 100, 60) is True
    assert second._claims.claim("demo.tick", 100, 60) is False
    assert second._claims.claim("demo.tick", 101, 60) is True
    assert first._claims.claim("demo.tick", 101, 60) is False


async def test_enqueued_work_survives_a_new_queue_on_the_same_storage(make_queue):
    async def noop(kernel, n):
        pass

    before = make_queue()
    before.task("demo.persist", noop)
    await before.enqueue("demo.persist", n=1)
    await before.enqueue("demo.persist", n=2)
    before.close()

    seen = []

    async def record(kernel, n):
        seen.append(n)

    after = make_queue()
    after.task("demo.persist", record)
    assert await after.check() == "ok (2 pending)"
    after.bind(object())
    after.start_consumer(workers=1)
    await until(lambda: len(seen) == 2, what="both persisted jobs")
    assert sorted(seen) == [1, 2]


async def test_stop_is_prompt_and_requeues_the_running_job(make_queue):
    queue = make_queue()
    started, finished = [], []

    async def slow(kernel, n):
        started.append(n)
        if len(started) == 1:
            await asyncio.Event().wait()  # the first run never ends on its own
        finished.append(n)

    queue.task("demo.slow", slow)
    queue.bind(object())
    queue.start_consumer(workers=2)
    await queue.enqueue("demo.slow", n=5)
    await until(lambda: started, what="the job to start")

    # The running job never ends on its own: stop returns only because it does not wait for it
    # past the grace (the 60 s guard only turns a regression into a failure instead of a hang).
    await asyncio.wait_for(queue.stop_consumer(grace=0.2), timeout=60)
    assert not queue.consumer_running and finished == []

    queue.start_consumer(workers=1)
    await until(lambda: finished, what="the requeued job")
    assert finished == [5] and started == [5, 5]
