"""Flows bad input, one validation branch a test, on one shared app (docs/flows.md, "The flow",
"Triggers and their options"): each answers 400 in the error envelope with its exact code and
path, and what a draft may hold, a draft saves."""

from __future__ import annotations

import pytest

from plugin_tests.flows.conftest import flow, log_graph, one_node

BAD = 400


async def _refused(calls, body, path, code="VALIDATION_FAILED", method="post", url="/flows"):
    error = await calls.err(method, url, BAD, code, json=body)
    assert error["path"][: len(path)] == [str(p) for p in path], error
    return error


async def test_a_graph_with_a_key_besides_nodes_and_edges_is_refused(shared_site):
    await _refused(shared_site.calls, flow(graph={"nodes": [], "edges": [], "layout": {}}), ["graph"])


@pytest.mark.parametrize("node", [["a", "log"], {"id": "a", "operation": "log", "x": 1}])
async def test_a_node_that_is_not_id_operation_options_is_refused(shared_site, node):
    await _refused(
        shared_site.calls, flow(status="draft", graph={"nodes": [node], "edges": []}), ["graph", "nodes", 0]
    )


@pytest.mark.parametrize("operation", ["", "o" * 41, 7])
async def test_an_operation_key_that_cannot_be_one_is_refused_in_a_draft_too(shared_site, operation):
    body = flow(status="draft", graph={"nodes": [{"id": "a", "operation": operation}], "edges": []})
    error = await _refused(shared_site.calls, body, ["graph", "nodes", 0, "operation"])
    assert error["extensions"]["nodeId"] == "a"


async def test_node_options_that_are_not_an_object_are_refused(shared_site):
    body = flow(
        status="draft", graph={"nodes": [{"id": "a", "operation": "log", "options": ["m"]}], "edges": []}
    )
    error = await _refused(shared_site.calls, body, ["graph", "nodes", 0, "options"])
    assert error["extensions"]["nodeId"] == "a"


async def test_null_node_options_are_saved_as_an_empty_object(shared_site):
    calls = await shared_site.new_site("fl")
    draft = await calls.ok(
        "post",
        "/flows",
        201,
        json=flow(status="draft", graph={"nodes": [{"id": "a", "operation": "log", "options": None}]}),
    )
    assert draft["graph"] == {"nodes": [{"id": "a", "operation": "log", "options": {}}], "edges": []}
    # ... which a 'log' node cannot run with: activating it names the option.
    error = await _refused(
        calls,
        {"status": "active"},
        ["graph", "nodes", 0, "options", "message"],
        method="patch",
        url=f"/flows/{draft['id']}",
    )
    assert error["extensions"]["nodeId"] == "a"


async def test_more_than_300_edges_are_refused(shared_site):
    edges = [{"from": "a", "to": "b"}] * 301
    await _refused(
        shared_site.calls, flow(status="draft", graph={"nodes": [], "edges": edges}), ["graph", "edges"]
    )


@pytest.mark.parametrize(
    "edge",
    [
        {"from": "", "to": "b"},
        {"from": "a", "to": "b" * 65},
        {"from": "a", "to": 1},
        {"from": "a", "to": "b", "label": "x"},
        "a->b",
    ],
)
async def test_an_edge_that_is_not_from_to_when_is_refused(shared_site, edge):
    await _refused(
        shared_site.calls, flow(status="draft", graph={"nodes": [], "edges": [edge]}), ["graph", "edges", 0]
    )


async def test_options_over_64_kib_are_refused_when_active_and_kept_in_a_draft(shared_site):
    calls = await shared_site.new_site("fl")
    graph = one_node("transform", {"json": "x" * 70_000})
    error = await _refused(calls, flow(graph=graph), ["graph", "nodes", 0, "options"])
    assert error["extensions"]["nodeId"] == "n1" and "65536" in error["message"]
    draft = await calls.ok("post", "/flows", 201, json=flow(status="draft", graph=graph))
    await _refused(
        calls,
        {"status": "active"},
        ["graph", "nodes", 0, "options"],
        method="patch",
        url=f"/flows/{draft['id']}",
    )


