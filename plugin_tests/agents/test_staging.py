"""Roles, goals run offline (the command grammar), stagings with a veto window, the autonomy
ledger (incidents, demotion, promotions) and the write's cause on the revision."""

from __future__ import annotations

from .conftest import goal, later, member_as, posts, update_line, writer_role


async def test_a_staged_write_applies_after_its_window_with_the_agent_as_cause(svc_app, calls, run_due_jobs):
    item = await posts(calls)
    await writer_role(calls)
    done = await goal(calls, update_line(item, {"title": "Tidy title"}))
    assert done["status"] == "succeeded", done
    assert done["used"]["writes"] == 1 and done["used"]["steps"] == 1
    assert done["steps"][0]["outcome"] == "staged"
    staged = await calls.ok("get", "/agent/staged")
    assert len(staged) == 1
    one = staged[0]
    assert one["diff"] == {"before": {"title": "hello"}, "after": {"title": "Tidy title"}}
    assert one["status"] == "pending" and one["goalId"] == done["id"] and one["applyAt"]
    assert (await calls.get("posts", item))["title"] == "hello"
    # the studio is told (the notification frame and web push go out with it)
    [note] = [n for n in await calls.ok("get", "/notifications") if n["entityId"] == one["id"]]
    assert note["kind"] == "agent.staged" and note["deepLink"] == f"/agent/staged/{one['id']}"
    await run_due_jobs(svc_app, periodic=False)  # not due yet
    assert (await calls.get("posts", item))["title"] == "hello"
    await run_due_jobs(svc_app, now=later(), periodic=False)
    assert (await calls.get("posts", item))["title"] == "Tidy title"
    assert (await calls.ok("get", f"/agent/staged/{one['id']}"))["status"] == "applied"
    revisions = await calls.ok("get", f"/items/posts/{item}/revisions")
    assert revisions[0]["causedBy"] == f"agent:{done['id']}"


async def test_a_veto_discards_and_is_an_incident_three_demote(svc_app, calls, run_due_jobs):
    item = await posts(calls)
    await writer_role(calls)
    for n in range(3):
        await goal(calls, update_line(item, {"title": f"t{n}"}))
    pending = await calls.ok("get", "/agent/staged")
    assert len(pending) == 3
    first = await calls.ok("post", f"/agent/staged/{pending[0]['id']}/veto", json={"reason": "no"})
    assert first["status"] == "vetoed"
    await calls.err("post", f"/agent/staged/{pending[0]['id']}/veto", 409, "CONFLICT")
    ledger = await calls.ok("get", "/agent/autonomy")
    assert ledger["grants"] == [{"role": "writer", "level": "stage", "since": ledger["grants"][0]["since"]}]
    assert [i["kind"] for i in ledger["incidents"]] == ["staging_vetoed"]
    for staging in pending[1:]:
        await calls.ok("post", f"/agent/staged/{staging['id']}/veto")
    ledger = await calls.ok("get", "/agent/autonomy")
    assert ledger["grants"][0]["level"] == "suggest"  # three vetoes since the last change
    await run_due_jobs(svc_app, now=later(), periodic=True)
    assert (await calls.get("posts", item))["title"] == "hello"
    # at suggest, a write is a staging that never applies
    await goal(calls, update_line(item, {"title": "suggested"}))
    suggestion = (await calls.ok("get", "/agent/staged"))[0]
    assert suggestion["level"] == "suggest" and suggestion["applyAt"] is None
    await run_due_jobs(svc_app, now=later(48), periodic=True)
    assert (await calls.get("posts", item))["title"] == "hello"


async def test_a_staging_whose_item_changed_meanwhile_goes_stale(svc_app, calls, run_due_jobs):
    item = await posts(calls)
    await writer_role(calls)
    await goal(calls, update_line(item, {"title": "agent"}))
    await calls.ok("patch", f"/items/posts/{item}", json={"title": "human"})
    await run_due_jobs(svc_app, now=later(), periodic=False)
    assert (await calls.get("posts", item))["title"] == "human"
    stale = await calls.ok("get", "/agent/staged", params={"status": "stale"})
    assert len(stale) == 1 and "changed" in stale[0]["reason"]


