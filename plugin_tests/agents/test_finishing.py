"""Agents finish what they start (docs/agents.md): a goal waiting on an approval goes on once it
is decided, incidents are resolved, and a suggestion is applied by a person."""

from __future__ import annotations

import asyncio

import pytest_asyncio
from ai.conftest import ScriptedModel, tool_call  # plugin_tests/ai (its package name under pytest)

from kernel.testing import Calls

from .conftest import goal, later, member_as, posts, update_line, writer_role


async def test_a_goal_waits_on_its_approval_and_goes_on_when_it_is_decided(svc_app, calls, run_due_jobs):
    item = await posts(calls)
    await writer_role(calls)
    waiting = await goal(calls, "add field subtitle string to posts\n" + update_line(item, {"title": "Tidy"}))
    assert waiting["status"] == "waiting" and [s["outcome"] for s in waiting["steps"]] == ["pending_approval"]
    approval_id = waiting["steps"][0]["approvalId"]
    assert await calls.ok("get", "/agent/staged") == []  # the second line has not run
    await run_due_jobs(svc_app, periodic=False)
    assert (await calls.ok("get", f"/agent/goals/{waiting['id']}"))["status"] == "waiting"
    await calls.ok("post", f"/ai/approvals/{approval_id}/decide", json={"decision": "approved"})
    assert (await calls.ok("get", f"/agent/goals/{waiting['id']}"))["status"] == "queued"
    await run_due_jobs(svc_app, periodic=False)
    done = await calls.ok("get", f"/agent/goals/{waiting['id']}")
    assert done["status"] == "succeeded", done
    assert [s["outcome"] for s in done["steps"]] == ["approval_approved", "staged"]
    assert done["steps"][0]["approval"]["status"] == "approved"
    assert [f["field"] for f in await calls.ok("get", "/fields/posts")] == ["title", "body", "subtitle"]
    [staged] = await calls.ok("get", "/agent/staged")
    assert staged["goalId"] == done["id"] and staged["diff"]["after"] == {"title": "Tidy"}


async def test_a_rejection_also_lets_the_goal_go_on_and_other_sites_are_untouched(
    svc_app, calls, calls_b, run_due_jobs
):
    await posts(calls)
    await writer_role(calls)
    waiting = await goal(calls, "add field subtitle string to posts\nread posts")
    approval_id = waiting["steps"][0]["approvalId"]
    await calls_b.err(
        "post", f"/ai/approvals/{approval_id}/decide", 404, "NOT_FOUND", json={"decision": "rejected"}
    )
    await calls_b.err("get", f"/agent/goals/{waiting['id']}", 404)
    await calls.ok("post", f"/ai/approvals/{approval_id}/decide", json={"decision": "rejected"})
    await run_due_jobs(svc_app, periodic=False)
    done = await calls.ok("get", f"/agent/goals/{waiting['id']}")
    assert done["status"] == "succeeded"
    assert [s["outcome"] for s in done["steps"]] == ["approval_rejected", "executed"]
    assert [f["field"] for f in await calls.ok("get", "/fields/posts")] == ["title", "body"]