@pytest.mark.parametrize("name", ["", "   ", "n" * 101, 5, None])
async def test_a_name_that_is_not_1_to_100_characters_is_refused(shared_site, name):
    await _refused(shared_site.calls, {"name": name, "trigger": "manual"}, ["name"])


async def test_a_name_is_trimmed_and_a_flow_without_status_is_a_draft(shared_site):
    calls = await shared_site.new_site("fl")
    saved = await calls.ok("post", "/flows", 201, json={"name": "  Quick post ", "trigger": "manual"})
    assert (saved["name"], saved["status"], saved["graph"], saved["triggerOptions"]) == (
        "Quick post",
        "draft",
        {"nodes": [], "edges": []},
        {},
    )
    # A draft does not run.
    await calls.err("post", f"/flows/{saved['id']}/run", 404, "NOT_FOUND", json={})


async def test_null_trigger_options_are_none(shared_site):
    calls = await shared_site.new_site("fl")
    saved = await calls.ok("post", "/flows", 201, json={**flow(), "triggerOptions": None})
    assert saved["triggerOptions"] == {}


@pytest.mark.parametrize(
    ("trigger", "options", "key"),
    [
        ("manual", {"role": "admin"}, "role"),
        ("schedule", {"cron": "0 * * * *", "collection": "posts"}, "collection"),
        ("webhook", {"cron": "0 * * * *"}, "cron"),
        ("event", {"token": "t" * 30}, "token"),
    ],
)
async def test_an_option_the_trigger_does_not_take_is_refused(shared_site, trigger, options, key):
    error = await _refused(
        shared_site.calls, flow(trigger, status="draft", **options), ["triggerOptions", key]
    )
    assert trigger in error["message"]


@pytest.mark.parametrize("role", [5, "", "r" * 37])
async def test_a_role_that_cannot_be_a_role_id_is_refused(shared_site, role):
    await _refused(shared_site.calls, flow("event", status="draft", role=role), ["triggerOptions", "role"])


async def test_a_draft_naming_a_role_of_no_site_is_refused(shared_site):
    """A draft is checked for shape only, but a role it names must be one of the site's."""
    await _refused(
        shared_site.calls,
        flow("schedule", status="draft", role="01a2433a-0000-7000-8000-000000000000"),
        ["triggerOptions", "role"],
    )


async def test_a_role_of_another_site_is_refused(shared_site):
    other = await shared_site.new_site("fo")
    role = await other.ok("post", "/roles", 201, json={"name": "Elsewhere"})
    await _refused(shared_site.calls, flow("event", role=role["id"]), ["triggerOptions", "role"])
    saved = await other.ok("post", "/flows", 201, json=flow("event", role=role["id"]))
    assert saved["triggerOptions"]["role"] == role["id"]


@pytest.mark.parametrize("collection", [[], ["c"] * 51, ["c" * 65], [""]])
async def test_an_event_collection_list_out_of_bounds_is_refused(shared_site, collection):
    await _refused(
        shared_site.calls,
        flow("event", status="draft", collection=collection),
        ["triggerOptions", "collection"],
    )


async def test_event_filters_are_lists_without_repeats(shared_site):
    calls = await shared_site.new_site("fl")
    saved = await calls.ok(
        "post",
        "/flows",
        201,
        json=flow("event", status="draft", collection="posts", action=["update", "create", "update"]),
    )
    assert saved["triggerOptions"] == {"collection": ["posts"], "action": ["update", "create"]}


@pytest.mark.parametrize(
    "token", ["t" * 23, "t" * 201, "t" * 20 + " " + "t" * 10, "é" * 30, 12345678901234567890123456]
)
async def test_a_proposed_webhook_token_that_cannot_be_one_is_refused(shared_site, token):
    await _refused(shared_site.calls, flow("webhook", token=token), ["triggerOptions", "token"])


