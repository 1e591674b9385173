"""The job queue in the kernel's database, on SQLite and (with SVC_TEST_DATABASE_URL) PostgreSQL.

Apps in tests run no background worker: each test enqueues, then runs what is due with
``run_due_jobs(kernel, now=...)`` at the moments it picks, so nothing here waits on a clock.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from sqlalchemy import select

from kernel.db.meta import now_utc
from kernel.jobs import store
from kernel.jobs.tables import jobs as jobs_table


async def rows(kernel, **where):
    query = select(jobs_table)
    for key, value in where.items():
        query = query.where(jobs_table.c[key] == value)
    async with kernel.db.connect() as conn:
        return [dict(r._mapping) for r in await conn.execute(query)]


def aware(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


async def bare_app(make_app, **settings):
    """An app without plugins that runs only the jobs its test registers: the kernel's own
    periodic jobs (the event log's hourly prune) would otherwise run in every ``run_due_jobs``."""
    app = await make_app(plugins=[], **settings)
    for job in app.kernel.jobs.periodic_jobs():
        app.kernel.jobs.unregister(job.name)
    return app


@pytest.fixture
async def app(make_app):
    return await bare_app(make_app)


async def test_a_job_runs_with_the_kernel_and_its_json_arguments(app, run_due_jobs):
    seen = []

    async def record(kernel, **args):
        seen.append((kernel, args))

    app.kernel.jobs.task("demo.record", record)
    # "id", "timeout", "task" and "name" are ordinary argument names.
    job_id = await app.kernel.jobs.enqueue("demo.record", site_id="default", id=7, timeout=2, task="t",
                                           name="n", items=[1, {"a": None}])
    assert isinstance(job_id, str) and (await rows(app.kernel))[0]["site_id"] == "default"

    runs = await run_due_jobs(app.kernel)
    assert [(r.id, r.ok) for r in runs] == [(job_id, True)]
    assert seen == [(app.kernel, {"site_id": "default", "id": 7, "timeout": 2, "task": "t", "name": "n",
                                  "items": [1, {"a": None}]})]
    assert await rows(app.kernel) == []  # a finished job leaves no row
    assert await run_due_jobs(app.kernel) == []


async def test_a_job_enqueued_by_a_write_that_rolls_back_never_runs(app, run_due_jobs):
    seen = []

    async def record(kernel, n):
        seen.append(n)

    app.kernel.jobs.task("demo.record", record)
    with pytest.raises(RuntimeError):
        async with app.kernel.unit_of_work("default") as uow:
            assert await uow.enqueue("demo.record", n=1)
            raise RuntimeError("the write fails after the enqueue")
    async with app.kernel.unit_of_work("default") as uow:
        await uow.enqueue("demo.record", n=2)
    assert await run_due_jobs(app.kernel) and seen == [2]


async def test_a_committed_job_runs_after_its_process_is_gone(make_app, tmp_path, run_due_jobs):
    """The job is a row committed with the write: nothing in the writer's memory is needed,
    so a process that dies right after the commit loses nothing. The first app commits and
    is dropped without running anything; a second app on the same database runs the job."""
    shared = tmp_path / "shared"
    seen = []

    async def record(kernel, n):
        seen.append(n)

    first = await bare_app(make_app, data_dir=shared)
    first.kernel.jobs.task("demo.record", record)
    async with first.kernel.unit_of_work("default") as uow:
        await uow.enqueue("demo.record", n=1)
    assert seen == []
    second = await bare_app(make_app, data_dir=shared)
    second.kernel.jobs.task("demo.record", record)
    assert [r.ok for r in await run_due_jobs(second.kernel)] == [True]
    assert seen == [1]


async def test_the_same_dedupe_key_runs_once_while_the_first_is_pending(app, run_due_jobs):
    seen = []

    async def record(kernel, site_id, n):
        seen.append((site_id, n))

    jobs = app.kernel.jobs
    jobs.task("demo.record", record)
    await app.client.post("/api/v1/sites", json={"id": "other"},
                          headers={"Authorization": f"Bearer {await app.login()}"})
    first = await jobs.enqueue("demo.record", site_id="default", n=1, dedupe_key="k")
    assert first is not None
    assert await jobs.enqueue("demo.record", site_id="default", n=2, dedupe_key="k") is None
    async with app.kernel.unit_of_work("default") as uow:
        assert await uow.enqueue("demo.record", site_id="default", n=3, dedupe_key="k") is None
    # Another site, or another key, is another job.
    assert await jobs.enqueue("demo.record", site_id="other", n=4, dedupe_key="k")
    assert await jobs.enqueue("demo.record", site_id="default", n=5, dedupe_key="k2")
    await run_due_jobs(app.kernel)
    assert sorted(seen) == [("default", 1), ("default", 5), ("other", 4)]

    # Once a worker has claimed the job, the key is free: a change made while it runs gets a
    # run of its own, and the retry of a failed run merges into that pending duplicate.
    await jobs.enqueue("demo.record", site_id="default", n=6, dedupe_key="k")
    now = now_utc()
    claimed = await store.claim(app.kernel.db, "w1", now, 10, 60)
    assert [c["args"]["n"] for c in claimed] == [6]
    assert await jobs.enqueue("demo.record", site_id="default", n=7, dedupe_key="k")
    assert await jobs.enqueue("demo.record", site_id="default", n=8, dedupe_key="k") is None
    await store.retry_later(app.kernel.db, claimed[0]["id"], "w1", now, "boom", now)
    assert [r["args"]["n"] for r in await rows(app.kernel)] == [7]


async def test_failures_back_off_exponentially_then_the_job_fails_visibly(app, run_due_jobs):
    calls = []

    async def flaky(kernel, n):
        calls.append(n)
        raise RuntimeError(f"boom {len(calls)}")

    jobs = app.kernel.jobs
    jobs.task("demo.flaky", flaky, retries=2, retry_delay=10, retry_max_delay=15)
    job_id = await jobs.enqueue("demo.flaky", n=1)
    t0 = now_utc()

    [run] = await run_due_jobs(app.kernel, now=t0)
    assert not run.ok and run.error == "RuntimeError: boom 1"
    [row] = await rows(app.kernel)
    first_retry = aware(row["due_at"])
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert t0 + dt.timedelta(seconds=5) <= first_retry <= t0 + dt.timedelta(seconds=10)  # step 10, upper half

    assert await run_due_jobs(app.kernel, now=first_retry - dt.timedelta(seconds=1)) == []  # not yet
    [run] = await run_due_jobs(app.kernel, now=first_retry)
    [row] = await rows(app.kernel)
    second_retry = aware(row["due_at"])
    # step min(15, 20) = 15: between 7.5 and 15 seconds later
    assert first_retry + dt.timedelta(seconds=7.5) <= second_retry <= first_retry + dt.timedelta(seconds=15)

    [run] = await run_due_jobs(app.kernel, now=second_retry)
    assert not run.ok and run.retry_at is None  # three attempts: the first run and two retries
    [row] = await rows(app.kernel)
    assert (row["status"], row["attempts"], row["last_error"]) == ("failed", 3, "RuntimeError: boom 3")
    assert calls == [1, 1, 1]
    assert await run_due_jobs(app.kernel, now=second_retry + dt.timedelta(days=1)) == []

    status = await jobs.status()
    flaky_row = next(j for j in status["jobs"] if j["name"] == "demo.flaky")
    assert (flaky_row["failed"], flaky_row["pending"]) == (1, 0)
    assert [(f["id"], f["error"], f["attempts"]) for f in status["recentFailures"]] == \
        [(job_id, "RuntimeError: boom 3", 3)]


async def test_a_job_that_meets_an_unreachable_database_spends_no_attempt(app, run_due_jobs):
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from kernel.testing import free_port

    async def reads_a_database_that_is_gone(kernel):  # a real driver error: a closed local port
        engine = create_async_engine(f"postgresql+psycopg://svc@127.0.0.1:{free_port()}/gone")
        try:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        finally:
            await engine.dispose()

    app.kernel.jobs.task("demo.dbgone", reads_a_database_that_is_gone, retries=0)
    await app.kernel.jobs.enqueue("demo.dbgone")
    t0 = now_utc()
    [run] = await run_due_jobs(app.kernel, now=t0)
    assert not run.ok and run.retry_at is not None  # put back, not failed: retries=0 would fail it
    [row] = await rows(app.kernel)
    assert (row["status"], row["attempts"], row["claimed_by"]) == ("pending", 0, None)
    assert t0 + dt.timedelta(seconds=5) <= aware(row["due_at"]) <= t0 + dt.timedelta(seconds=10)


async def test_a_job_that_recovers_leaves_nothing_behind(app, run_due_jobs):
    calls = []

    async def once_flaky(kernel):
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("provider down")

    app.kernel.jobs.task("demo.once", once_flaky, retries=3, retry_delay=1, retry_max_delay=1)
    await app.kernel.jobs.enqueue("demo.once")
    t0 = now_utc()
    assert [r.ok for r in await run_due_jobs(app.kernel, now=t0)] == [False]
    assert [r.ok for r in await run_due_jobs(app.kernel, now=t0 + dt.timedelta(seconds=1))] == [True]
    assert await rows(app.kernel) == []


async def test_a_job_due_later_waits_and_survives_a_restart(make_app, tmp_path, run_due_jobs):
    shared = tmp_path / "shared"
    seen = []

    async def publish(kernel, site_id, release):
        seen.append(release)

    first = await bare_app(make_app, data_dir=shared)
    first.kernel.jobs.task("demo.publish", publish)
    publish_at = now_utc() + dt.timedelta(hours=2)
    async with first.kernel.unit_of_work("default") as uow:
        await uow.enqueue("demo.publish", site_id="default", release="r1", run_at=publish_at, dedupe_key="r1")
    assert await run_due_jobs(first.kernel) == []
    status = await first.kernel.jobs.status()
    assert status["totals"] == {"pending": 1, "due": 0, "running": 0, "failed": 0}

    second = await bare_app(make_app, data_dir=shared)  # a restart: a new app on the same database
    second.kernel.jobs.task("demo.publish", publish)
    assert await run_due_jobs(second.kernel, now=publish_at - dt.timedelta(seconds=1)) == []
    assert [r.ok for r in await run_due_jobs(second.kernel, now=publish_at)] == [True]
    assert seen == ["r1"]


async def test_two_workers_claiming_together_run_each_due_job_exactly_once(make_app, tmp_path):
    """Two apps on one database (separate engines, write gates and connections), each
    draining the queue at the same moment: SKIP LOCKED on PostgreSQL, the write lock on SQLite."""
    shared = tmp_path / "shared"
    ran: list[tuple[str, int]] = []

    def job_for(worker: str):
        async def record(kernel, n):
            ran.append((worker, n))
            for _ in range(3):
                await asyncio.sleep(0)  # let the other worker claim in between

        return record

    one = await bare_app(make_app, data_dir=shared, jobs_concurrency=3)
    two = await bare_app(make_app, data_dir=shared, jobs_concurrency=3)
    one.kernel.jobs.task("demo.count", job_for("one"))
    two.kernel.jobs.task("demo.count", job_for("two"))
    for n in range(60):
        await one.kernel.jobs.enqueue("demo.count", n=n, run_at=now_utc() - dt.timedelta(seconds=1))
    now = now_utc()

    runs = await asyncio.gather(one.kernel.jobs.run_due(now), two.kernel.jobs.run_due(now))
    assert sorted(n for _, n in ran) == list(range(60))  # every job, each exactly once
    assert sum(len(r) for r in runs) == 60 and all(run.ok for r in runs for run in r)
    assert await rows(one.kernel) == []


async def test_a_dead_workers_job_is_reclaimed_when_its_lease_expires(app, run_due_jobs):
    seen = []

    async def record(kernel, n):
        seen.append(n)

    app.kernel.jobs.task("demo.record", record)
    await app.kernel.jobs.enqueue("demo.record", n=1)
    now = now_utc()
    [claimed] = await store.claim(app.kernel.db, "dead-worker", now, 10, lease_seconds=30)
    assert claimed["attempts"] == 1
    assert await run_due_jobs(app.kernel, now=now + dt.timedelta(seconds=29)) == []  # still leased
    [run] = await run_due_jobs(app.kernel, now=now + dt.timedelta(seconds=31))
    assert run.ok and seen == [1]
    # The dead worker, if it was only slow, cannot touch the row another worker now owns.
    await store.fail(app.kernel.db, claimed["id"], "dead-worker", "late", now)
    assert await rows(app.kernel) == []


async def test_a_worker_does_not_reclaim_a_job_it_still_runs(app):
    """A job whose lease ran out while its worker still runs it is not claimed again by that
    worker (its name is the same for both claims, so fencing could not tell them apart)."""
    async def record(kernel, n):
        pass

    app.kernel.jobs.task("demo.record", record)
    await app.kernel.jobs.enqueue("demo.record", n=1)
    now = now_utc()
    [claimed] = await store.claim(app.kernel.db, "worker-a", now, 10, lease_seconds=30)
    later = now + dt.timedelta(seconds=31)
    assert await store.claim(app.kernel.db, "worker-a", later, 10, 30, running={claimed["id"]}) == []
    [again] = await store.claim(app.kernel.db, "worker-b", later, 10, 30)
    assert again["id"] == claimed["id"] and again["attempts"] == 2


async def test_coroutine_jobs_run_concurrently_on_the_workers_loop(make_app):
    """Two slow jobs, one worker: each waits until it has seen the other start. Run one after
    the other, the first would wait forever (and time out); together, both finish."""
    app = await bare_app(make_app, jobs_concurrency=4, jobs_poll_ms=50)
    started: list[int] = []
    both_started = asyncio.Event()
    finished: list[tuple[int, list[int]]] = []

    async def slow(kernel, n):
        started.append(n)
        if len(started) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), 10)
        finished.append((n, list(started)))

    app.kernel.jobs.task("demo.slow", slow, retries=0)
    await app.kernel.jobs.enqueue("demo.slow", n=1)
    await app.kernel.jobs.enqueue("demo.slow", n=2)
    app.kernel.jobs.start_consumer()
    try:
        await asyncio.wait_for(both_started.wait(), 15)
        for _ in range(200):
            if len(finished) == 2:
                break
            await asyncio.sleep(0.05)
    finally:
        await app.kernel.jobs.stop_consumer()
    # Each job saw both started before it finished: they overlapped.
    assert sorted(n for n, _ in finished) == [1, 2]
    assert all(sorted(seen) == [1, 2] for _, seen in finished)


