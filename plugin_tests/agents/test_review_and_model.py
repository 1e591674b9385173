"""Agent as reviewer (review:<domain>, no self-review across the goal tree), planning with a
model provider (the scripted OpenAI-compatible server of the ai tests), the agent write on a
user's content in /me/automated-decisions, and the processing restriction."""

from __future__ import annotations

import pytest_asyncio
from ai.conftest import ScriptedModel, tool_call  # plugin_tests/ai (its package name under pytest)

from .conftest import goal, member_as, posts, update_line, writer_role


async def test_agent_decide_needs_review_domain_and_never_reviews_its_own_tree(svc_app, calls, site, make_member):
    await posts(calls)
    x = await member_as(svc_app, calls, make_member, site, "review:publish_release")
    y = await calls.ok("post", "/roles", status=201, json={"name": "review:publish_release:y"})
    plain = await member_as(svc_app, calls, make_member, site, "editors")
    parent = await x.ok("post", "/agent/goals", status=201, json={"title": "launch", "execution": "none"})
    y_member = await make_member(site, y["id"])
    from kernel.testing import Calls

    y_calls = Calls(svc_app.client, y_member.headers)
    await y_calls.err("post", f"/agent/goals/{parent['id']}/decompose", 404, "NOT_FOUND",
                      json={"goals": [{"title": "mine now"}]})  # another member's goal is not y's to see
    # a site admin decomposes x's goal: the child (the admin's) requests the approval
    tree = await calls.ok("post", f"/agent/goals/{parent['id']}/decompose", status=201, json={"goals": [
        {"title": "publish", "description": "publish release 0190-nope", "execution": "sync"}]})
    child = await calls.ok("get", f"/agent/goals/{tree['children'][0]['id']}")
    assert child["steps"][0]["outcome"] == "pending_approval", child
    approval_id = child["steps"][0]["approvalId"]
    await plain.err("post", f"/agent/approvals/{approval_id}/agent-decide", 403, "CAPABILITY_REQUIRED",
                    json={"decision": "approved"})
    # y's role name is not the capability: it cannot review
    await y_calls.err("post", f"/agent/approvals/{approval_id}/agent-decide", 403, "CAPABILITY_REQUIRED",
                      json={"decision": "approved"})
    # x did not request it, but owns the root of the tree that did
    await x.err("post", f"/agent/approvals/{approval_id}/agent-decide", 403, "SELF_REVIEW",
                json={"decision": "approved"})
    z = await member_as(svc_app, calls, make_member, site, "review:publish_release:z")
    await z.err("post", f"/agent/approvals/{approval_id}/agent-decide", 403, "CAPABILITY_REQUIRED",
                json={"decision": "rejected"})
    reviewer = await calls.ok("post", "/policies", status=201, json={"name": "review:publish_release"})
    zz = await make_member(site, (await calls.ok("post", "/roles", status=201, json={"name": "zz"}))["id"])
    await calls.ok("post", f"/policies/{reviewer['id']}/attach", status=201, json={"userId": zz.id})
    svc_app.kernel.access.invalidate(site)
    z_calls = Calls(svc_app.client, zz.headers)
    await z_calls.err("post", f"/agent/approvals/{approval_id}/agent-decide", 400, "VALIDATION_FAILED",
                      json={"decision": "maybe"})
    decided = await z_calls.ok("post", f"/agent/approvals/{approval_id}/agent-decide", json={"decision": "rejected"})
    assert decided["status"] == "rejected"
    await z_calls.err("post", f"/agent/approvals/{approval_id}/agent-decide", 409, "CONFLICT",
                      json={"decision": "approved"})


async def test_a_requester_never_decides_its_own_request(svc_app, calls, site, make_member):
    me = await member_as(svc_app, calls, make_member, site, "review:publish_release")
    done = await me.ok("post", "/agent/goals", status=201, json={"title": "p", "execution": "sync",
                                                                  "description": "publish release 1"})
    approval_id = done["steps"][0]["approvalId"]
    await me.err("post", f"/agent/approvals/{approval_id}/agent-decide", 403, "SELF_REVIEW",
                 json={"decision": "approved"})


async def test_agent_writes_show_in_the_authors_automated_decisions_unless_restricted(svc_app, calls, site,
                                                                                     make_member):
    await calls.collection("posts", {"title": "string", "body": "text"})
    author = await member_as(svc_app, calls, make_member, site, "authors", [
        {"collection": "posts", "action": "create", "fields": ["*"]},
        {"collection": "posts", "action": "read", "fields": ["*"]}])
    mine = (await author.create("posts", {"title": "mine"}))["id"]
    await writer_role(calls)
    proposal = await calls.ok("post", "/agent/autonomy/promotions", status=201, json={"role": "writer",
                                                                                      "level": "act"})
    await calls.ok("post", f"/agent/autonomy/promotions/{proposal['id']}/decide", json={"decision": "approved"})
    done = await goal(calls, update_line(mine, {"title": "edited by agent"}))
    assert done["steps"][0]["outcome"] == "applied"
    decisions = await author.ok("get", "/me/automated-decisions")
    assert len(decisions) == 1 and decisions[0]["causedBy"] == f"agent:{done['id']}"
    await author.ok("put", "/me/restriction", json={"restricted": True, "reason": "no bots"})
    blocked = await goal(calls, update_line(mine, {"title": "again"}))
    assert blocked["steps"][0]["code"] == "PROCESSING_RESTRICTED"
    assert (await calls.get("posts", mine))["title"] == "edited by agent"


