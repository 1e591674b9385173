"""``GET /retention`` and ``POST /retention/run``: every owning plugin's target, the site
setting ``retention``, what a run prunes (and what it keeps), the daily job, cross-tenant."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import update

from kernel.policy.audit import audit_log
from kernel.testing import Calls, add_idle_sites, counted_statements

TARGETS = ["activity", "agentActions", "aiConversations", "audit", "changeFeedEvents", "flowRuns", "notifications", "revisions",
           "storeSyncDeadLetters"]


async def test_horizons_list_every_target_with_its_default(shared_site):
    horizons = await shared_site.calls.ok("get", "/retention")
    assert [h["target"] for h in horizons] == TARGETS
    by = {h["target"]: h for h in horizons}
    assert by["audit"]["days"] == 365 and by["audit"]["source"] == "default"
    assert by["changeFeedEvents"]["default"] == 7 and by["flowRuns"]["default"] == 30
    assert by["notifications"]["days"] == 30 and by["activity"]["days"] == 90 and by["revisions"]["days"] == 365


@pytest.mark.parametrize("value", [
    {"audit": 0}, {"audit": "30"}, {"audit": True}, {"audit": 36_501}, {"nope": 3}, [], "30",
])
async def test_bad_retention_settings_are_400(shared_site, value):
    await shared_site.calls.err("put", "/settings/retention", 400, "VALIDATION_FAILED", json={"value": value})


async def test_retention_routes_are_admin_only_and_take_no_body(shared_site):
    member = await shared_site.member()
    await member.err("get", "/retention", 403, "PERMISSION_DENIED")
    await member.err("post", "/retention/run", 403, "PERMISSION_DENIED")
    await shared_site.calls.err("post", "/retention/run", 400, "VALIDATION_FAILED", json={"audit": 1})


async def _age(kernel, table, column, days: int, **where) -> None:
    old = dt.datetime.now(dt.UTC) - dt.timedelta(days=days)
    async with kernel.db.begin() as conn:
        stmt = update(table).values({column: old})
        for name, value in where.items():
            stmt = stmt.where(table.c[name] == value)
        await conn.execute(stmt)


async def test_a_run_prunes_past_the_horizons_and_reports_counts(svc_app, site, site_b, calls, calls_b):
    from plugins.items.tables import revisions

    await calls.collection("notes", {"body": "string"})
    note = await calls.create("notes", {"body": "a"})
    for text in ("b", "c"):
        await calls.ok("patch", f"/items/notes/{note['id']}", json={"body": text})
    await calls_b.collection("notes", {"body": "string"})
    note_b = await calls_b.create("notes", {"body": "a"})
    await calls_b.ok("patch", f"/items/notes/{note_b['id']}", json={"body": "b"})
    # Everything in A and B is made old; A keeps revisions 400 days, B the default (365).
    await calls.ok("put", "/settings/retention", json={"value": {"revisions": 400, "audit": 10}})
    for site_id in (site, site_b):
        await _age(svc_app.kernel, revisions, "created_at", 380, site_id=site_id)
        await _age(svc_app.kernel, audit_log, "created_at", 20, site_id=site_id)
    horizons = {h["target"]: h for h in await calls.ok("get", "/retention")}
    assert horizons["revisions"]["days"] == 400 and horizons["revisions"]["source"] == "site"
    horizons_b = {h["target"]: h for h in await calls_b.ok("get", "/retention")}
    assert horizons_b["revisions"]["days"] == 365 and horizons_b["revisions"]["source"] == "default"

    run = await calls.ok("post", "/retention/run")
    assert run["deleted"]["revisions"] == 0  # 380 days < 400
    assert run["deleted"]["audit"] >= 2 and run["total"] == sum(run["deleted"].values())
    assert set(run["deleted"]) == set(TARGETS)
    # B is untouched by A's run: its revisions and audit are still there.
    assert (await calls_b.ok("get", f"/items/notes/{note_b['id']}/revisions", full=True))["meta"]["total"] >= 1
    assert await calls_b.ok("get", "/audit")  # B's old audit records were not pruned by A's run

    await calls.ok("put", "/settings/retention", json={"value": {"revisions": 300}})
    run = await calls.ok("post", "/retention/run")
    assert run["deleted"]["revisions"] == 3  # the created state and two updates
    assert (await calls.ok("get", f"/items/notes/{note['id']}/revisions", full=True))["meta"]["total"] == 0
    entries = await calls.ok("get", "/audit", params={"action": "retention_run"})
    assert sorted(e["details"]["revisions"] for e in entries) == [0, 3]


async def test_the_daily_job_prunes_every_site(svc_app, site, calls, run_due_jobs):
    from plugins.items.tables import revisions

    await calls.collection("notes", {"body": "string"})
    note = await calls.create("notes", {"body": "a"})
    await calls.ok("patch", f"/items/notes/{note['id']}", json={"body": "b"})
    await _age(svc_app.kernel, revisions, "created_at", 400, site_id=site)
    # The job's cron is 41 3 * * * (UTC): tomorrow at 03:41.
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).replace(hour=3, minute=41, second=5)
    runs = [r for r in await run_due_jobs(svc_app.kernel, now=later) if r.name == "privacy.retention"]
    assert runs and all(r.ok for r in runs)
    assert (await calls.ok("get", f"/items/notes/{note['id']}/revisions", full=True))["meta"]["total"] == 0


async def test_the_daily_job_costs_the_same_at_5_and_50_idle_sites_and_keeps_each_sites_horizons(
        svc_app, site, site_b, calls, calls_b):
    # Issue 27 ("scale"): per target, one query for the sites on its default horizon and one per
    # distinct override find the sites with something to prune; only those are visited. Half of
    # the idle sites override the audit horizon too. A keeps revisions 400 days and audit 10, B
    # the defaults (365 and 365): each round A's 20-day-old audit records and B's 380-day-old
    # revisions go, and neither site loses anything to the other's horizons.
    from plugins.items.tables import revisions
    from plugins.privacy.retention import retention_job

    kernel = svc_app.kernel
    await calls.ok("put", "/settings/retention", json={"value": {"revisions": 400, "audit": 10}})
    for c in (calls, calls_b):
        await c.collection("notes", {"body": "string"})
    counts, notes = [], {site: [], site_b: []}
    for idle in (5, 45):
        for n, idle_site in enumerate(await add_idle_sites(kernel, idle)):
            if n % 2:
                await Calls(svc_app.client, {**calls.headers, "X-Svc-Site": idle_site}).ok(
                    "put", "/settings/retention", json={"value": {"audit": 10 + n % 4}})
        for site_id, c in ((site, calls), (site_b, calls_b)):
            note = await c.create("notes", {"body": "a"})
            await c.ok("patch", f"/items/notes/{note['id']}", json={"body": "b"})
            notes[site_id].append(note["id"])
            await _age(kernel, revisions, "created_at", 380, site_id=site_id)
            await _age(kernel, audit_log, "created_at", 20, site_id=site_id)
        with counted_statements(kernel) as seen:
            await retention_job(kernel)
        counts.append(len(seen))
        runs = {c: (await c.ok("get", "/audit", params={"action": "retention_run", "limit": 1}))[0]["details"]
                for c in (calls, calls_b)}
        assert runs[calls]["revisions"] == 0 and runs[calls]["audit"] >= 1
        assert runs[calls_b]["revisions"] == 2 and runs[calls_b]["audit"] == 0
    assert counts[0] == counts[1]
    for note_id in notes[site]:  # A's revisions: 380 days < A's 400, whatever B's 365 says
        assert (await calls.ok("get", f"/items/notes/{note_id}/revisions", full=True))["meta"]["total"] == 2
    for note_id in notes[site_b]:
        assert (await calls_b.ok("get", f"/items/notes/{note_id}/revisions", full=True))["meta"]["total"] == 0
    # B's 20-day-old audit records outlive A's 10-day horizon.
    assert len(await calls_b.ok("get", "/audit", params={"action": "retention_run"})) >= 2


async def test_activity_prunes_ended_sessions_only(svc_app, site, calls, make_member):
    from plugins.accounts.tables import refresh_tokens

    member = await make_member(site)
    me = Calls(svc_app.client, member.headers)
    assert len(await me.ok("get", "/me/sessions")) == 1
    second = await make_member(site)
    await Calls(svc_app.client, second.headers).ok("delete", "/me/sessions", status=204)
    await _age(svc_app.kernel, refresh_tokens, "revoked_at", 100, user_id=second.id)
    run = await calls.ok("post", "/retention/run")
    assert run["deleted"]["activity"] >= 1
    assert len(await me.ok("get", "/me/sessions")) == 1  # a live session is never pruned
