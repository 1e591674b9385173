"""Durable consumers: registered by plugins, fed after commit in log order per site, each with its
own checkpoint; a failing one is retried with backoff and holds no other back; leases."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest
from sqlalchemy import update

from kernel.base.backoff import backoff_delay
from kernel.events import START, EventConsumer
from kernel.events import checkpoints as cp
from kernel.events.tables import checkpoints
from kernel.hooks.hookspecs import hookimpl

FAST = {"events_poll_seconds": 3600.0, "events_retry_base_seconds": 0.01, "events_retry_max_seconds": 0.02}


class Consumers:
    """A plugin with two consumers: ``steady`` records every batch; ``flaky`` fails its first
    ``failures`` batches, then records."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.steady: list[tuple[str, list[int]]] = []
        self.flaky: list[tuple[str, list[int]]] = []
        self.flaky_calls = 0
        self.changed = asyncio.Event()

    @hookimpl
    def register_event_consumers(self, kernel: Any) -> list[EventConsumer]:
        async def steady(kernel: Any, site_id: str, events: list[Any]) -> None:
            self.steady.append((site_id, [e.id for e in events]))
            self.changed.set()

        async def flaky(kernel: Any, site_id: str, events: list[Any]) -> None:
            self.flaky_calls += 1
            self.changed.set()
            if self.flaky_calls <= self.failures:
                raise RuntimeError("endpoint down")
            self.flaky.append((site_id, [e.id for e in events]))

        return [EventConsumer("steady", steady), EventConsumer("flaky", flaky, types=["items.*"], batch_size=2)]

    async def until(self, check: Any) -> None:
        async def wait() -> None:
            while not check():
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(wait(), 30)


def ids(batches: list[tuple[str, list[int]]], site: str) -> list[int]:
    return [i for s, batch in batches if s == site for i in batch]


async def _app(make_app, plugin: Consumers, **settings: Any) -> Any:
    app = await make_app(plugins=[plugin], **{**FAST, **settings})
    token = await app.login()
    headers = {"Authorization": f"Bearer {token}"}
    for site in ("site-a", "site-b"):
        resp = await app.client.post("/api/v1/sites", json={"id": site}, headers=headers)
        assert resp.status_code == 201
    return app


async def write(kernel: Any, site: str, n: int, type_: str = "items.create") -> None:
    async with kernel.unit_of_work(site) as uow:
        for i in range(n):
            uow.emit(type_, collection="posts", item_id=f"{site}-{i}")


async def test_consumers_get_every_event_in_order_per_site_after_commit(make_app):
    plugin = Consumers()
    app = await _app(make_app, plugin)
    kernel = app.kernel
    await write(kernel, "site-a", 3)
    await write(kernel, "site-b", 2)
    await write(kernel, "site-a", 1, "fields.create")
    # No poll will come (SVC_EVENTS_POLL_SECONDS is an hour): the commits woke the dispatcher.
    a = [e.id for e in (await kernel.events.read_after("site-a")).events]
    b = [e.id for e in (await kernel.events.read_after("site-b")).events]
    await plugin.until(lambda: ids(plugin.steady, "site-a") == a and ids(plugin.steady, "site-b") == b)
    await plugin.until(lambda: len(ids(plugin.flaky, "site-a")) == 3)
    assert ids(plugin.flaky, "site-a") == a[:3]  # its filter leaves fields.create out
    assert all(len(batch) <= 2 for _, batch in plugin.flaky)  # its own batch size
    # Each batch holds one site's events: a site-B event never reaches a site-A batch.
    assert set(ids(plugin.steady, "site-a")).isdisjoint(b)
    await kernel.events.dispatcher.idle()
    for site, consumer, types in (("site-a", "steady", ()), ("site-a", "flaky", ("items.*",)),
                                  ("site-b", "steady", ())):
        state = await kernel.events.checkpoint(site, consumer)
        assert state["leaseOwner"] is None
        # Nothing it takes lies past its cursor. A commit wakes only the consumers whose filters take
        # its events: when flaky's last run read the log before fields.create committed, its cursor
        # stays before that event, which it does not take, until its next run.
        assert (await kernel.events.read_after(site, state["cursor"], types=types)).events == []
        assert state["cursor"] == await kernel.events.head(site) or consumer == "flaky"


