"""Per-site caps that keep one site's flood of jobs or events in its lane."""

from __future__ import annotations

import asyncio

import pytest

from kernel.base.settings import Settings, SettingsError
from kernel.db.meta import now_utc
from kernel.events.dispatch import CONCURRENCY, Dispatcher


async def jobs_app(make_app, **settings):
    app = await make_app(plugins=[], **settings)
    for job in app.kernel.jobs.periodic_jobs():
        app.kernel.jobs.unregister(job.name)
    return app


async def test_a_flooding_site_leaves_the_other_slots_to_other_sites(make_app):
    """Ten due jobs of a noisy site, enqueued first, and one of a quiet site: a worker with 4
    slots and a cap of 2 per site runs 2 noisy jobs and the quiet one at once."""
    app = await jobs_app(make_app, jobs_concurrency=4, jobs_site_concurrency=2)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    noisy, quiet = await app.create_site(admin, prefix="noisy"), await app.create_site(admin, prefix="quiet")
    release = asyncio.Event()
    started: list[str] = []

    async def hold(kernel, site_id, n):
        started.append(site_id)
        await release.wait()

    app.kernel.jobs.task("demo.hold", hold, retries=0)
    for n in range(10):
        await app.kernel.jobs.enqueue("demo.hold", site_id=noisy, n=n)
    await app.kernel.jobs.enqueue("demo.hold", site_id=quiet, n=0)
    worker = app.kernel.jobs.make_worker()
    try:
        claimed = await worker.claim_and_start(now_utc())
        await asyncio.sleep(0)  # let the started tasks record themselves
        assert claimed == 3
        assert worker.site_running() == {noisy: 2, quiet: 1}
        assert sorted(started) == sorted([noisy, noisy, quiet])
        # A second pass takes nothing more of the noisy site while it holds its two slots.
        assert await worker.claim_and_start(now_utc()) == 0
    finally:
        release.set()
        await asyncio.gather(*worker.running.values(), return_exceptions=True)


async def test_without_a_cap_the_first_due_jobs_take_every_slot(make_app):
    """The contrast: with the cap off (0), the noisy site's earlier jobs fill all four slots."""
    app = await jobs_app(make_app, jobs_concurrency=4, jobs_site_concurrency=0)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    noisy, quiet = await app.create_site(admin, prefix="noisy"), await app.create_site(admin, prefix="quiet")
    release = asyncio.Event()

    async def hold(kernel, site_id, n):
        await release.wait()

    app.kernel.jobs.task("demo.hold", hold, retries=0)
    for n in range(10):
        await app.kernel.jobs.enqueue("demo.hold", site_id=noisy, n=n)
    await app.kernel.jobs.enqueue("demo.hold", site_id=quiet, n=0)
    worker = app.kernel.jobs.make_worker()
    try:
        assert await worker.claim_and_start(now_utc()) == 4
        assert worker.site_running() == {noisy: 4}
    finally:
        release.set()
        await asyncio.gather(*worker.running.values(), return_exceptions=True)


@pytest.mark.parametrize(("given", "expected"), [(0, 0), (2, 2), (4, 0), (9, 0)])
def test_a_cap_at_or_above_the_concurrency_is_no_cap(given, expected):
    from kernel.jobs.worker import JobWorker

    worker = JobWorker(queue=None, kernel=None, concurrency=4, per_site=given)
    assert worker.per_site == expected


@pytest.mark.parametrize("name", ["SVC_JOBS_SITE_CONCURRENCY", "SVC_EVENTS_SITE_CONCURRENCY"])
@pytest.mark.parametrize("bad", ["-1", "two"])
def test_bad_caps_stop_the_start(name, bad):
    with pytest.raises(SettingsError, match=name):
        Settings.from_env(environ={name: bad})


async def test_the_dispatcher_feeds_at_most_the_cap_of_one_site_at_once():
    class Kernel:
        settings = Settings.from_env(environ={"SVC_EVENTS_SITE_CONCURRENCY": "2"})

    dispatcher = Dispatcher(Kernel(), [])
    inside: dict[str, int] = {"noisy": 0, "quiet": 0}
    most: dict[str, int] = {"noisy": 0, "quiet": 0}
    gate = asyncio.Event()

    async def pair(site):
        async with dispatcher._slot(site):
            inside[site] += 1
            most[site] = max(most[site], inside[site])
            await gate.wait()
            inside[site] -= 1

    tasks = [asyncio.ensure_future(pair("noisy")) for _ in range(CONCURRENCY)]
    tasks.append(asyncio.ensure_future(pair("quiet")))
    for _ in range(5):
        await asyncio.sleep(0)
    assert inside == {"noisy": 2, "quiet": 1}  # the quiet site got a slot past the noisy waiters
    gate.set()
    await asyncio.gather(*tasks)
    assert most == {"noisy": 2, "quiet": 1}
    assert dispatcher._site_gates == {}  # nothing kept per site once idle
