"""The scheduler: a scheduled release publishes when due through the kernel's jobs, once,
across restarts and workers, inside its maintenance window in the site's time zone; moving or
clearing publishAt moves or cancels the run; a failed scheduled publish notifies the studio."""

from __future__ import annotations

import asyncio
import datetime as dt

from kernel.db.meta import now_utc
from kernel.testing import Calls
from plugin_tests.releases.conftest import draft_posts, release, statuses, studio_member

R = "/releases"


def at(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


async def pending_runs(kernel) -> int:
    status = await kernel.jobs.status()
    return next((j["pending"] for j in status["jobs"] if j["name"] == "releases.publish"), 0)


async def test_a_due_release_publishes_once_and_moves_the_content_version(svc_app, calls, run_due_jobs, site):
    a, b = await draft_posts(calls, "a", "b")
    when = now_utc() + dt.timedelta(hours=2)
    rel = await release(calls, [a, b], publishAt=when.isoformat())
    assert rel["status"] == "scheduled" and at(rel["nextRunAt"]) == when
    head = await svc_app.kernel.events.head(site)

    await run_due_jobs(svc_app, now=when - dt.timedelta(seconds=1), periodic=False)
    assert await statuses(calls, [a, b]) == ["draft", "draft"]
    runs = await run_due_jobs(svc_app, now=when, periodic=False)
    assert [r.ok for r in runs] == [True]
    assert await statuses(calls, [a, b]) == ["published", "published"]
    detail = await calls.ok("get", f"{R}/{rel['id']}")
    assert detail["status"] == "published" and detail["nextRunAt"] is None
    assert [e["outcome"] for e in detail["items"]] == ["published", "published"]
    # The durable events of the publish (what the delivery fingerprint follows) name the release.
    assert await svc_app.kernel.events.head(site) != head
    page = await svc_app.kernel.events.read_after(site, head)
    caused = [e for e in page.events if e.type == "items.update" and e.cause == f"release:{rel['id']}"]
    assert sorted(e.item_id for e in caused) == sorted([a, b])
    assert await run_due_jobs(svc_app, now=when + dt.timedelta(hours=1), periodic=False) == []


async def test_changing_or_clearing_publish_at_moves_or_cancels_the_run(svc_app, calls, run_due_jobs):
    [a] = await draft_posts(calls, "a")
    first = now_utc() + dt.timedelta(hours=1)
    rel = await release(calls, [a], publishAt=first.isoformat())
    moved = first + dt.timedelta(hours=3)
    changed = await calls.ok("patch", f"{R}/{rel['id']}", json={"publishAt": moved.isoformat()})
    assert at(changed["nextRunAt"]) == moved and await pending_runs(svc_app.kernel) == 1
    await run_due_jobs(svc_app, now=first + dt.timedelta(minutes=1), periodic=False)
    assert await statuses(calls, [a]) == ["draft"]

    cleared = await calls.ok("patch", f"{R}/{rel['id']}", json={"publishAt": None})
    assert cleared["status"] == "draft" and await pending_runs(svc_app.kernel) == 0
    await run_due_jobs(svc_app, now=moved + dt.timedelta(minutes=1), periodic=False)
    assert await statuses(calls, [a]) == ["draft"]

    # Scheduling again, then deleting the release, cancels the run too.
    await calls.ok("patch", f"{R}/{rel['id']}", json={"publishAt": moved.isoformat()})
    assert await pending_runs(svc_app.kernel) == 1
    await calls.ok("delete", f"{R}/{rel['id']}", status=204)
    assert await pending_runs(svc_app.kernel) == 0


async def test_a_due_release_waits_for_its_window_in_the_sites_time_zone(svc_app, calls, run_due_jobs):
    await calls.ok("put", "/settings/releases.timezone", json={"value": "America/New_York"})
    await calls.err("put", "/settings/releases.timezone", 400, "VALIDATION_FAILED", json={"value": "Mars/Olympus"})
    [a] = await draft_posts(calls, "a")
    # Due next Wednesday 12:00 UTC; the window is Saturday 01:00-03:00 in New York.
    now = now_utc()
    wednesday = (now + dt.timedelta(days=(2 - now.weekday()) % 7 + 7)).replace(hour=12, minute=0, second=0,
                                                                                 microsecond=0)
    window = {"windows": [{"dow": 6, "start": "01:00", "end": "03:00"}]}
    rel = await release(calls, [a], publishAt=wednesday.isoformat(), maintenanceWindow=window)
    saturday_ny = (wednesday + dt.timedelta(days=3)).replace(hour=1)  # 01:00 in New York, as a date
    from zoneinfo import ZoneInfo

    opening = dt.datetime(saturday_ny.year, saturday_ny.month, saturday_ny.day, 1, 0,
                          tzinfo=ZoneInfo("America/New_York")).astimezone(dt.UTC)
    assert at(rel["nextRunAt"]) == opening
    await run_due_jobs(svc_app, now=wednesday, periodic=False)
    assert await statuses(calls, [a]) == ["draft"]

    # The window changes while waiting: the run moves with it, and a run at a stale time does nothing.
    window2 = {"windows": [{"dow": 4, "start": "00:00", "end": "24:00"}]}  # all of Thursday
    changed = await calls.ok("patch", f"{R}/{rel['id']}", json={"maintenanceWindow": window2})
    thursday = dt.datetime(wednesday.year, wednesday.month, wednesday.day, tzinfo=ZoneInfo("America/New_York")) \
        + dt.timedelta(days=1)
    assert at(changed["nextRunAt"]) == thursday.astimezone(dt.UTC)
    await run_due_jobs(svc_app, now=thursday.astimezone(dt.UTC) + dt.timedelta(minutes=5), periodic=False)
    assert await statuses(calls, [a]) == ["published"]


async def test_a_scheduled_run_that_finds_the_window_closed_waits_for_the_next(svc_app, calls, run_due_jobs):
    """A run claimed late (the worker was down) re-checks the window at the moment it runs."""
    from plugins.releases import jobs

    [a] = await draft_posts(calls, "a")
    when = (now_utc() + dt.timedelta(days=1)).replace(hour=10, minute=0, second=0, microsecond=0)
    day = (when.weekday() + 1) % 7
    start, end = "10:00", "10:30"
    window = {"windows": [{"dow": day, "start": start, "end": end}]}
    rel = await release(calls, [a], publishAt=when.isoformat(), maintenanceWindow=window)
    late = when + dt.timedelta(hours=2)
    await jobs.run(svc_app.kernel, calls.headers["X-Svc-Site"], rel["id"], due_at=late.isoformat())
    detail = await calls.ok("get", f"{R}/{rel['id']}")
    assert detail["status"] == "scheduled" and at(detail["nextRunAt"]) > late
    assert (at(detail["nextRunAt"]) - when).days in (6, 7)


async def test_a_failed_scheduled_publish_notifies_the_studio(svc_app, calls, run_due_jobs):
    a, b = await draft_posts(calls, "a", "b")
    when = now_utc() + dt.timedelta(hours=1)
    rel = await release(calls, [a, b], publishAt=when.isoformat())
    await calls.ok("delete", f"/items/posts/{b}", status=204)
    await run_due_jobs(svc_app, now=when, periodic=False)
    detail = await calls.ok("get", f"{R}/{rel['id']}")
    assert detail["status"] == "failed" and await statuses(calls, [a]) == ["draft"]
    notes = await calls.ok("get", "/notifications")
    [note] = [n for n in notes if n["entityId"] == rel["id"]]
    assert note["kind"] == "release.failed" and note["severity"] == "error"
    assert "ITEM_DELETED" in note["body"] and note["deepLink"] == f"/releases/{rel['id']}"


async def test_a_scheduler_whose_access_is_gone_publishes_nothing(svc_app, site, calls, make_member, run_due_jobs):
    [a] = await draft_posts(calls, "a")
    editor = await studio_member(svc_app, site, calls, make_member, [
        {"collection": "posts", "action": "read"}, {"collection": "posts", "action": "update"}])
    mine = Calls(svc_app.client, editor.headers)
    when = now_utc() + dt.timedelta(hours=1)
    rel = await release(mine, [a], publishAt=when.isoformat())
    await calls.ok("patch", f"/users/{editor.id}", json={"status": "suspended"})
    await run_due_jobs(svc_app, now=when, periodic=False)
    detail = await calls.ok("get", f"{R}/{rel['id']}")
    assert detail["status"] == "failed" and "can no longer publish" in detail["lastError"]
    assert await statuses(calls, [a]) == ["draft"]


async def test_survives_a_restart_and_two_workers_run_it_once(make_app, tmp_path, run_due_jobs):
    shared = tmp_path / "shared"
    first = await make_app(data_dir=shared)
    headers = {"Authorization": f"Bearer {await first.login()}", "X-Svc-Site": "default"}
    calls = Calls(first.client, headers)
    ids = await draft_posts(calls, "a", "b", "c")
    when = now_utc() + dt.timedelta(hours=1)
    rel = await release(calls, ids, publishAt=when.isoformat())
    assert await run_due_jobs(first, now=when - dt.timedelta(minutes=1), periodic=False) == []

    # A restart: two new apps on the same database, as two workers claiming at the same moment.
    one = await make_app(data_dir=shared)
    two = await make_app(data_dir=shared)
    runs = await asyncio.gather(run_due_jobs(one, now=when, periodic=False), run_due_jobs(two, now=when, periodic=False))
    assert sorted(len(r) for r in runs) == [0, 1] and all(run.ok for r in runs for run in r)
    calls_one = Calls(one.client, {**headers, "Authorization": f"Bearer {await one.login()}"})
    assert await statuses(calls_one, ids) == ["published"] * 3
    for item_id in ids:
        revisions = await calls_one.ok("get", f"/items/posts/{item_id}/revisions")
        assert len([r for r in revisions if r.get("causedBy") == f"release:{rel['id']}"]) == 1
    detail = await calls_one.ok("get", f"{R}/{rel['id']}")
    assert detail["status"] == "published"