def counting_claims(monkeypatch) -> list[tuple[str, str]]:
    """The (site, consumer) of every lease the dispatcher claims from now on."""
    claimed: list[tuple[str, str]] = []
    real_claim = cp.claim

    async def counting_claim(db, site_id, consumer, *args, **kw):
        claimed.append((site_id, consumer))
        return await real_claim(db, site_id, consumer, *args, **kw)

    monkeypatch.setattr("kernel.events.dispatch.checkpoints.claim", counting_claim)
    return claimed


async def test_a_commit_wakes_only_the_consumers_whose_filters_take_its_events(make_app, monkeypatch):
    plugin = Consumers()
    app = await _app(make_app, plugin)
    kernel = app.kernel
    await kernel.events.dispatcher.idle()
    claimed = counting_claims(monkeypatch)
    await write(kernel, "site-a", 2, "fields.create")  # flaky takes items.* only
    await plugin.until(lambda: len(ids(plugin.steady, "site-a")) == 2)
    await kernel.events.dispatcher.idle()
    assert claimed == [("site-a", "steady")]  # no claim, read and ack for a consumer it cannot feed
    await write(kernel, "site-a", 1)  # items.create: flaky is woken and reads past the skipped events
    await plugin.until(lambda: len(ids(plugin.flaky, "site-a")) == 1)
    await kernel.events.dispatcher.idle()
    assert (await kernel.events.checkpoint("site-a", "flaky"))["cursor"] == await kernel.events.head("site-a")


async def test_a_scan_wakes_only_the_consumers_whose_filters_take_what_it_found(make_app, monkeypatch):
    """Events another process committed are found by the scan, which wakes only the consumers
    that take them; the periodic catch-up pass then moves the others' checkpoints too."""
    plugin = Consumers()
    app = await _app(make_app, plugin)
    kernel = app.kernel
    dispatcher = kernel.events.dispatcher
    await dispatcher.idle()
    dispatcher._catch_up_at = asyncio.get_running_loop().time() + 3600  # the boot's pass is done
    claimed = counting_claims(monkeypatch)
    monkeypatch.setattr(kernel.events, "committed", lambda site_id, kinds: None)  # no local wake-up
    await write(kernel, "site-a", 2, "fields.create")  # flaky takes items.* only
    await dispatcher._scan()
    await plugin.until(lambda: len(ids(plugin.steady, "site-a")) == 2)
    await dispatcher.idle()
    assert claimed == [("site-a", "steady")]
    dispatcher._catch_up_at = 0.0
    await dispatcher._scan()
    await dispatcher.idle()
    assert ("site-a", "flaky") in claimed[1:]
    assert (await kernel.events.checkpoint("site-a", "flaky"))["cursor"] == await kernel.events.head("site-a")


async def test_a_failing_consumer_is_retried_with_backoff_and_holds_no_other_back(make_app):
    plugin = Consumers(failures=3)
    app = await _app(make_app, plugin)
    kernel = app.kernel
    await write(kernel, "site-a", 2)
    expected = [e.id for e in (await kernel.events.read_after("site-a")).events]
    await plugin.until(lambda: ids(plugin.steady, "site-a") == expected)
    await plugin.until(lambda: ids(plugin.flaky, "site-a") == expected)
    assert plugin.flaky_calls == 4  # three failures, then the same batch once more
    await kernel.events.dispatcher.idle()
    state = await kernel.events.checkpoint("site-a", "flaky")
    assert state["attempts"] == 0 and state["lastError"] is None and state["retryAt"] is None


