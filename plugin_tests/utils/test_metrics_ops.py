"""The operator's families on /metrics: busiest sites, job queue, event lag, caches, live
connections, job failures. Each appears, and moves when what it counts moves."""

from __future__ import annotations

import datetime as dt
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import update

from kernel import hookimpl
from kernel.db.meta import now_utc
from kernel.events import START
from kernel.events.tables import checkpoints
from kernel.metrics.live import live_connection
from kernel.metrics.site_counts import OTHER, TopSites, TopSitesCollector
from kernel.testing import METRICS_HEADERS, examples, run_due_jobs

FRESH = {"SVC_METRICS_REFRESH_SECONDS": "0", "SVC_EVENTS_DISPATCH": "false"}


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample of the exposition ``text``, None when absent."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pattern = rf"^{re.escape(name)}{re.escape('{' + want + '}') if labels else ''} (\S+)$"
    found = re.search(pattern, text, re.M)
    return None if found is None else float(found.group(1))


async def scrape(app) -> str:
    resp = await app.client.get("/metrics", headers=METRICS_HEADERS)
    assert resp.status_code == 200, resp.text
    return resp.text


# -- the busiest sites: a pure counter --------------------------------------------------------


def test_a_thousand_sites_give_at_most_n_plus_one_series():
    top = TopSites(20)
    for i in range(1000):
        top.record(f"site-{i}")
    for _ in range(50):  # one heavy hitter
        top.record("busy")
    series = list(TopSitesCollector(top).collect())[0].samples
    assert len(series) <= 21
    counts = top.counts()
    assert counts["busy"] >= 1 and sum(counts.values()) == 1050
    assert counts[OTHER] >= 1000 - 20


def test_no_named_sites_with_a_capacity_of_zero():
    top = TopSites(0)
    for site in ("a", "b", "a"):
        top.record(site)
    assert top.counts() == {OTHER: 3}


@settings(max_examples=examples(200), deadline=None)
@given(stream=st.lists(st.integers(0, 40), max_size=400), capacity=st.integers(1, 8))
def test_space_saving_keeps_every_heavy_hitter_and_adds_up(stream, capacity):
    top = TopSites(capacity)
    before_other = 0
    for site in stream:
        top.record(str(site))
        other = top.counts()[OTHER]
        assert other >= before_other  # _other only grows
        before_other = other
    counts = top.counts()
    assert len(counts) <= capacity + 1
    assert sum(counts.values()) == len(stream)
    for site in set(stream):
        true = stream.count(site)
        if true * capacity > len(stream):  # more than 1/capacity of the stream: certainly kept
            estimate, error = top.estimate(str(site))
            assert estimate - error <= true <= estimate


