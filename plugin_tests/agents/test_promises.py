"""Issue 35, item 10: the promises of docs/agents.md, on every path where an agent's write or
action lands. A staging applies only if the item's author has not restricted processing since
(as a direct write checks it); while a freeze covers the goal that requested an approval, nobody
approves it, neither a second agent (``agent-decide``) nor a person (``/ai/approvals/:id/decide``)."""

from __future__ import annotations

import pytest

from kernel.testing import Calls

from .conftest import goal, later, member_as, writer_role


async def _author(svc_app, calls, make_member, site, name: str):
    return await member_as(svc_app, calls, make_member, site, name, [
        {"collection": "posts", "action": "create", "fields": ["*"]},
        {"collection": "posts", "action": "read", "fields": ["*"]}])


def _command(operation: str, item_id: str) -> str:
    return f'update posts {item_id} {{"title": "by the agent"}}' if operation == "update" else \
        f"delete posts {item_id}"


@pytest.mark.parametrize("operation", ["update", "delete"])
async def test_a_staging_never_applies_to_an_author_who_restricted_processing_since(
        svc_app, calls, site, make_member, run_due_jobs, operation):
    await calls.collection("posts", {"title": "string"})
    ann = await _author(svc_app, calls, make_member, site, "authors")
    bob = await _author(svc_app, calls, make_member, site, "authors-b")
    anns = (await ann.create("posts", {"title": "ann's"}))["id"]
    bobs = (await bob.create("posts", {"title": "bob's"}))["id"]
    await writer_role(calls)
    for item in (anns, bobs):
        done = await goal(calls, _command(operation, item))
        assert done["steps"][0]["outcome"] == "staged", done
    staged = {s["itemId"]: s["id"] for s in await calls.ok("get", "/agent/staged")}
    # Ann restricts processing after the staging, before its window ends; Bob does not.
    await ann.ok("put", "/me/restriction", json={"restricted": True, "reason": "no bots"})
    await run_due_jobs(svc_app, now=later(), periodic=False)

    refused = await calls.ok("get", f"/agent/staged/{staged[anns]}")
    assert refused["status"] == "blocked" and refused["reason"].startswith("PROCESSING_RESTRICTED")
    assert (await calls.get("posts", anns))["title"] == "ann's"
    assert await ann.ok("get", "/me/automated-decisions") == []
    assert (await calls.ok("get", f"/agent/staged/{staged[bobs]}"))["status"] == "applied"
    if operation == "update":
        assert (await calls.get("posts", bobs))["title"] == "by the agent"
    else:
        await calls.err("get", f"/items/posts/{bobs}", 404, "RECORD_NOT_FOUND")
    # Lifting the restriction later does not bring the refused write back.
    await ann.ok("put", "/me/restriction", json={"restricted": False})
    await run_due_jobs(svc_app, now=later(5), periodic=True)
    assert (await calls.ok("get", f"/agent/staged/{staged[anns]}"))["status"] == "blocked"
    assert (await calls.get("posts", anns))["title"] == "ann's"


async def test_a_frozen_staging_of_a_restricted_author_waits_then_is_refused(svc_app, calls, site, make_member,
                                                                             run_due_jobs):
    await calls.collection("posts", {"title": "string"})
    ann = await _author(svc_app, calls, make_member, site, "authors")
    anns = (await ann.create("posts", {"title": "ann's"}))["id"]
    await writer_role(calls)
    await goal(calls, _command("update", anns))
    [staging] = await calls.ok("get", "/agent/staged")
    freeze = await calls.ok("post", "/agent/kill-switch", status=201, json={"scope": "site"})
    await ann.ok("put", "/me/restriction", json={"restricted": True})
    await run_due_jobs(svc_app, now=later(), periodic=False)
    assert (await calls.ok("get", f"/agent/staged/{staging['id']}"))["status"] == "pending"  # held by the freeze
    await calls.ok("post", "/agent/kill-switch/lift", json={"id": freeze["id"]})
    await run_due_jobs(svc_app, now=later(3), periodic=True)
    assert (await calls.ok("get", f"/agent/staged/{staging['id']}"))["status"] == "blocked"
    assert (await calls.get("posts", anns))["title"] == "ann's"