async def test_failure_state_is_recorded_until_the_retry(make_app):
    plugin = Consumers(failures=1)
    app = await _app(make_app, plugin, events_retry_base_seconds=3600.0, events_retry_max_seconds=3600.0)
    kernel = app.kernel
    await write(kernel, "site-a", 1)
    await plugin.until(lambda: plugin.flaky_calls == 1 and ids(plugin.steady, "site-a"))
    await kernel.events.dispatcher.idle()
    state = await kernel.events.checkpoint("site-a", "flaky")
    assert state["attempts"] == 1 and state["lastError"] == "RuntimeError: endpoint down"
    assert state["retryAt"] > dt.datetime.now(dt.UTC) + dt.timedelta(minutes=20)  # half-jittered hour
    assert state["leaseOwner"] is None
    # Not due: a new claim is refused, so a retry storm cannot start.
    assert await cp.claim(kernel.db, "site-a", "flaky", "someone", 60) is None


def test_backoff_doubles_up_to_the_cap():
    for attempts, full in ((1, 1.0), (2, 2.0), (3, 4.0), (6, 32.0), (7, 60.0), (500, 60.0)):
        delay = backoff_delay(attempts, 1.0, 60.0)
        assert full / 2 <= delay <= full


async def test_leases_keep_one_worker_per_site_and_consumer(make_app):
    plugin = Consumers()
    app = await _app(make_app, plugin, events_dispatch=False)
    kernel, db = app.kernel, app.kernel.db
    await write(kernel, "site-a", 3)
    page = await kernel.events.read_after("site-a", limit=2)
    first = await cp.claim(db, "site-a", "steady", "worker-1", 60)
    assert first is not None and first.cursor == (0, 0)
    assert await cp.claim(db, "site-a", "steady", "worker-2", 60) is None  # held
    assert await cp.claim(db, "site-b", "steady", "worker-2", 60) is not None  # another site is free
    assert await cp.ack(db, first, page.next_cursor, 60)
    # worker-1 dies: its lease runs out, worker-2 takes over from the last acknowledged cursor.
    async with db.begin() as conn:
        await conn.execute(update(checkpoints).where(checkpoints.c.site_id == "site-a").values(
            lease_until=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)))
    second = await cp.claim(db, "site-a", "steady", "worker-2", 60)
    assert second is not None and second.cursor == page.next_cursor
    assert not await cp.ack(db, first, await kernel.events.head("site-a"), 60)  # worker-1 is fenced off
    assert not await cp.ack(db, second, START, 60)  # and a checkpoint never moves back


async def test_consumers_are_checked_at_boot(make_app):
    class Twice:
        @hookimpl
        def register_event_consumers(self, kernel: Any) -> list[Any]:
            async def handle(kernel: Any, site_id: str, events: list[Any]) -> None:
                return None

            return [EventConsumer("same", handle), EventConsumer("same", handle)]

    with pytest.raises(ValueError, match="registered twice"):
        await make_app(plugins=[Twice()])
    with pytest.raises(ValueError):
        EventConsumer("", lambda *a: None)


async def test_stopping_mid_batch_releases_the_lease(make_app):
    started = asyncio.Event()

    class Stuck:
        @hookimpl
        def register_event_consumers(self, kernel: Any) -> list[EventConsumer]:
            async def hang(kernel: Any, site_id: str, events: list[Any]) -> None:
                started.set()
                await asyncio.Event().wait()

            return [EventConsumer("stuck", hang)]

    app = await make_app(plugins=[Stuck()], **FAST)
    kernel = app.kernel
    await write(kernel, "default", 1)
    await asyncio.wait_for(started.wait(), 30)
    held = await kernel.events.checkpoint("default", "stuck")
    assert held["leaseOwner"] == kernel.events.dispatcher.owner
    await kernel.events.stop()
    state = await kernel.events.checkpoint("default", "stuck")
    assert state["leaseOwner"] is None and state["cursor"] == START  # not acknowledged, not held