async def test_an_incident_is_resolved_once_by_an_admin_and_audited(
    svc_app, calls, calls_b, site, make_member
):
    item = await posts(calls)
    await writer_role(calls)
    await goal(calls, update_line(item, {"title": "t"}))
    [staging] = await calls.ok("get", "/agent/staged")
    await calls.ok("post", f"/agent/staged/{staging['id']}/veto")
    [incident] = (await calls.ok("get", "/agent/autonomy"))["incidents"]
    assert incident["status"] == "open" and incident["resolution"] is None
    member = await member_as(svc_app, calls, make_member, site, "editors")
    path = f"/agent/autonomy/incidents/{incident['id']}/resolve"
    await member.err("post", path, 403, json={"note": "mine"})
    await calls_b.err("post", path, 404, "NOT_FOUND", json={})
    await calls.err("post", path, 400, "VALIDATION_FAILED", json={"note": 7})
    await calls.err("post", path, 400, "VALIDATION_FAILED", json={"why": "x"})
    resolved = await calls.ok("post", path, json={"note": "the title was fine"})
    assert resolved["status"] == "resolved" and resolved["resolution"]["note"] == "the title was fine"
    assert (
        resolved["resolution"]["by"].startswith("user:") and resolved["detail"]["stagingId"] == staging["id"]
    )
    await calls.err("post", path, 409, "CONFLICT", json={})
    await calls.err("post", "/agent/autonomy/incidents/nope/resolve", 404, "NOT_FOUND")
    assert (await calls.ok("get", "/agent/autonomy"))["incidents"] == []
    [entry] = await calls.ok("get", "/audit", params={"action": "agent_incident_resolved"})
    assert entry["target"] == {"type": "agent_incident", "id": incident["id"]}


async def test_a_resolved_incident_no_longer_counts_towards_a_demotion(calls):
    item = await posts(calls)
    await writer_role(calls)
    for n in range(3):
        await goal(calls, update_line(item, {"title": f"t{n}"}))
    first, second, third = await calls.ok("get", "/agent/staged")
    await calls.ok("post", f"/agent/staged/{first['id']}/veto")
    await calls.ok("post", f"/agent/staged/{second['id']}/veto")
    for incident in (await calls.ok("get", "/agent/autonomy"))["incidents"]:
        await calls.ok("post", f"/agent/autonomy/incidents/{incident['id']}/resolve")
    await calls.ok("post", f"/agent/staged/{third['id']}/veto")
    assert (await calls.ok("get", "/agent/autonomy"))["grants"][0]["level"] == "stage"


async def test_a_person_applies_a_suggestion_as_themselves(
    svc_app, calls, calls_b, site, make_member, run_due_jobs
):
    item = await posts(calls)
    await writer_role(calls, autonomy="suggest")
    await goal(calls, update_line(item, {"title": "Suggested title"}))
    [suggestion] = await calls.ok("get", "/agent/staged")
    assert suggestion["level"] == "suggest"
    path = f"/agent/staged/{suggestion['id']}/apply"
    await calls_b.err("post", path, 404, "NOT_FOUND")
    reader = await member_as(
        svc_app,
        calls,
        make_member,
        site,
        "readers",
        [{"collection": "posts", "action": "read", "fields": ["*"]}],
    )
    await reader.err("post", path, 403)  # the items API refuses them, as a direct write
    assert (await calls.ok("get", f"/agent/staged/{suggestion['id']}"))["status"] == "pending"
    applied = await calls.ok("post", path)
    assert applied["status"] == "applied" and applied["decidedBy"].startswith("user:")
    assert (await calls.get("posts", item))["title"] == "Suggested title"
    revisions = await calls.ok("get", f"/items/posts/{item}/revisions")
    assert revisions[0]["causedBy"] == f"agent-suggestion:{suggestion['id']}"
    await calls.err("post", path, 409, "CONFLICT")
    [entry] = await calls.ok("get", "/audit", params={"action": "agent_suggestion_applied"})
    assert entry["target"] == {"type": "agent_staging", "id": suggestion["id"]}


