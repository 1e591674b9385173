"""A poison batch: after ``SVC_STORE_SYNC_MAX_ATTEMPTS`` failed attempts the batch is set aside on
the pipeline's dead-letter list (later changes flow again), the studio gets a notification, and
the batch can be replayed or discarded; against the local Realtime Database server."""

from __future__ import annotations

import asyncio
import datetime as dt

from kernel.db.meta import now_utc
from kernel.testing import Calls, add_idle_sites, counted_statements, disabled_with_dependents
from plugins.store_sync.dead_letters import PRUNE_JOB, prune_job
from plugins.store_sync.tables import dead_letters

from .store_sync_helpers import PIPES, RTDB_SECRET, env_for, grant_public_read, log_of, until


async def make_site(app, admin):
    site = await app.create_site(admin)
    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    await calls.collection("posts", {"title": "string"})
    await grant_public_read(calls, "posts")
    return calls


async def pipeline(calls, rtdb):
    body = {
        "name": "rt",
        "target": "rtdb",
        "collections": ["posts"],
        "credentials": {"databaseUrl": rtdb.url("/db"), "secret": RTDB_SECRET},
    }
    return await calls.ok("post", PIPES, status=201, json=body)


async def _aged(app, letter_id: str, days: float) -> None:
    """Move a dead letter's last attempt ``days`` into the past (a moved clock, not the wall clock)."""
    async with app.kernel.db.begin() as conn:
        await conn.execute(dead_letters.update().where(dead_letters.c.id == letter_id)
                           .values(updated_at=now_utc() - dt.timedelta(days=days)))


async def _one_dead_letter(calls, rtdb) -> str:
    """A poison batch of a new pipeline of the site, set aside; the dead letters' path."""
    made = await pipeline(calls, rtdb)
    rtdb.fail_next, rtdb.fail_status = 1, 400
    await calls.create("posts", {"title": "poison"})
    await log_of(calls, made["id"], lambda entries: len(entries) == 1)
    path = f"{PIPES}/{made['id']}/dead-letters"
    for _ in range(500):  # set aside right after the attempt's log entry
        if await calls.ok("get", path):
            break
        await asyncio.sleep(0.02)
    return path


