"""Registration, options, schedules and backoff: rules that need no database."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel.base.backoff import backoff_delay
from kernel.jobs import JobNotBound, JobQueue
from kernel.jobs.schedule import CronSchedule, EverySeconds


@pytest.fixture
def queue() -> JobQueue:
    return JobQueue(SimpleNamespace(), name="svctest")


async def job(kernel, **args):
    pass


async def test_unknown_job_is_a_key_error(queue):
    with pytest.raises(KeyError):
        await queue.enqueue("nope")
    with pytest.raises(KeyError):
        await queue.enqueue_in("nope", 5)


async def test_registration_errors(queue):
    def not_async(kernel):
        pass

    queue.task("demo.one", job)
    with pytest.raises(ValueError):
        queue.task("demo.one", job)
    with pytest.raises(ValueError):
        queue.periodic("demo.one", job, every_seconds=5)
    with pytest.raises(TypeError):
        queue.task("demo.sync", not_async)
    with pytest.raises(ValueError):
        queue.task("demo.neg", job, retries=-1)
    with pytest.raises(ValueError):
        queue.task("x" * 201, job)
    for bad in ({}, {"every_seconds": 5, "cron": "* * * * *"}, {"every_seconds": 0}, {"cron": "61 * * * *"},
                {"cron": "0 * * * * *"}):
        with pytest.raises(ValueError):
            queue.periodic("demo.bad", job, **bad)


async def test_enqueue_options_are_checked_before_anything_is_written(queue):
    queue.task("demo.one", job)
    queue.periodic("demo.tick", job, every_seconds=5)
    naive = dt.datetime(2030, 1, 1)
    for options in ({"run_at": naive}, {"run_at": "2030-01-01"}, {"delay": -1}, {"delay": "5"},
                    {"run_at": dt.datetime.now(dt.UTC), "delay": 1}, {"dedupe_key": ""}, {"dedupe_key": 5},
                    {"site_id": 3}):
        with pytest.raises(ValueError):
            await queue.enqueue("demo.one", **options)
    with pytest.raises(TypeError):
        await queue.enqueue("demo.one", when=dt.datetime.now(dt.UTC))  # not JSON
    with pytest.raises(TypeError):
        await queue.enqueue("demo.one", ratio=float("nan"))
    with pytest.raises(ValueError):
        await queue.enqueue("demo.tick")  # periodic jobs run on their schedule
    with pytest.raises(JobNotBound):
        await queue.enqueue("demo.one", n=1)  # valid, but no database yet


def test_registered_lists_jobs_with_owner_schedule_and_retry_policy(queue):
    unregister = queue.task("items.reindex", job, retries=5, retry_delay=2, retry_max_delay=60, owner="items")
    queue.periodic("privacy.retention", job, cron="0  3 * * *", owner="privacy")
    queue.periodic("utils.tick", job, every_seconds=30)
    assert queue.registered() == [
        {"name": "items.reindex", "kind": "task", "schedule": None, "owner": "items", "retries": 5,
         "retryDelay": 2, "retryMaxDelay": 60, "timeout": 300},
        {"name": "privacy.retention", "kind": "periodic", "schedule": "cron 0 3 * * *", "owner": "privacy",
         "retries": 0, "retryDelay": 0.0, "retryMaxDelay": 0.0, "timeout": 300},
        {"name": "utils.tick", "kind": "periodic", "schedule": "every 30s", "owner": None, "retries": 0,
         "retryDelay": 0.0, "retryMaxDelay": 0.0, "timeout": 300},
    ]
    unregister()
    assert queue.names() == ["privacy.retention", "utils.tick"]
    queue.task("items.reindex", job)  # the name is free again


def test_schedules_map_time_to_slots():
    every = EverySeconds(60)
    assert every.slot(119.9) == 1 and every.slot(120) == 2
    cron = CronSchedule("*/5 * * * *")
    assert cron.slot(300) == 5 and cron.slot(359) == 5  # 00:05 UTC, the whole minute
    assert cron.slot(360) is None  # 00:06 UTC


def test_backoff_doubles_up_to_the_cap_with_jitter_in_the_upper_half():
    low, high = (lambda: 0.0), (lambda: 1.0)
    assert [backoff_delay(n, 10, 60, low) for n in (1, 2, 3, 4, 5)] == [5, 10, 20, 30, 30]
    assert [backoff_delay(n, 10, 60, high) for n in (1, 2, 3, 4, 5)] == [10, 20, 40, 60, 60]
    assert backoff_delay(10_000, 1, 3600, high) == 3600  # no overflow on long failure runs
    assert backoff_delay(3, 0, 60) == 0.0
    with pytest.raises(ValueError):
        backoff_delay(0, 10, 60)
    # Jitter: failures at the same moment do not come back at the same moment.
    assert len({round(backoff_delay(3, 10, 600), 6) for _ in range(20)}) > 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(failures=st.integers(1, 200), base=st.floats(0.001, 1e4), cap=st.floats(0.001, 1e6),
       r=st.floats(0, 1, exclude_max=True))
def test_backoff_stays_within_half_step_and_step(failures, base, cap, r):
    step = min(cap, base * 2 ** min(failures - 1, 64))
    delay = backoff_delay(failures, base, cap, lambda: r)
    assert step / 2 <= delay <= step + 1e-9