async def test_a_stale_suggestion_and_a_staged_write_are_refused(svc_app, calls):
    item = await posts(calls)
    await writer_role(calls, autonomy="suggest")
    await goal(calls, update_line(item, {"title": "Suggested"}))
    [suggestion] = await calls.ok("get", "/agent/staged")
    await calls.ok("patch", f"/items/posts/{item}", json={"title": "edited by hand"})
    await calls.err("post", f"/agent/staged/{suggestion['id']}/apply", 409, "STAGING_STALE")
    assert (await calls.ok("get", f"/agent/staged/{suggestion['id']}"))["status"] == "stale"
    assert (await calls.get("posts", item))["title"] == "edited by hand"
    await calls.ok("patch", "/agent/roles/writer", json={"autonomy": "suggest"})
    other = await calls.ok(
        "post",
        "/agent/roles",
        status=201,
        json={"name": "stager", "description": "stages", "collections": ["posts"], "autonomy": "stage"},
    )
    await goal(calls, update_line(item, {"title": "Staged"}), role=other["name"])
    [staged] = await calls.ok("get", "/agent/staged")
    await calls.err("post", f"/agent/staged/{staged['id']}/apply", 409, "CONFLICT")
    await calls.err("post", "/agent/staged/nope/apply", 404, "NOT_FOUND")
    anon = Calls(svc_app.client, {"X-Svc-Site": calls.headers["X-Svc-Site"]})
    await anon.err("post", f"/agent/staged/{staged['id']}/apply", 401)


@pytest_asyncio.fixture
async def model(http_receiver):
    return ScriptedModel(http_receiver)


async def test_a_model_planned_goal_hears_the_outcome_of_its_approved_call(make_app, model, run_due_jobs):
    app = await make_app(env={"SVC_AI_BASE_URL": model.base_url, "SVC_AI_MODEL": "scripted-1"})
    headers = {"Authorization": f"Bearer {await app.login()}"}
    calls = Calls(app.client, {**headers, "X-Svc-Site": await app.create_site(headers)})
    await posts(calls)
    await writer_role(calls, skills=["create_field", "read_items"])
    model.script = [
        {
            "tool_calls": [
                tool_call(
                    "create_field", {"collection": "posts", "field": "subtitle", "type": "string"}, "call_7"
                )
            ]
        }
    ]
    waiting = await goal(calls, "Add a subtitle field.")
    assert waiting["status"] == "waiting" and waiting["steps"][0]["callId"] == "call_7"
    await calls.ok(
        "post", f"/ai/approvals/{waiting['steps'][0]['approvalId']}/decide", json={"decision": "approved"}
    )
    model.script = [{"content": "The field exists now."}]
    await run_due_jobs(app, periodic=False)
    done = await calls.ok("get", f"/agent/goals/{waiting['id']}")
    assert done["status"] == "succeeded" and done["steps"][-1] == {
        "outcome": "answered",
        "message": "The field exists now.",
    }
    resumed = model.requests()[-1]["messages"]
    assert resumed[2]["tool_calls"][0]["id"] == "call_7"
    assert resumed[3]["role"] == "tool" and resumed[3]["tool_call_id"] == "call_7"
    assert '"status":"approved"' in resumed[3]["content"]


async def test_a_goal_whose_approval_expires_goes_on_without_it(make_app, run_due_jobs):
    app = await make_app(env={"SVC_AI_APPROVAL_TTL_HOURS": "0.0001"})  # 0.36 seconds
    headers = {"Authorization": f"Bearer {await app.login()}"}
    calls = Calls(app.client, {**headers, "X-Svc-Site": await app.create_site(headers)})
    await posts(calls)
    await writer_role(calls)
    waiting = await goal(calls, "add field subtitle string to posts\nread posts")
    assert waiting["status"] == "waiting"
    expired: list = []
    for _ in range(250):  # bounded at ~5 s past the TTL
        expired = await calls.ok("get", "/ai/approvals", params={"status": "expired"})
        if expired:
            break
        await asyncio.sleep(0.02)
    assert [a["id"] for a in expired] == [waiting["steps"][0]["approvalId"]]
    await run_due_jobs(app, now=later(1), periodic=True)  # the agents.waiting sweep, then the run
    done = await calls.ok("get", f"/agent/goals/{waiting['id']}")
    assert done["status"] == "succeeded"
    assert [s["outcome"] for s in done["steps"]] == ["approval_expired", "executed"]
    assert [f["field"] for f in await calls.ok("get", "/fields/posts")] == ["title", "body"]