async def test_promotion_is_the_only_way_up_and_act_writes_at_once(svc_app, calls, site, make_member):
    item = await posts(calls)
    await calls.err("post", "/agent/roles", 403, "PROMOTION_REQUIRED", json={"name": "bold", "autonomy": "act"})
    await writer_role(calls)
    await calls.err("patch", "/agent/roles/writer", 403, "PROMOTION_REQUIRED", json={"autonomy": "act"})
    editor = await member_as(svc_app, calls, make_member, site, "editors")
    proposal = await editor.ok("post", "/agent/autonomy/promotions", status=201,
                               json={"role": "writer", "level": "act", "reason": "clean record"})
    assert proposal["status"] == "pending" and proposal["fromLevel"] == "stage"
    await editor.err("post", f"/agent/autonomy/promotions/{proposal['id']}/decide", 403, "PERMISSION_DENIED",
                     json={"decision": "approved"})
    decided = await calls.ok("post", f"/agent/autonomy/promotions/{proposal['id']}/decide",
                             json={"decision": "approved"})
    assert decided["status"] == "approved"
    await calls.err("post", f"/agent/autonomy/promotions/{proposal['id']}/decide", 409, "CONFLICT",
                    json={"decision": "rejected"})
    assert (await calls.ok("get", "/agent/roles/writer"))["autonomy"] == "act"
    done = await goal(calls, update_line(item, {"title": "acted"}))
    assert done["steps"][0]["outcome"] == "applied"
    assert (await calls.get("posts", item))["title"] == "acted"
    await calls.err("post", "/agent/autonomy/promotions", 400, "VALIDATION_FAILED",
                    json={"role": "writer", "level": "stage"})
    # lowering is allowed without a promotion
    assert (await calls.ok("patch", "/agent/roles/writer", json={"autonomy": "suggest"}))["autonomy"] == "suggest"


async def test_budget_is_enforced_and_roles_bound_collections(svc_app, calls):
    item = await posts(calls)
    await calls.collection("pages", {"title": "string"})
    page = (await calls.create("pages", {"title": "p"}))["id"]
    await writer_role(calls)
    two = "\n".join([update_line(item, {"title": "a"}), update_line(item, {"title": "b"})])
    done = await goal(calls, two, budget={"writes": 1})
    assert done["status"] == "exhausted" and done["error"]["code"] == "BUDGET_EXHAUSTED"
    assert done["used"]["writes"] == 1 and len(await calls.ok("get", "/agent/staged")) == 1
    steps = await goal(calls, two, budget={"steps": 1})
    assert steps["status"] == "exhausted" and steps["used"]["steps"] == 1
    other = await goal(calls, update_line(page, {"title": "x"}, "pages"))
    assert other["steps"][0]["outcome"] == "blocked" and other["steps"][0]["code"] == "COLLECTION_NOT_ALLOWED"
    assert (await calls.get("pages", page))["title"] == "p"


async def test_async_goal_runs_as_a_queued_job(svc_app, calls, run_due_jobs):
    item = await posts(calls)
    await writer_role(calls)
    queued = await goal(calls, update_line(item, {"title": "later"}), execution="async")
    assert queued["status"] == "queued"
    await run_due_jobs(svc_app, periodic=False)
    assert (await calls.ok("get", f"/agent/goals/{queued['id']}"))["status"] == "succeeded"
    listed = await calls.ok("get", "/agent/goals", full=True)
    assert listed["meta"]["total"] == 1


async def test_a_member_sees_only_stagings_it_may_read_and_only_readable_fields(svc_app, calls, site,
                                                                                make_member):
    item = await posts(calls)
    await calls.collection("secrets", {"title": "string"})
    secret = (await calls.create("secrets", {"title": "launch date"}))["id"]
    await writer_role(calls, collections=["posts", "secrets"])
    await goal(calls, update_line(item, {"title": "new", "body": "hidden body"}))
    await goal(calls, update_line(secret, {"title": "moved"}, "secrets"))
    reader = await member_as(svc_app, calls, make_member, site, "readers", [
        {"collection": "posts", "action": "read", "fields": ["id", "title"]}])
    seen = await reader.ok("get", "/agent/staged", full=True)
    assert seen["meta"]["total"] == 1
    [one] = seen["data"]
    assert one["collection"] == "posts"
    assert one["diff"] == {"before": {"title": "hello"}, "after": {"title": "new"}}
    hidden = [s for s in await calls.ok("get", "/agent/staged") if s["collection"] == "secrets"][0]
    await reader.err("get", f"/agent/staged/{hidden['id']}", 404, "NOT_FOUND")
    await reader.err("post", f"/agent/staged/{hidden['id']}/veto", 404, "NOT_FOUND")


async def test_a_member_sees_only_its_own_goals(svc_app, calls, site, make_member):
    admin_goal = await calls.ok("post", "/agent/goals", status=201, json={"title": "admin's", "execution": "none"})
    member = await member_as(svc_app, calls, make_member, site, "editors")
    own = await member.ok("post", "/agent/goals", status=201, json={"title": "mine", "execution": "none"})
    listed = await member.ok("get", "/agent/goals", full=True)
    assert [g["id"] for g in listed["data"]] == [own["id"]] and listed["meta"]["total"] == 1
    await member.err("get", f"/agent/goals/{admin_goal['id']}", 404, "NOT_FOUND")
    await member.err("post", f"/agent/goals/{admin_goal['id']}/settle", 404, "NOT_FOUND")
    assert len(await calls.ok("get", "/agent/goals")) == 2