async def test_webhook_tokens_of_24_and_200_characters_are_taken(shared_site):
    calls = await shared_site.new_site("fl")
    for token in ("a" * 24, "~" * 200):
        saved = await calls.ok("post", "/flows", 201, json=flow("webhook", token=token))
        assert saved["token"] == token and saved["hasToken"] is True


@pytest.mark.parametrize("body", [[], "x", 1, None])
async def test_a_patch_body_that_is_not_an_object_is_refused(shared_site, body):
    calls = await shared_site.new_site("fl")
    saved = await calls.ok("post", "/flows", 201, json=flow())
    await calls.err("patch", f"/flows/{saved['id']}", BAD, "VALIDATION_FAILED", json=body)


async def test_a_patch_with_an_unknown_key_changes_nothing(shared_site):
    calls = await shared_site.new_site("fl")
    saved = await calls.ok("post", "/flows", 201, json=flow())
    await _refused(
        calls, {"name": "renamed", "owner": "me"}, ["owner"], method="patch", url=f"/flows/{saved['id']}"
    )
    assert (await calls.ok("get", f"/flows/{saved['id']}"))["name"] == saved["name"]


@pytest.mark.parametrize("params", [{"status": "a" * 21}, {"trigger": "t" * 21}])
async def test_a_listing_filter_longer_than_any_value_is_refused(shared_site, params):
    await shared_site.calls.err("get", "/flows", BAD, "VALIDATION_FAILED", params=params)


@pytest.mark.parametrize(
    ("operation", "options", "path"),
    [
        ("item-update", {"collection": "posts", "key": True, "payload": {}}, ["key"]),
        ("item-read", {"collection": "posts", "key": "k" * 201}, ["key"]),
        ("item-read", {"collection": "posts", "query": "limit=1"}, ["query"]),
        ("item-create", {"collection": "c" * 65, "payload": {}}, ["collection"]),
        ("item-create", {"collection": "posts", "payload": "not a template"}, ["payload"]),
        ("notify", {"title": "t" * 301}, ["title"]),
        ("notify", {"title": "t", "deepLink": "d" * 2001}, ["deepLink"]),
        ("jsonata", {"expression": "1", "bind": {}}, ["bind"]),
        ("condition", {"filter": {}, "else": True}, ["else"]),
    ],
)
async def test_an_option_branch_not_covered_elsewhere_is_refused(shared_site, operation, options, path):
    error = await _refused(
        shared_site.calls, flow(graph=one_node(operation, options)), ["graph", "nodes", 0, "options", *path]
    )
    assert error["extensions"]["nodeId"] == "n1"


async def test_a_condition_may_have_false_edges_and_the_run_follows_one_side(shared_site):
    calls = await shared_site.new_site("fl")
    graph = {
        "nodes": [
            {"id": "big", "operation": "condition", "options": {"filter": {"$trigger": {"n": {"_gt": 10}}}}},
            {"id": "yes", "operation": "log", "options": {"message": "big"}},
            {"id": "no", "operation": "log", "options": {"message": "small {{ $trigger.n }}"}},
        ],
        "edges": [{"from": "big", "to": "yes"}, {"from": "big", "to": "no", "when": "false"}],
    }
    saved = await calls.ok("post", "/flows", 201, json=flow(graph=graph))
    started = await calls.ok("post", f"/flows/{saved['id']}/run", 202, json={"n": 3})
    await shared_site.app.kernel.jobs.run_due()
    run = await calls.ok("get", f"/flows/{saved['id']}/runs/{started['runId']}")
    assert [(s["nodeId"], s["output"]) for s in run["steps"]] == [
        ("big", {"passed": False}),
        ("no", {"message": "small 3"}),
    ]


async def test_a_graph_shaped_once_keeps_its_defaults(shared_site):
    calls = await shared_site.new_site("fl")
    saved = await calls.ok("post", "/flows", 201, json=flow(graph=log_graph("a", "b", "c")))
    assert [e["when"] for e in saved["graph"]["edges"]] == ["true", "true"]
    assert await calls.ok("get", f"/flows/{saved['id']}") == saved