async def test_a_stopped_worker_gives_its_running_job_back(make_app, run_due_jobs):
    app = await bare_app(make_app, jobs_poll_ms=50)
    started = asyncio.Event()
    runs = []

    async def hang(kernel):
        runs.append(1)
        started.set()
        if len(runs) == 1:
            await asyncio.Event().wait()  # the first run never ends on its own

    app.kernel.jobs.task("demo.hang", hang)
    await app.kernel.jobs.enqueue("demo.hang")
    app.kernel.jobs.start_consumer()
    await asyncio.wait_for(started.wait(), 15)
    await app.kernel.jobs.stop_consumer(grace=0.05)
    [row] = await rows(app.kernel)
    assert (row["status"], row["attempts"], row["claimed_by"]) == ("pending", 0, None)  # no attempt spent
    assert [r.ok for r in await run_due_jobs(app.kernel)] == [True] and len(runs) == 2


async def test_a_periodic_tick_runs_once_per_slot_across_workers(make_app, tmp_path, run_due_jobs):
    shared = tmp_path / "shared"
    ticks = []

    async def tick(kernel):
        ticks.append(1)

    one = await bare_app(make_app, data_dir=shared)
    two = await bare_app(make_app, data_dir=shared)
    for app in (one, two):
        app.kernel.jobs.periodic("demo.tick", tick, every_seconds=60)
    slot_start = dt.datetime(2031, 1, 1, 12, 0, tzinfo=dt.UTC)
    await run_due_jobs(one.kernel, now=slot_start)
    await run_due_jobs(two.kernel, now=slot_start + dt.timedelta(seconds=30))  # same slot
    assert len(ticks) == 1
    await run_due_jobs(two.kernel, now=slot_start + dt.timedelta(seconds=60))
    assert len(ticks) == 2


