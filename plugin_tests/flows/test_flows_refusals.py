"""Flows refusals on one shared app, a site per test where a test writes: item operations with
options they cannot run, a run of a draft or of no flow, and a flow of site A naming site B's
item, which it can neither read nor change. (A call without a token is
tests/http/test_auth_before_body.py's.)"""

from __future__ import annotations

import pytest

NODE = "op"
ITEM_OPTIONS = [
    ("item-create", {"payload": {"title": "x"}}),                       # no collection
    ("item-create", {"collection": "posts"}),                           # no payload
    ("item-update", {"collection": "posts", "payload": {"title": "x"}}),  # no key
    ("item-update", {"collection": "posts", "key": "1", "payload": "x"}),
    ("item-delete", {"collection": "posts"}),                           # no key
    ("item-delete", {"collection": "posts", "key": "1", "extra": True}),
]


@pytest.mark.parametrize(("operation", "options"), ITEM_OPTIONS,
                         ids=[f"{op}-{i}" for i, (op, _) in enumerate(ITEM_OPTIONS)])
async def test_an_item_operation_with_options_it_cannot_run_is_400(shared_site, operation, options):
    body = {"name": "f", "status": "active", "trigger": "manual",
            "graph": {"nodes": [{"id": NODE, "operation": operation, "options": options}], "edges": []}}
    error = await shared_site.calls.err("post", "/flows", 400, "VALIDATION_FAILED", json=body)
    assert error["extensions"]["nodeId"] == NODE, error


async def test_a_draft_saves_those_options_and_does_not_run(shared_site):
    calls = await shared_site.new_site("fl")
    body = {"name": "f", "status": "draft", "trigger": "manual",
            "graph": {"nodes": [{"id": NODE, "operation": "item-update", "options": {"collection": "posts"}}],
                      "edges": []}}
    draft = await calls.ok("post", "/flows", 201, json=body)
    await calls.err("post", f"/flows/{draft['id']}/run", 404, "NOT_FOUND", json={})
    assert await calls.ok("get", f"/flows/{draft['id']}/runs") == []


async def test_a_flow_of_a_cannot_reach_an_item_of_b(shared_site):
    a, b = await shared_site.new_site("fa"), await shared_site.new_site("fb")
    for calls in (a, b):
        await calls.collection("posts", {"title": "string"})
    theirs = await b.create("posts", {"title": "b's"})
    nodes = [{"id": "change", "operation": "item-update",
              "options": {"collection": "posts", "key": str(theirs["id"]), "payload": {"title": "from a"}}}]
    flow = await a.ok("post", "/flows", 201, json={"name": "reach", "status": "active", "trigger": "manual",
                                                   "graph": {"nodes": nodes, "edges": []}})
    started = await a.ok("post", f"/flows/{flow['id']}/run", 202, json={})
    await shared_site.app.kernel.jobs.run_due()
    run = await a.ok("get", f"/flows/{flow['id']}/runs/{started['runId']}")
    assert (run["status"], run["error"]["code"], run["error"]["nodeId"]) == ("failed", "RECORD_NOT_FOUND", "change")
    assert (await b.ok("get", f"/items/posts/{theirs['id']}"))["title"] == "b's"
    await b.err("get", f"/flows/{flow['id']}/runs/{started['runId']}", 404, "NOT_FOUND")