async def test_site_requests_name_the_busiest_sites_only(make_app):
    app = await make_app(env={"SVC_METRICS_TOP_SITES": "1"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    busy, quiet = await app.create_site(admin), await app.create_site(admin)
    # Space-saving: a new site takes the smallest slot, so the busy one comes last to keep its own.
    for site, n in ((quiet, 1), (busy, 4)):
        for _ in range(n):
            resp = await app.client.get("/api/v1/collections", headers={**admin, "X-Svc-Site": site})
            assert resp.status_code == 200, resp.text
    unknown = await app.client.get("/api/v1/collections", headers={**admin, "X-Svc-Site": "no-such-site-9"})
    assert unknown.status_code == 404
    text = await scrape(app)
    assert sample(text, "svc_site_requests_total", site=busy) == 4  # its hits since it took quiet's slot
    assert sample(text, "svc_site_requests_total", site=quiet) is None
    assert sample(text, "svc_site_requests_total", site=OTHER) == 1
    assert "no-such-site-9" not in text


def test_the_top_sites_setting_is_bounded():
    from kernel.base.settings import Settings, SettingsError

    for bad in ("-1", "1001", "many"):
        try:
            Settings.from_env(environ={"SVC_METRICS_TOP_SITES": bad})
        except SettingsError as exc:
            assert "SVC_METRICS_TOP_SITES" in str(exc)
        else:
            raise AssertionError(f"{bad!r} was accepted")


# -- job queue depths and failures ------------------------------------------------------------


class FailingJob:
    name = "ops_probe_jobs"

    @hookimpl
    def register_jobs(self, jobs, kernel):
        async def broken(kernel, **args):
            raise ValueError("broken on purpose")

        jobs.task("ops.broken", broken, retries=1, retry_delay=0.01, retry_max_delay=0.01)


async def test_queue_depth_and_job_failures_move(make_app):
    from kernel.hooks.plugins import available_plugins

    app = await make_app(plugins=[*sorted(available_plugins()), FailingJob()], env=FRESH)
    text = await scrape(app)
    assert sample(text, "svc_jobs_queued", job="ops.broken", state="pending") is None
    await app.kernel.jobs.enqueue("ops.broken")
    await app.kernel.jobs.enqueue("ops.broken")
    text = await scrape(app)
    assert sample(text, "svc_jobs_queued", job="ops.broken", state="pending") == 2
    assert sample(text, "svc_jobs_queued", job="ops.broken", state="due") == 2
    assert sample(text, "svc_jobs_oldest_due_seconds") >= 0
    await run_due_jobs(app, periodic=False)  # first attempts fail, retried later
    text = await scrape(app)
    assert sample(text, "svc_job_failures_total", job="ops.broken", outcome="retry") == 2
    assert sample(text, "svc_job_failures_total", job="ops.broken", outcome="failed") is None
    await run_due_jobs(app, now_utc() + dt.timedelta(seconds=5), periodic=False)
    text = await scrape(app)
    assert sample(text, "svc_job_failures_total", job="ops.broken", outcome="failed") == 2
    assert sample(text, "svc_jobs_queued", job="ops.broken", state="failed") == 2
    assert sample(text, "svc_jobs_queued", job="ops.broken", state="pending") is None


async def test_database_figures_are_reused_within_their_max_age(make_app):
    from kernel.hooks.plugins import available_plugins

    app = await make_app(plugins=[*sorted(available_plugins()), FailingJob()],
                         env={"SVC_METRICS_REFRESH_SECONDS": "3600"})
    await scrape(app)
    await app.kernel.jobs.enqueue("ops.broken")
    text = await scrape(app)  # the snapshot of the first scrape: no query ran
    assert sample(text, "svc_jobs_queued", job="ops.broken", state="pending") is None
    app.kernel.state["stored_metrics"].taken = None
    text = await scrape(app)
    assert sample(text, "svc_jobs_queued", job="ops.broken", state="pending") == 1


# -- event consumer lag -----------------------------------------------------------------------


class LagProbe:
    name = "ops_probe_events"

    @hookimpl
    def register_event_consumers(self, kernel):
        from kernel.events import EventConsumer

        async def handle(kernel, site_id, events):
            return None

        return [EventConsumer("ops.lag", handle, types=("items.*",)),
                EventConsumer("ops.other", handle, types=("files.*",))]


async def test_event_lag_counts_what_a_consumer_has_still_to_take(make_app):
    from kernel.hooks.plugins import available_plugins

    app = await make_app(plugins=[*sorted(available_plugins()), LagProbe()], env=FRESH)
    kernel = app.kernel
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    async with kernel.db.begin() as conn:
        for name in ("ops.lag", "ops.other"):
            await kernel.events.set_checkpoint(conn, site, name, START)
    text = await scrape(app)
    before = sample(text, "svc_event_consumer_lag_events", consumer="ops.lag")
    assert before == 0
    async with kernel.unit_of_work(site) as uow:
        for i in range(3):
            uow.emit("items.create", collection="posts", item_id=f"i{i}")
    text = await scrape(app)
    assert sample(text, "svc_event_consumer_lag_events", consumer="ops.lag") == 3
    assert sample(text, "svc_event_consumer_lag_seconds", consumer="ops.lag") >= 0
    assert sample(text, "svc_event_consumer_lag_events", consumer="ops.other") == 0  # not what it takes
    assert sample(text, "svc_events_head_id") >= 3
    head = await kernel.events.head(site)
    async with kernel.db.begin() as conn:
        await kernel.events.set_checkpoint(conn, site, "ops.lag", head)
        await conn.execute(update(checkpoints).where(checkpoints.c.site_id == site,
                                                     checkpoints.c.consumer == "ops.other")
                           .values(retry_at=now_utc()))
    text = await scrape(app)
    assert sample(text, "svc_event_consumer_lag_events", consumer="ops.lag") == 0
    assert sample(text, "svc_event_consumer_retrying", consumer="ops.other") == 1
    assert sample(text, "svc_event_consumer_retrying", consumer="ops.lag") == 0


# -- caches and live connections --------------------------------------------------------------


async def test_shared_cache_hits_and_misses_move(svc_app):
    cache = svc_app.kernel.cache
    text = await scrape(svc_app)
    hits, misses = (sample(text, f"svc_cache_{k}_total", cache="shared") for k in ("hits", "misses"))
    await cache.set("ops-probe", "1", ttl=60)
    assert await cache.get("ops-probe") == "1"
    assert await cache.get("ops-probe-missing") is None
    text = await scrape(svc_app)
    assert sample(text, "svc_cache_hits_total", cache="shared") == hits + 1
    assert sample(text, "svc_cache_misses_total", cache="shared") == misses + 1
    assert sample(text, "svc_site_cache_hits_total", cache="sites") is not None


async def test_live_connections_count_open_ones(svc_app):
    text = await scrape(svc_app)
    assert sample(text, "svc_live_connections", kind="websocket") == 0
    with live_connection(svc_app.kernel, "websocket"), live_connection(svc_app.kernel, "sse"):
        text = await scrape(svc_app)
        assert sample(text, "svc_live_connections", kind="websocket") == 1
        assert sample(text, "svc_live_connections", kind="sse") == 1
    text = await scrape(svc_app)
    assert sample(text, "svc_live_connections", kind="websocket") == 0


async def test_an_open_realtime_socket_is_counted(live_server, svc_app, calls):
    import asyncio

    from plugin_tests.realtime.helpers import connect, subscribe, ticket

    server = await live_server(svc_app)
    await calls.collection("posts", {"title": "string"})
    async with connect(server, await ticket(calls)) as ws:
        assert (await subscribe(ws, "posts"))["type"] == "subscribed"  # the socket is in its responder
        assert sample(await scrape(svc_app), "svc_live_connections", kind="websocket") == 1
    for _ in range(200):  # the server notices the close on its own loop
        if sample(await scrape(svc_app), "svc_live_connections", kind="websocket") == 0:
            break
        await asyncio.sleep(0.05)
    assert sample(await scrape(svc_app), "svc_live_connections", kind="websocket") == 0