async def test_deleting_a_site_deletes_its_queued_jobs(app, run_due_jobs):
    async def noop(kernel, site_id):
        pass

    headers = {"Authorization": f"Bearer {await app.login()}"}
    assert (await app.client.post("/api/v1/sites", json={"id": "doomed"}, headers=headers)).status_code == 201
    app.kernel.jobs.task("demo.noop", noop)
    await app.kernel.jobs.enqueue("demo.noop", site_id="doomed", run_at=now_utc() + dt.timedelta(days=1))
    await app.kernel.jobs.enqueue("demo.noop", site_id="default", run_at=now_utc() + dt.timedelta(days=1))
    assert (await app.client.delete("/api/v1/sites/doomed", headers=headers)).status_code == 204
    assert [r["site_id"] for r in await rows(app.kernel)] == ["default"]


async def test_a_renewed_lease_keeps_a_slow_job_from_being_reclaimed(app, run_due_jobs):
    async def noop(kernel):
        pass

    app.kernel.jobs.task("demo.noop", noop)
    await app.kernel.jobs.enqueue("demo.noop")
    now = now_utc()
    [claimed] = await store.claim(app.kernel.db, "busy-worker", now, 10, lease_seconds=30)
    # The heartbeat at +20 s pushes the lease to +50 s; another worker's claim at +40 s finds nothing.
    await store.renew_leases(app.kernel.db, [claimed["id"]], "busy-worker", now + dt.timedelta(seconds=20), 30)
    await store.renew_leases(app.kernel.db, [claimed["id"]], "someone-else", now + dt.timedelta(seconds=90), 30)
    assert await run_due_jobs(app.kernel, now=now + dt.timedelta(seconds=40)) == []
    assert [r.ok for r in await run_due_jobs(app.kernel, now=now + dt.timedelta(seconds=51))] == [True]