@pytest_asyncio.fixture
async def model(http_receiver):
    return ScriptedModel(http_receiver)


async def test_planning_with_a_model_provider_stages_through_tool_calls(make_app, model):
    app = await make_app(env={"SVC_AI_BASE_URL": model.base_url, "SVC_AI_MODEL": "scripted-1"})
    headers = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(headers)
    from kernel.testing import Calls

    calls = Calls(app.client, {**headers, "X-Svc-Site": site})
    item = await posts(calls)
    await writer_role(calls, skills=["read_item", "update_item"])
    model.script = [{"tool_calls": [tool_call("read_item", {"collection": "posts", "id": item})]},
                    {"tool_calls": [tool_call("update_item", {"collection": "posts", "id": item,
                                                              "data": {"title": "Model title"}}, "call_2")]},
                    {"content": "Done."}]
    done = await goal(calls, "Give the post a better title.")
    assert done["status"] == "succeeded", done
    assert [s.get("skill") for s in done["steps"]] == ["read_item", "update_item", None]
    assert done["used"]["steps"] == 3 and done["used"]["tokens"] > 0 and done["used"]["writes"] == 1
    first = model.requests()[0]
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["read_item", "update_item"]
    assert "better title" in first["messages"][1]["content"]
    staged = await calls.ok("get", "/agent/staged")
    assert staged[0]["diff"]["after"] == {"title": "Model title"}
    # a skill outside the role's list is refused and fails the goal (a run_failed incident)
    model.script = [{"tool_calls": [tool_call("delete_item", {"collection": "posts", "id": item})]}]
    failed = await goal(calls, "Remove it.")
    assert failed["status"] == "failed" and failed["error"]["code"] == "SKILL_DENIED"
    assert [i["kind"] for i in (await calls.ok("get", "/agent/autonomy"))["incidents"]] == ["run_failed"]
    # the token budget stops the loop
    model.script = [{"tool_calls": [tool_call("read_item", {"collection": "posts", "id": item})]}]
    poor = await goal(calls, "Look.", budget={"tokens": 1})
    assert poor["status"] == "exhausted" and poor["error"]["code"] == "BUDGET_EXHAUSTED"


async def test_a_freeze_from_another_worker_stops_a_running_goal_at_its_next_step(make_app, model,
                                                                                   temporary_plugin, run_due_jobs):
    """Step 1 (an extension skill) has a second app on the same database freeze the site over
    HTTP while the goal runs in the first; the runner reads the freeze before step 2."""
    from kernel import hookimpl
    from kernel.testing import Calls
    from plugins.ai.api import Skill

    env = {"SVC_AI_BASE_URL": model.base_url, "SVC_AI_MODEL": "scripted-1"}
    app = await make_app(env=env)
    other = await make_app(env=env, data_dir=make_app.base_dir / "app0")
    headers = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(headers)
    calls = Calls(app.client, {**headers, "X-Svc-Site": site})
    from_other = Calls(other.client, {**headers, "X-Svc-Site": site})
    item = await posts(calls)
    await writer_role(calls)

    async def trip(ctx, args):
        return await from_other.ok("post", "/agent/kill-switch", status=201, json={"scope": "site"})

    class Tripwire:
        @hookimpl
        def register_ai_skills(self, kernel):
            return [Skill("tripwire", "Pull the cord", trip, untrusted=False)]

    model.script = [{"tool_calls": [tool_call("tripwire", {})]},
                    {"tool_calls": [tool_call("update_item", {"collection": "posts", "id": item,
                                                              "data": {"title": "never"}}, "call_2")]},
                    {"content": "Done."}]
    with temporary_plugin(app.kernel, Tripwire(), "tripwire"):
        queued = await goal(calls, "Tidy up.", execution="async")
        await run_due_jobs(app, periodic=False)
    done = await calls.ok("get", f"/agent/goals/{queued['id']}")
    assert done["status"] == "frozen" and done["error"]["code"] == "AGENT_FROZEN"
    assert done["used"]["steps"] == 1 and done["used"]["writes"] == 0
    assert len(model.requests()) == 1  # the model was not asked again after the freeze
    assert await calls.ok("get", "/agent/staged", params={"status": "all"}) == []