async def test_a_poison_batch_is_set_aside_notified_and_replayed(make_app, rtdb):
    app = await make_app(env={**env_for(None), "SVC_STORE_SYNC_MAX_ATTEMPTS": "3"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    calls, calls_b = await make_site(app, admin), await make_site(app, admin)
    made = await pipeline(calls, rtdb)
    letters = f"{PIPES}/{made['id']}/dead-letters"
    rtdb.fail_next, rtdb.fail_status = 3, 400  # the target refuses this batch three times
    a = await calls.create("posts", {"title": "poison"})
    await log_of(calls, made["id"], lambda entries: len(entries) == 3)
    b = await calls.create("posts", {"title": "after"})  # later changes flow again
    await until(lambda: f"db/posts/{b['id']}" in rtdb.tree)
    assert f"db/posts/{a['id']}" not in rtdb.tree

    [letter] = await calls.ok("get", letters)
    assert letter["status"] == "pending" and letter["attempts"] == 3 and letter["eventCount"] == 1
    assert letter["items"] == [{"collection": "posts", "itemId": a["id"], "event": "items.create"}]
    assert "HTTP 400" in letter["error"] and letter["replayedAt"] is None
    assert "poison" not in str(letter)  # identifiers only, never values
    notes = await calls.ok("get", "/notifications")
    [note] = [n for n in notes if n["kind"] == "store_sync.dead_letter"]
    assert note["entityId"] == letter["id"] and note["severity"] == "error"
    assert note["deepLink"] == f"/store-sync/pipelines/{made['id']}/dead-letters"

    # Another site sees none of it.
    await calls_b.err("get", letters, 404, "RECORD_NOT_FOUND")
    await calls_b.err("post", f"{letters}/{letter['id']}/replay", 404, "RECORD_NOT_FOUND")
    assert not [n for n in await calls_b.ok("get", "/notifications") if n["kind"] == "store_sync.dead_letter"]

    # A replay the target still refuses stays pending with the new error; the next one goes through.
    await calls.ok("patch", f"/items/posts/{a['id']}", json={"title": "fixed"})
    await until(lambda: f"db/posts/{a['id']}" in rtdb.tree)
    del rtdb.tree[f"db/posts/{a['id']}"]
    rtdb.fail_next = 1
    again = await calls.ok("post", f"{letters}/{letter['id']}/replay")
    assert again["status"] == "pending" and again["attempts"] == 4 and "HTTP 400" in again["error"]
    done = await calls.ok("post", f"{letters}/{letter['id']}/replay")
    assert done["status"] == "replayed" and done["attempts"] == 5 and done["replayedAt"] is not None
    assert rtdb.tree[f"db/posts/{a['id']}"]["title"] == "fixed"  # the item as it is now
    await calls.err("post", f"{letters}/{letter['id']}/replay", 409, "CONFLICT")
    log = await calls.ok("get", f"{PIPES}/{made['id']}/log")
    assert [e["kind"] for e in log[:2]] == ["replay", "replay"]
    assert [e["status"] for e in log[:2]] == ["ok", "failed"]
    assert (await calls.ok("get", letters, params={"status": "pending"})) == []

    await calls.ok("delete", f"{letters}/{letter['id']}", status=204)
    await calls.err("get", f"{letters}/{letter['id']}", 404, "RECORD_NOT_FOUND")
    await calls.err("get", letters, 400, "VALIDATION_FAILED", params={"status": "bogus"})


async def test_without_a_limit_a_batch_is_retried_until_it_passes(make_app, rtdb):
    app = await make_app(env={**env_for(None), "SVC_STORE_SYNC_MAX_ATTEMPTS": "0"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    calls = await make_site(app, admin)
    made = await pipeline(calls, rtdb)
    rtdb.fail_next, rtdb.fail_status = 5, 400
    a = await calls.create("posts", {"title": "patient"})
    await until(lambda: f"db/posts/{a['id']}" in rtdb.tree)
    assert await calls.ok("get", f"{PIPES}/{made['id']}/dead-letters") == []


# -- close40: dead letters are pruned past their horizon (a moved clock, not the wall clock)
async def test_dead_letters_are_pruned_past_their_horizon(make_app, rtdb):
    from plugins.privacy import retention

    app = await make_app(env={**env_for(None), "SVC_STORE_SYNC_MAX_ATTEMPTS": "1",
                              "SVC_STORE_SYNC_DEAD_LETTER_DAYS": "10"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    calls, calls_b = await make_site(app, admin), await make_site(app, admin)
    site, site_b = calls.headers["X-Svc-Site"], calls_b.headers["X-Svc-Site"]
    letters = [await _one_dead_letter(c, rtdb) for c in (calls, calls_b)]
    for c, path in zip((calls, calls_b), letters, strict=True):
        assert len(await c.ok("get", path)) == 1
    horizon = {h["target"]: h for h in await calls.ok("get", "/retention")}["storeSyncDeadLetters"]
    assert (horizon["days"], horizon["default"], horizon["source"]) == (10, 10, "default")
    # B keeps its dead letters longer.
    await calls_b.ok("put", "/settings/retention", json={"value": {"storeSyncDeadLetters": 40}})
    overrides = {site_b: {"storeSyncDeadLetters": 40}}

    now = now_utc()
    due = await retention.due_targets(app.kernel, now + dt.timedelta(days=9), overrides)
    assert "storeSyncDeadLetters" not in due.get(site, set())
    assert "storeSyncDeadLetters" not in due.get(site_b, set())
    later = now + dt.timedelta(days=11)
    due = await retention.due_targets(app.kernel, later, overrides)
    assert "storeSyncDeadLetters" in due[site] and "storeSyncDeadLetters" not in due.get(site_b, set())
    early = await retention.run_site(app.kernel, site, now=now + dt.timedelta(days=9))
    assert early["deleted"]["storeSyncDeadLetters"] == 0
    done = await retention.run_site(app.kernel, site, now=later)
    assert done["deleted"]["storeSyncDeadLetters"] == 1
    assert await calls.ok("get", letters[0]) == []
    run_b = await retention.run_site(app.kernel, site_b, now=later, configured=overrides[site_b])
    assert run_b["deleted"]["storeSyncDeadLetters"] == 0
    assert len(await calls_b.ok("get", letters[1])) == 1  # B's horizon (40 days), and A's run never touched B
    audit = await calls.ok("get", "/audit", params={"action": "retention_run"})
    assert [a["details"]["storeSyncDeadLetters"] for a in audit] == [1, 0]
    # -- gaps40: with the privacy plugin, store sync's own job leaves the target to it (B's 40
    # days hold past the default 10).
    [kept] = await calls_b.ok("get", letters[1])
    await _aged(app, kept["id"], 11)
    assert await prune_job(app.kernel) == 0
    assert len(await calls_b.ok("get", letters[1])) == 1


# -- gaps40: without the privacy plugin, the hourly job store_sync.dead_letters prunes them
async def test_without_the_privacy_plugin_the_jobs_prune_dead_letters_past_the_default(make_app, rtdb,
                                                                                       run_due_jobs):
    app = await make_app(env={**env_for(None), "SVC_STORE_SYNC_MAX_ATTEMPTS": "1",
                              "SVC_STORE_SYNC_DEAD_LETTER_DAYS": "10",
                              "SVC_PLUGINS_DISABLED": disabled_with_dependents("privacy")})
    assert "privacy" not in {p.name for p in app.kernel.plugins if p.enabled}
    assert PRUNE_JOB in {j["name"] for j in app.kernel.jobs.registered()}
    admin = {"Authorization": f"Bearer {await app.login()}"}
    calls, calls_b = await make_site(app, admin), await make_site(app, admin)
    old, recent = await _one_dead_letter(calls, rtdb), await _one_dead_letter(calls_b, rtdb)
    [old_letter], [recent_letter] = await calls.ok("get", old), await calls_b.ok("get", recent)
    await _aged(app, old_letter["id"], 10.5)
    await _aged(app, recent_letter["id"], 9.5)

    runs = await run_due_jobs(app)  # the periodic ticks, through the job queue
    assert PRUNE_JOB in [r.name for r in runs if r.ok]
    assert await calls.ok("get", old) == []  # past 10 days: gone
    assert [d["id"] for d in await calls_b.ok("get", recent)] == [recent_letter["id"]]  # 9.5 days: kept
    # Issue 27 ("scale"): idle sites cost the job nothing (one query across sites finds who holds any).
    counts = []
    for idle in (5, 45):
        await add_idle_sites(app.kernel, idle)
        with counted_statements(app.kernel) as seen:
            assert await prune_job(app.kernel) == 0
        counts.append(len(seen))
    assert counts[0] == counts[1]