async def test_failed_jobs_are_purged_after_the_retention(app, run_due_jobs):
    async def boom(kernel):
        raise ValueError("no")

    app.kernel.jobs.task("demo.boom", boom, retries=0)
    await app.kernel.jobs.enqueue("demo.boom")
    now = now_utc()
    await run_due_jobs(app.kernel, now=now)
    assert [r["status"] for r in await rows(app.kernel)] == ["failed"]
    assert await store.purge_failed(app.kernel.db, now - dt.timedelta(days=1)) == 0
    assert await store.purge_failed(app.kernel.db, now + dt.timedelta(seconds=1)) == 1
    assert await rows(app.kernel) == []


async def test_a_run_past_its_timeout_is_cancelled_and_fails(app, run_due_jobs):
    cancelled = []

    async def stuck(kernel):
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    app.kernel.jobs.task("demo.stuck", stuck, retries=0, timeout=0.05)
    await app.kernel.jobs.enqueue("demo.stuck")
    [run] = await run_due_jobs(app.kernel)
    assert (run.ok, run.error, cancelled) == (False, "JobTimeout: ran longer than its 0.05s timeout", [True])


async def test_a_broken_periodic_job_keeps_only_its_latest_failure(app, run_due_jobs):
    async def broken(kernel):
        raise RuntimeError("still broken")

    app.kernel.jobs.periodic("demo.broken", broken, every_seconds=60)
    start = dt.datetime(2031, 1, 1, tzinfo=dt.UTC)
    for minute in range(3):
        [run] = await run_due_jobs(app.kernel, now=start + dt.timedelta(minutes=minute))
        assert not run.ok
    [row] = await rows(app.kernel)
    assert (row["status"], row["last_error"]) == ("failed", "RuntimeError: still broken")
    assert aware(row["updated_at"]) == start + dt.timedelta(minutes=2)


