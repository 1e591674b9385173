"""Backfill: every matching item the role reads, in pages, bounded per call and resumable;
``{ scanned, pushed, failed, truncated }``; ``lastSyncAt``/``lastSyncItemCount``; bad bodies."""

from __future__ import annotations

import pytest_asyncio

from .store_sync_helpers import PIPES, RTDB_SECRET, env_for, grant_public_read, service_account


@pytest_asyncio.fixture
async def svc_app(make_app, google):
    # Three items per call, so that a few items show the bound and the resume.
    return await make_app(env={**env_for(google), "SVC_STORE_SYNC_BACKFILL_MAX": "3"})


async def seed(calls):
    await calls.collection("posts", {"title": "string"})
    await calls.collection("pages", {"title": "string"})
    await grant_public_read(calls, "posts", conditions={"title": {"_neq": "hidden"}})
    await grant_public_read(calls, "pages")
    posts = [await calls.create("posts", {"title": f"p{i}"}) for i in range(4)]
    await calls.create("posts", {"title": "hidden"})
    pages = [await calls.create("pages", {"title": f"g{i}"}) for i in range(2)]
    return posts, pages


async def test_backfill_pages_through_every_collection_and_resumes(calls, rtdb):
    posts, pages = await seed(calls)
    made = await calls.ok("post", PIPES, status=201, json={
        "name": "rt", "target": "rtdb", "credentials": {"databaseUrl": rtdb.url(), "secret": RTDB_SECRET},
        "collections": ["posts", "pages"], "syncOnCreate": False, "syncOnUpdate": False, "syncOnDelete": False})
    one = f"{PIPES}/{made['id']}/backfill"
    first = await calls.ok("post", one)
    assert first == {"scanned": 3, "pushed": 3, "failed": 0, "truncated": True}
    assert (await calls.ok("get", f"{PIPES}/{made['id']}"))["backfillPending"] is True
    second = await calls.ok("post", one, json={})
    assert second == {"scanned": 3, "pushed": 3, "failed": 0, "truncated": False}
    expected = {f"posts/{p['id']}" for p in posts} | {f"pages/{p['id']}" for p in pages}
    assert set(rtdb.tree) == expected  # the hidden post is not the role's to read
    detail = await calls.ok("get", f"{PIPES}/{made['id']}")
    assert detail["lastSyncAt"] is not None and detail["lastSyncItemCount"] == 3 and not detail["backfillPending"]
    # A restart from the beginning pushes the first page again.
    again = await calls.ok("post", one, json={"restart": True})
    assert again["scanned"] == 3 and again["truncated"] is True
    log = await calls.ok("get", f"{PIPES}/{made['id']}/log")
    assert [e["kind"] for e in log] == ["backfill"] * 3 and [e["pushed"] for e in log] == [3, 3, 3]


async def test_a_failing_target_counts_failed_and_resumes_at_the_failed_page(calls, google):
    posts, _ = await seed(calls)
    made = await calls.ok("post", PIPES, status=201, json={
        "name": "fs", "target": "docstore", "credentials": service_account(google), "collections": ["posts"]})
    one = f"{PIPES}/{made['id']}/backfill"
    google.fail_next = 1
    failed = await calls.ok("post", one)
    assert failed == {"scanned": 3, "pushed": 0, "failed": 3, "truncated": True}
    detail = await calls.ok("get", f"{PIPES}/{made['id']}")
    assert "HTTP 503" in detail["lastError"] and detail["lastSyncAt"] is None
    resumed = await calls.ok("post", one)
    assert resumed == {"scanned": 3, "pushed": 3, "failed": 0, "truncated": True}
    rest = await calls.ok("post", one)
    assert rest == {"scanned": 1, "pushed": 1, "failed": 0, "truncated": False}
    assert set(google.documents) == {f"posts/{p['id']}" for p in posts}
    assert (await calls.ok("get", f"{PIPES}/{made['id']}"))["lastSyncItemCount"] == 1


async def test_backfill_bodies(calls, rtdb):
    made = await calls.ok("post", PIPES, status=201, json={
        "name": "rt", "target": "rtdb", "credentials": {"databaseUrl": rtdb.url(), "secret": RTDB_SECRET},
        "collections": ["posts"]})
    one = f"{PIPES}/{made['id']}/backfill"
    for bad in ({"restart": "yes"}, {"cursor": 1}, [], "x", 3):
        await calls.err("post", one, 400, "VALIDATION_ERROR", json=bad)
    await calls.err("post", one, 400, "VALIDATION_FAILED", content=b"{not json",
                    headers={"Content-Type": "application/json"})
    await calls.err("post", f"{PIPES}/nope/backfill", 404, "RECORD_NOT_FOUND", json={})
    # A collection that does not exist (yet) has nothing to push.
    assert await calls.ok("post", one) == {"scanned": 0, "pushed": 0, "failed": 0, "truncated": False}


async def test_backfill_waits_for_a_running_sync_attempt(calls, rtdb, svc_app, site, monkeypatch):
    """The backfill holds the live sync's lease; while a sync attempt holds it, the backfill
    waits, and answers 409 when it does not end."""
    from kernel.events import checkpoints
    from plugins.store_sync import backfill

    await seed(calls)
    made = await calls.ok("post", PIPES, status=201, json={
        "name": "rt", "target": "rtdb", "credentials": {"databaseUrl": rtdb.url(), "secret": RTDB_SECRET},
        "collections": ["posts"]})
    monkeypatch.setattr(backfill, "BUSY_WAIT", 0.2)
    name = f"store_sync:{made['id']}"
    held = await checkpoints.claim(svc_app.kernel.db, site, name, "another-worker", 60.0)
    assert held is not None
    await calls.err("post", f"{PIPES}/{made['id']}/backfill", 409, "CONFLICT")
    assert not rtdb.requests
    await checkpoints.ack(svc_app.kernel.db, held, held.cursor, 0.0, release=True)
    assert (await calls.ok("post", f"{PIPES}/{made['id']}/backfill"))["pushed"] == 3
    state = await svc_app.kernel.events.checkpoint(site, name)
    # Released (the dispatcher may have taken it since), never moved backwards.
    assert not str(state["leaseOwner"]).startswith("backfill-") and state["cursor"] >= held.cursor
