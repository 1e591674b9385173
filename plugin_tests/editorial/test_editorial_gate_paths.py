"""The editorial gate on the write paths docs/releases-and-editorial.md ("The gate") claims beyond
PATCH, PUT, a release and GraphQL: a bulk create, a flow's item operations, and MCP tools. Each
refuses publishing an unapproved item with EDITORIAL_GATE_REQUIRED and leaves it as it was."""

from __future__ import annotations

import json

from plugin_tests.ai.conftest import mcp_client

GATE = "EDITORIAL_GATE_REQUIRED"


async def _draft(calls, title="Hello"):
    await calls.collection("articles", {"title": "string"}, editorialWorkflow=True)
    return await calls.create("articles", {"title": title})


async def _stored(calls, item):
    return await calls.ok("get", f"/items/articles/{item['id']}")


async def test_a_bulk_create_with_one_published_item_is_refused_whole(calls):
    await _draft(calls)
    err = await calls.err("post", "/items/articles", 409, GATE,
                          json=[{"title": "fine"}, {"title": "sneaky", "status": "published"}])
    assert err["extensions"]["collection"] == "articles"
    assert [a["title"] for a in (await calls.list("articles"))["data"]] == ["Hello"]


async def _flow_run(svc_app, calls, graph):
    flow = await calls.ok("post", "/flows", 201, json={"name": "publisher", "status": "active",
                                                       "trigger": "manual", "graph": graph})
    started = await calls.ok("post", f"/flows/{flow['id']}/run", 202, json={})
    await svc_app.kernel.jobs.run_due()
    return await calls.ok("get", f"/flows/{flow['id']}/runs/{started['runId']}")


async def test_a_flows_item_update_cannot_publish_an_unapproved_item(svc_app, calls):
    item = await _draft(calls)
    run = await _flow_run(svc_app, calls, {"nodes": [
        {"id": "publish", "operation": "item-update",
         "options": {"collection": "articles", "key": str(item["id"]), "payload": {"status": "published"}}}],
        "edges": []})
    assert (run["status"], run["error"]["code"], run["error"]["nodeId"]) == ("failed", GATE, "publish"), run
    assert (await _stored(calls, item))["status"] == "draft"


async def test_a_flows_item_create_cannot_create_a_published_item(svc_app, calls):
    await _draft(calls)
    run = await _flow_run(svc_app, calls, {"nodes": [
        {"id": "save", "operation": "item-create",
         "options": {"collection": "articles", "payload": {"title": "Direct", "status": "published"}}}],
        "edges": []})
    assert (run["status"], run["error"]["code"]) == ("failed", GATE), run
    assert [a["title"] for a in (await calls.list("articles"))["data"]] == ["Hello"]


def _payload(result):
    assert len(result.content) == 1
    return json.loads(result.content[0].text)


async def test_an_mcp_update_is_refused_by_the_gate_when_approved(svc_app, live_server, calls):
    item = await _draft(calls)
    server = await live_server(svc_app)
    async with mcp_client(server, calls.headers) as admin:
        answer = _payload(await admin.call_tool("update_item", {"collection": "articles", "id": str(item["id"]),
                                                                "data": {"status": "published"}}))
    assert (answer["status"], answer["code"]) == ("pending_approval", "HITL_REQUIRED"), answer
    # The human approves the tool call; the write it makes still meets the gate, and the
    # approval records the refusal.
    decided = await calls.ok("post", f"/ai/approvals/{answer['approvalId']}/decide", json={"decision": "approved"})
    assert (decided["status"], decided["error"]["code"], decided["result"]) == ("failed", GATE, None), decided
    assert (await _stored(calls, item))["status"] == "draft"


async def test_an_agents_staged_write_cannot_publish_an_unapproved_item(svc_app, calls, run_due_jobs):
    from plugin_tests.agents.conftest import goal, later, update_line, writer_role

    await calls.collection("posts", {"title": "string"}, editorialWorkflow=True)
    item = str((await calls.create("posts", {"title": "Hello"}))["id"])
    await writer_role(calls)
    await goal(calls, update_line(item, {"status": "published"}))
    [staged] = await calls.ok("get", "/agent/staged")
    assert staged["status"] == "pending", staged
    await run_due_jobs(svc_app, now=later(), periodic=False)
    applied = await calls.ok("get", f"/agent/staged/{staged['id']}")
    assert applied["status"] == "blocked" and applied["reason"].startswith(f"{GATE}: "), applied
    assert (await calls.ok("get", f"/items/posts/{item}"))["status"] == "draft"