async def test_a_moved_publication_time_replaces_the_pending_job_and_cancel_removes_it(app, run_due_jobs):
    seen = []

    async def publish(kernel, site_id, release, version):
        seen.append((release, version))

    jobs = app.kernel.jobs
    jobs.task("demo.publish", publish)
    t1 = now_utc() + dt.timedelta(hours=1)
    t2 = t1 + dt.timedelta(hours=1)
    first = await jobs.enqueue("demo.publish", site_id="default", release="r1", version=1, run_at=t1,
                               dedupe_key="r1")
    async with app.kernel.unit_of_work("default") as uow:
        moved = await uow.enqueue("demo.publish", site_id="default", release="r1", version=2, run_at=t2,
                                  dedupe_key="r1", replace=True)
    assert moved == first
    [row] = await rows(app.kernel)
    assert (aware(row["due_at"]), row["args"]["version"]) == (t2, 2)
    assert await run_due_jobs(app.kernel, now=t1) == []
    assert [r.ok for r in await run_due_jobs(app.kernel, now=t2)] == [True] and seen == [("r1", 2)]

    # Cancelling in a unit of work that rolls back cancels nothing.
    await jobs.enqueue("demo.publish", site_id="default", release="r2", version=1, run_at=t1, dedupe_key="r2")
    with pytest.raises(RuntimeError):
        async with app.kernel.unit_of_work("default") as uow:
            assert await jobs.cancel("demo.publish", dedupe_key="r2", site_id="default", uow=uow)
            raise RuntimeError("rolled back")
    assert len(await rows(app.kernel)) == 1
    assert await jobs.cancel("demo.publish", dedupe_key="r2", site_id="other") is False  # another site's key
    assert await jobs.cancel("demo.publish", dedupe_key="r2", site_id="default") is True
    assert await rows(app.kernel) == []
    with pytest.raises(ValueError):
        await jobs.enqueue("demo.publish", site_id="default", release="r3", version=1, replace=True)
