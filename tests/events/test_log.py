"""The event log: written in the writer's transaction, read after a cursor, per site, pruned."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select, update

from kernel.events import START, Cursor
from kernel.events.tables import events
from kernel.testing import add_idle_sites, counted_statements
from kernel.testing import shared as testing_shared

# Every test but the prune's writes and reads in sites of its own: they share the module's app,
# each in new sites of it (kernel/testing/shared.py). Pruning reads every site's events, so those
# tests start an app of their own (``testing_shared.own_app``).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def emit(kernel, site: str, n: int = 1, type_: str = "items.create", collection: str = "posts",
               **kw) -> None:
    async with kernel.unit_of_work(site, request_id="req-1") as uow:
        for i in range(n):
            uow.emit(type_, collection=collection, item_id=f"i{i}", fields=["title", "body", "title"], **kw)


async def test_emit_commits_with_the_transaction_and_reads_back(svc_app, site):
    kernel = svc_app.kernel
    await emit(kernel, site, 3, cause="release:r1")
    page = await kernel.events.read_after(site)
    assert [(e.type, e.collection, e.item_id, e.fields, e.request_id, e.cause) for e in page.events] == [
        ("items.create", "posts", f"i{i}", ["body", "title"], "req-1", "release:r1") for i in range(3)]
    assert page.next_cursor == page.events[-1].cursor == await kernel.events.head(site)
    assert not page.has_more
    again = await kernel.events.read_after(site, page.next_cursor)
    assert again.events == [] and again.next_cursor == page.next_cursor


async def test_events_flushed_through_an_acting_view_wake_the_dispatcher_at_commit(svc_app, site, monkeypatch):
    kernel = svc_app.kernel
    woken: list[tuple[str, set]] = []
    monkeypatch.setattr(kernel.events, "committed", lambda site_id, kinds: woken.append((site_id, set(kinds))))
    async with kernel.unit_of_work(site) as uow:
        view = uow.acting(cause="release:r2")  # a filter's or a release's view of the transaction
        view.emit("items.update", collection="posts", item_id="v1")
        await view.flush_events()
        assert woken == []
    assert woken == [(site, {("items.update", "posts")})]  # what it wrote, for the dispatcher's filters
    assert [(e.item_id, e.cause) for e in (await kernel.events.read_after(site)).events] == [("v1", "release:r2")]


async def test_a_rolled_back_write_leaves_no_event(svc_app, site):
    kernel = svc_app.kernel
    with pytest.raises(RuntimeError):
        async with kernel.unit_of_work(site) as uow:
            uow.emit("items.create", collection="posts", item_id="x")
            await uow.flush_events()  # written in the transaction, then rolled back with it
            raise RuntimeError("veto")
    assert (await kernel.events.read_after(site)).events == []


async def test_bad_emits_are_refused(svc_app, site):
    kernel = svc_app.kernel
    async with kernel.unit_of_work(site) as uow:
        for bad in ("items", "Items.create", "items.", "items create", "a" * 81 + ".x", 5):
            with pytest.raises(ValueError):
                uow.emit(bad)
    async with kernel.unit_of_work(None) as uow:
        with pytest.raises(RuntimeError):
            uow.emit("items.create")


async def test_paging_filters_and_cursor_tokens(svc_app, site):
    kernel = svc_app.kernel
    await emit(kernel, site, 5)
    await emit(kernel, site, 2, "fields.create", "tags")
    first = await kernel.events.read_after(site, limit=3)
    assert len(first.events) == 3 and first.has_more and first.next_cursor == first.events[-1].cursor
    rest = await kernel.events.read_after(site, str(first.next_cursor), limit=100)
    assert [e.item_id for e in first.events + rest.events] == ["i0", "i1", "i2", "i3", "i4", "i0", "i1"]
    assert Cursor.parse(str(first.next_cursor)) == first.next_cursor
    only = await kernel.events.read_after(site, types=["fields.*"])
    assert [e.type for e in only.events] == ["fields.create"] * 2
    by_collection = await kernel.events.read_after(site, collections=["posts"])
    assert len(by_collection.events) == 5
    assert by_collection.next_cursor == only.next_cursor == await kernel.events.head(site)  # past the rest
    # ``*.<operation>``: that operation of every resource (a "%" or "_" in it is literal).
    await emit(kernel, site, 1, "files.update", "posts")
    creates = await kernel.events.read_after(site, types=["*.create"])
    assert [e.type for e in creates.events] == ["items.create"] * 5 + ["fields.create"] * 2
    assert [e.type for e in (await kernel.events.read_after(site, types=["*.update"])).events] == ["files.update"]
    assert (await kernel.events.read_after(site, types=["*.%"])).events == []
    for token in ("", "12", "a-1", "1-b", "-1", "1--1", "1-2-3", "9" * 50):
        with pytest.raises(ValueError):
            await kernel.events.read_after(site, token)


async def test_reads_are_per_site(svc_app, site, site_b):
    kernel = svc_app.kernel
    await emit(kernel, site_b, 2, collection="secret")
    await emit(kernel, site, 1)
    in_a = await kernel.events.read_after(site)
    in_b = await kernel.events.read_after(site_b)
    assert {e.site_id for e in in_a.events} == {site} and [e.collection for e in in_a.events] == ["posts"]
    assert {e.site_id for e in in_b.events} == {site_b} and len(in_b.events) == 2
    # A site-B cursor used in site A reads nothing of B's.
    assert all(e.site_id == site for e in (await kernel.events.read_after(site, START, 1000)).events)


async def test_prune_keeps_recent_events_and_moves_the_earliest_cursor(make_app):
    svc_app, [calls] = await testing_shared.own_app(make_app)
    site = calls.headers["X-Svc-Site"]
    kernel = svc_app.kernel
    await emit(kernel, site, 4)
    old = (await kernel.events.read_after(site)).events
    async with kernel.db.begin() as conn:  # make the first three 8 days old
        await conn.execute(update(events).where(events.c.id.in_([e.id for e in old[:3]])).values(
            occurred_at=dt.datetime.now(dt.UTC) - dt.timedelta(days=8)))
    assert await kernel.events.earliest_cursor(site) == START
    assert await kernel.events.prune() == 3
    assert await kernel.events.earliest_cursor(site) == old[2].cursor
    assert await kernel.events.is_expired(site, old[0].cursor) and await kernel.events.is_expired(site, START)
    assert not await kernel.events.is_expired(site, old[2].cursor)
    assert [e.id for e in (await kernel.events.read_after(site, old[2].cursor)).events] == [old[3].id]
    assert await kernel.events.prune() == 0


async def test_prune_costs_the_same_at_5_and_50_idle_sites_and_keeps_other_sites_events(make_app):
    # Issue 27 ("scale"): one query finds the sites with an event to prune; an idle site costs
    # nothing. Each round: two old events in A, a recent one in B.
    svc_app, [calls, calls_b] = await testing_shared.own_app(make_app, 2)
    site, site_b = calls.headers["X-Svc-Site"], calls_b.headers["X-Svc-Site"]
    kernel = svc_app.kernel
    counts = []
    for idle in (5, 45):
        await add_idle_sites(kernel, idle)
        await emit(kernel, site, 2)
        await emit(kernel, site_b, 1)
        async with kernel.db.begin() as conn:
            await conn.execute(update(events).where(events.c.site_id == site).values(
                occurred_at=dt.datetime.now(dt.UTC) - dt.timedelta(days=8)))
        with counted_statements(kernel) as seen:
            assert await kernel.events.prune() == 2
        counts.append(len(seen))
    assert counts[0] == counts[1]
    assert len((await kernel.events.read_after(site_b)).events) == 2  # B's events are recent: kept
    assert await kernel.events.earliest_cursor(site_b) == START


async def test_deleting_a_site_removes_its_events(svc_app, site, site_b, admin_headers):
    kernel = svc_app.kernel
    await emit(kernel, site, 2)
    await emit(kernel, site_b, 1)
    resp = await svc_app.client.delete(f"/api/v1/sites/{site}", headers=admin_headers)
    assert resp.status_code == 204
    async with kernel.db.connect() as conn:
        left = set((await conn.execute(select(events.c.site_id).where(events.c.site_id.in_([site, site_b]))))
                   .scalars())
    assert left == {site_b}
