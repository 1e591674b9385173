"""Flows refusals on one shared app, a site per test where a test writes: item operations with
options they cannot run, a run of a draft or of no flow, and a flow of site A naming site B's
item, which it can neither read nor change. (A call without a token is
tests/http/test_auth_before_body.py's.)"""

from __future__ import annotations

import pytest

NODE = "op"
NO_ITEM = "01a2433a-0000-7000-8000-000000000000"
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


@pytest.mark.parametrize("params", [{"limit": "0"}, {"limit": "x"}, {"limit": "-1"}, {"offset": "-1"},
                                    {"page": "0"}])
async def test_a_runs_page_that_cannot_be_right_is_400(shared_site, params):
    calls = await shared_site.new_site("fl")
    flow = await calls.ok("post", "/flows", 201, json={"name": "f", "status": "draft", "trigger": "manual",
                                                       "graph": {"nodes": [], "edges": []}})
    await calls.err("get", f"/flows/{flow['id']}/runs", 400, "VALIDATION_FAILED", params=params)


async def test_item_writes_are_never_retried(shared_site):
    listed = {op["key"]: op["retrySafe"] for op in await shared_site.calls.ok("get", "/flows/operations")}
    assert {key: listed[key] for key in ("item-create", "item-update", "item-delete", "item-read")} == {
        "item-create": False, "item-update": False, "item-delete": False, "item-read": True}


async def test_a_failed_item_write_is_tried_once(shared_site):
    calls = await shared_site.new_site("fl")
    await calls.collection("posts", {"title": "string"})
    nodes = [{"id": "gone", "operation": "item-delete", "options": {"collection": "posts", "key": NO_ITEM}}]
    flow = await calls.ok("post", "/flows", 201, json={"name": "d", "status": "active", "trigger": "manual",
                                                       "graph": {"nodes": nodes, "edges": []}})
    started = await calls.ok("post", f"/flows/{flow['id']}/run", 202, json={})
    await shared_site.app.kernel.jobs.run_due()
    run = await calls.ok("get", f"/flows/{flow['id']}/runs/{started['runId']}")
    assert (run["status"], run["error"]["code"]) == ("failed", "RECORD_NOT_FOUND"), run
    assert [(s["nodeId"], s["status"], s["attempts"]) for s in run["steps"]] == [("gone", "failed", 1)]
