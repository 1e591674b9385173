"""Registration, listing, schedules and the health check: backend-independent rules."""

from __future__ import annotations

import pytest

from kernel.jobs.schedule import CronSchedule, EverySeconds


async def test_unknown_job_is_a_key_error(sqlite_queue):
    with pytest.raises(KeyError):
        await sqlite_queue.enqueue("nope")
    with pytest.raises(KeyError):
        await sqlite_queue.enqueue_in("nope", 5)


async def test_registration_errors(sqlite_queue):
    async def job(kernel):
        pass

    def not_async(kernel):
        pass

    sqlite_queue.task("demo.one", job)
    with pytest.raises(ValueError):
        sqlite_queue.task("demo.one", job)
    with pytest.raises(ValueError):
        sqlite_queue.periodic("demo.one", job, every_seconds=5)
    with pytest.raises(TypeError):
        sqlite_queue.task("demo.sync", not_async)
    for bad in (
        {},
        {"every_seconds": 5, "cron": "* * * * *"},
        {"every_seconds": 0},
        {"cron": "61 * * * *"},
        {"cron": "0 * * * * *"},
    ):
        with pytest.raises(ValueError):
            sqlite_queue.periodic("demo.bad", job, **bad)
    with pytest.raises(ValueError):
        await sqlite_queue.enqueue("demo.one", task=1)  # huey's context keyword
    with pytest.raises(RuntimeError):
        sqlite_queue.start_consumer()  # not bound


async def test_registered_lists_jobs_with_owner_and_schedule(sqlite_queue):
    async def job(kernel):
        pass

    unregister = sqlite_queue.task("items.reindex", job, retries=5, owner="items")
    sqlite_queue.periodic("privacy.retention", job, cron="0  3 * * *", owner="privacy")
    sqlite_queue.periodic("utils.tick", job, every_seconds=30)
    assert sqlite_queue.registered() == [
        {"name": "items.reindex", "kind": "task", "schedule": None, "owner": "items", "retries": 5},
        {
            "name": "privacy.retention",
            "kind": "periodic",
            "schedule": "cron 0 3 * * *",
            "owner": "privacy",
            "retries": 0,
        },
        {"name": "utils.tick", "kind": "periodic", "schedule": "every 30s", "owner": None, "retries": 0},
    ]
    unregister()
    assert [j["name"] for j in sqlite_queue.registered()] == ["privacy.retention", "utils.tick"]
    sqlite_queue.task("items.reindex", job)  # the name is free again


def test_schedules_map_time_to_slots():
    every = EverySeconds(60)
    assert every.slot(119.9) == 1 and every.slot(120) == 2
    cron = CronSchedule("*/5 * * * *")
    assert cron.slot(300) == 5 and cron.slot(359) == 5  # 00:05 UTC, the whole minute
    assert cron.slot(360) is None  # 00:06 UTC


async def test_check_reports_pending(sqlite_queue):
    async def job(kernel):
        pass

    sqlite_queue.task("demo.job", job)
    assert await sqlite_queue.check() == "ok (0 pending)"
    await sqlite_queue.enqueue("demo.job")
    assert await sqlite_queue.check() == "ok (1 pending)"