async def _fields(calls) -> list[str]:
    return [f["field"] for f in await calls.ok("get", "/fields/posts")]


async def _requested(calls, field: str, role: str | None = "writer") -> str:
    """A goal (run now) that asks to add ``field`` to posts: the approval it requested."""
    done = await goal(calls, f"add field {field} string to posts", role=role)
    assert done["steps"][0]["outcome"] == "pending_approval", done
    return done["steps"][0]["approvalId"]


async def _second_agent(svc_app, calls, make_member, site) -> Calls:
    """Another admin of the site (adding a field needs it) holding ``review:posts`` by policy."""
    member = await make_member(site, role="admin")
    policy = await calls.ok("post", "/policies", status=201, json={"name": "review:posts"})
    await calls.ok("post", f"/policies/{policy['id']}/attach", status=201, json={"userId": member.id})
    svc_app.kernel.access.invalidate(site)
    return Calls(svc_app.client, member.headers)


async def test_while_frozen_no_route_approves_what_an_agent_requested(svc_app, calls, calls_b, site, make_member):
    await calls.collection("posts", {"title": "string"})
    await writer_role(calls)
    first = await _requested(calls, "subtitle")
    second = await _requested(calls, "summary")
    reviewer = await _second_agent(svc_app, calls, make_member, site)
    await calls_b.collection("posts", {"title": "string"})
    await writer_role(calls_b)
    in_b = await _requested(calls_b, "subtitle")
    freeze = await calls.ok("post", "/agent/kill-switch", status=201, json={"scope": "site"})
    # A freeze of this site holds nothing of another: B's agent's request is approved.
    assert (await calls_b.ok("post", f"/ai/approvals/{in_b}/decide", json={"decision": "approved"}))["status"] == \
        "approved"
    assert await _fields(calls_b) == ["title", "subtitle"]
    await reviewer.err("post", f"/ai/approvals/{in_b}/decide", 404, "NOT_FOUND", json={"decision": "approved"})

    await reviewer.err("post", f"/agent/approvals/{first}/agent-decide", 409, "AGENT_FROZEN",
                       json={"decision": "approved"})
    await calls.err("post", f"/ai/approvals/{first}/decide", 409, "AGENT_FROZEN", json={"decision": "approved"})
    assert await _fields(calls) == ["title"]
    pending = {a["id"]: a["status"] for a in await calls.ok("get", "/ai/approvals", params={"status": "all"})}
    assert pending == {first: "pending", second: "pending"}
    assert await calls.ok("get", "/audit", params={"action": "ai.approval.approve"}) == []
    # A rejection runs nothing: it goes through during the freeze.
    rejected = await reviewer.ok("post", f"/agent/approvals/{second}/agent-decide", json={"decision": "rejected"})
    assert rejected["status"] == "rejected"

    await calls.ok("post", "/agent/kill-switch/lift", json={"id": freeze["id"]})
    approved = await reviewer.ok("post", f"/agent/approvals/{first}/agent-decide", json={"decision": "approved"})
    assert approved["status"] == "approved"
    assert await _fields(calls) == ["title", "subtitle"]


async def test_a_freeze_refuses_only_the_approvals_of_the_goals_it_covers(svc_app, calls):
    await calls.collection("posts", {"title": "string"})
    await writer_role(calls)
    covered = await _requested(calls, "subtitle")
    free = await _requested(calls, "summary", role=None)  # a goal of no role
    by_chat = await calls.ok("post", "/ai/chat", status=202, json={"message": "add field teaser string to posts"})
    await calls.ok("post", "/agent/kill-switch", status=201, json={"scope": "role", "target": "writer"})

    await calls.err("post", f"/ai/approvals/{covered}/decide", 409, "AGENT_FROZEN", json={"decision": "approved"})
    assert (await calls.ok("post", f"/ai/approvals/{free}/decide", json={"decision": "approved"}))["status"] == \
        "approved"
    # The copilot's request is a person's, not an agent's: a freeze does not hold it.
    assert (await calls.ok("post", f"/ai/approvals/{by_chat['approvalId']}/decide",
                           json={"decision": "approved"}))["status"] == "approved"
    assert await _fields(calls) == ["title", "summary", "teaser"]
