"""-- govern43: GET /work lists a site's long work (here a release's publish) with its progress, for
the site's admins only: another site's admin sees none of it, a member is refused."""

from __future__ import annotations

from kernel.testing import Calls
from plugin_tests.releases.conftest import draft_posts, release


async def test_a_publish_is_listed_with_its_progress_and_outcome(calls, calls_b, svc_app, site, make_member):
    assert await calls.ok("get", "/work") == []
    a, b, c = await draft_posts(calls, "a", "b", "c")
    rel = await release(calls, [a, b, c], atomicityMode="best_effort", name="Autumn")
    await calls.ok("post", f"/releases/{rel['id']}/publish")
    [done] = await calls.ok("get", "/work")
    assert {k: done[k] for k in ("kind", "label", "target", "status", "done", "total", "error")} == {
        "kind": "publish", "label": "Autumn", "target": {"type": "release", "id": rel["id"]},
        "status": "done", "done": 3, "total": 3, "error": None}
    assert done["startedBy"]["email"] and done["finishedAt"] >= done["startedAt"]

    # A publish whose items fail ends failed, saying how many.
    d, e = await draft_posts(calls, "d", "e")
    blocked = await release(calls, [d, e], name="Blocked")
    await calls.ok("delete", f"/items/posts/{e}", status=204)
    assert (await calls.ok("post", f"/releases/{blocked['id']}/publish"))["status"] == "failed"
    latest = (await calls.ok("get", "/work"))[0]
    assert (latest["label"], latest["status"], latest["error"]) == (
        "Blocked", "failed", "failed: 2 of 2 items not published")
    assert [w["label"] for w in await calls.ok("get", "/work", params={"status": "done"})] == ["Autumn"]
    assert [w["label"] for w in await calls.ok("get", "/work", params={"limit": 1})] == ["Blocked"]
    await calls.err("get", "/work", 400, "VALIDATION_FAILED", ["query", "status"], params={"status": "nope"})
    await calls.err("get", "/work", 400, "VALIDATION_FAILED", params={"limit": 0})

    # Another site's admin sees none of it; a member (not an admin) and nobody are refused.
    assert await calls_b.ok("get", "/work") == []
    admin_b = await make_member(calls_b.headers["X-Svc-Site"], role="admin")
    assert await Calls(svc_app.client, admin_b.headers).ok("get", "/work") == []
    admin_a = await make_member(site, role="admin")
    assert len(await Calls(svc_app.client, admin_a.headers).ok("get", "/work")) == 2
    member = await make_member(site)
    await Calls(svc_app.client, member.headers).err("get", "/work", 403, "PERMISSION_DENIED")
    await Calls(svc_app.client, {"X-Svc-Site": site}).err("get", "/work", 401, "UNAUTHENTICATED")


async def test_a_rollback_is_listed_and_a_record_whose_process_died_ends_failed(calls, calls_b, svc_app, site):
    # -- more43: a rollback records itself like a publish; a running record nobody touched for
    # STALE_AFTER (its process died) is failed, with the reason, when the work is listed.
    import datetime as dt

    from sqlalchemy import update

    from kernel.admin import work as work_log

    a, b = await draft_posts(calls, "a", "b")
    rel = await release(calls, [a, b], name="Winter")
    await calls.ok("post", f"/releases/{rel['id']}/publish")
    await calls.ok("post", f"/releases/{rel['id']}/rollback")
    back = (await calls.ok("get", "/work"))[0]
    assert {k: back[k] for k in ("kind", "label", "target", "status", "done", "total", "error")} == {
        "kind": "rollback", "label": "Winter", "target": {"type": "release", "id": rel["id"]},
        "status": "done", "done": 2, "total": 2, "error": None}
    await calls.err("post", f"/releases/{rel['id']}/rollback", 409, "RELEASE_NOT_PUBLISHED")
    refused = (await calls.ok("get", "/work"))[0]
    assert (refused["kind"], refused["status"]) == ("rollback", "failed") and refused["error"]

    kernel = svc_app.kernel
    lost = await kernel.work.start(site, "migration", "Envelope migration", None)
    alive = await kernel.work.start(site, "backfill", "Still going", None)
    theirs = await kernel.work.start(calls_b.headers["X-Svc-Site"], "migration", "Other site's", None)
    async with kernel.db.begin() as conn:
        old = dt.datetime.now(dt.UTC) - work_log.STALE_AFTER - dt.timedelta(seconds=5)
        await conn.execute(update(work_log.work).where(work_log.work.c.id.in_([lost.id, theirs.id]))
                           .values(updated_at=old))
    listed = {w["id"]: w for w in await calls.ok("get", "/work")}
    assert listed[lost.id]["status"] == "failed" and listed[lost.id]["finishedAt"]
    assert listed[lost.id]["error"] == "Stopped: the process running it ended (no progress or heartbeat for 5 minutes)"
    assert listed[alive.id]["status"] == "running"
    # The other site's stale record is swept when that site's work is read, not by this site's.
    async with kernel.db.connect() as conn:
        status = (await conn.execute(work_log.select(work_log.work.c.status).where(
            work_log.work.c.id == theirs.id))).scalar()
    assert status == "running"
    [other] = await calls_b.ok("get", "/work")
    assert other["status"] == "failed"
