"""A pipeline deleted between a dispatcher's listing of it and its run (the interleaving behind
the rare ``test_delete_cascades_the_log`` failure: the checkpoint made again at the start of the
log after the delete committed). The app's own dispatcher is off; each test drives a dispatcher
of its own step by step, in the order that lost."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio

from kernel import ApiError
from kernel.events.dispatch import Dispatcher
from plugins.store_sync import backfill, sync
from plugins.store_sync import pipelines as pl

from .store_sync_helpers import PIPES, RTDB_SECRET, env_for, grant_public_read


@pytest_asyncio.fixture
async def svc_app(make_app, google):
    return await make_app(env={**env_for(google), "SVC_EVENTS_DISPATCH": "false"})


def rtdb_body(rtdb):
    return {"name": "rt", "target": "rtdb", "credentials": {"databaseUrl": rtdb.url(), "secret": RTDB_SECRET},
            "collections": ["posts"]}


async def listed(kernel, site: str) -> Dispatcher:
    """A dispatcher (not started) that has listed the site's pipelines, as one does on a wake."""
    assert kernel.events.dispatcher is None
    dispatcher = Dispatcher(kernel, [], [kernel.events.groups[pl.GROUP]])
    dispatcher._loop = asyncio.get_running_loop()  # for its retry timers; no loop task runs
    await dispatcher._list_members(site, pl.GROUP)
    return dispatcher


async def test_a_run_listed_before_the_delete_makes_no_checkpoint_again(calls, svc_app, site, rtdb):
    kernel = svc_app.kernel
    await calls.collection("posts", {"title": "string"})
    await grant_public_read(calls, "posts")
    made = await calls.ok("post", PIPES, status=201, json=rtdb_body(rtdb))
    name = pl.checkpoint_name(made["id"])
    await calls.create("posts", {"title": "one"})
    dispatcher = await listed(kernel, site)
    member = dispatcher._members[name]
    assert await dispatcher.run_once(site, member) == 1 and len(rtdb.writes) == 1
    try:
        await calls.ok("delete", f"{PIPES}/{made['id']}", status=204)
        assert await kernel.events.checkpoint(site, name) is None
        # The run the listing started (a wake, a retry, a dead lease) comes after the delete.
        assert await dispatcher.run_once(site, member) == 0
        assert await kernel.events.checkpoint(site, name) is None
        assert len(rtdb.writes) == 1
        # Forgotten: no retry is waiting to claim it again.
        assert name not in dispatcher._members and not dispatcher._timers
    finally:
        await dispatcher.stop()


async def test_a_pipeline_deleted_before_its_first_event_leaves_no_checkpoint(calls, svc_app, site, rtdb):
    """No item event yet: a claim that made the checkpoint again found nothing to hand over, so
    no handler ran to drop it, and it stayed for good at the start of the log."""
    kernel = svc_app.kernel
    made = await calls.ok("post", PIPES, status=201, json=rtdb_body(rtdb))
    name = pl.checkpoint_name(made["id"])
    dispatcher = await listed(kernel, site)
    member = dispatcher._members[name]
    try:
        await calls.ok("delete", f"{PIPES}/{made['id']}", status=204)
        await dispatcher.run_once(site, member)
        assert await kernel.events.checkpoint(site, name) is None
        await dispatcher._dispatch_pair(site, name)  # the pair marked again: nothing to run
        assert await kernel.events.checkpoint(site, name) is None
    finally:
        await dispatcher.stop()
    assert rtdb.writes == []


async def test_a_backfill_of_a_pipeline_deleted_meanwhile_answers_404_and_leaves_nothing(calls, svc_app, site,
                                                                                         rtdb):
    kernel = svc_app.kernel
    made = await calls.ok("post", PIPES, status=201, json=rtdb_body(rtdb))
    name = pl.checkpoint_name(made["id"])
    row = await sync._pipeline(kernel, site, made["id"])  # the backfill read the pipeline...
    await calls.ok("delete", f"{PIPES}/{made['id']}", status=204)  # ...then it was deleted
    with pytest.raises(ApiError) as raised:
        await backfill._hold(kernel, row)
    assert raised.value.status == 404
    assert await kernel.events.checkpoint(site, name) is None
