"""Flows CRUD through HTTP: graph validation codes with nodeId, per-operation options, cron,
the operations listing, listing filters, tokens returned once, and bad input of every body."""

from kernel.testing import shared as testing_shared
from plugin_tests.flows.conftest import flow

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def test_graph_validation_codes_name_the_node(shared_site):
    calls = shared_site.calls
    cases = [
        (
            {
                "nodes": [{"id": "a", "operation": "log", "options": {"message": "x"}}],
                "edges": [{"from": "a", "to": "zz"}],
            },
            "GRAPH_DANGLING_EDGE",
            "zz",
        ),
        (
            {
                "nodes": [
                    {"id": "a", "operation": "log", "options": {"message": "x"}},
                    {"id": "b", "operation": "log", "options": {"message": "y"}},
                    {"id": "c", "operation": "log", "options": {"message": "z"}},
                ],
                "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "c", "to": "b"}],
            },
            "GRAPH_CYCLE",
            "b",
        ),
        (
            {
                "nodes": [
                    {"id": "a", "operation": "log", "options": {"message": "x"}},
                    {"id": "b", "operation": "log", "options": {"message": "y"}},
                ],
                "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}],
            },
            "GRAPH_NO_ENTRY",
            "a",
        ),
        (
            {
                "nodes": [
                    {"id": "a", "operation": "log", "options": {"message": "x"}},
                    {"id": "b", "operation": "log", "options": {"message": "y"}},
                ],
                "edges": [],
            },
            "GRAPH_NO_ENTRY",
            "b",
        ),
        ({"nodes": [], "edges": []}, "GRAPH_NO_ENTRY", None),
        (
            {"nodes": [{"id": "a", "operation": "teleport", "options": {}}], "edges": []},
            "GRAPH_UNKNOWN_OPERATION",
            "a",
        ),
        (
            {
                "nodes": [{"id": "a", "operation": "log", "options": {"message": "x"}}],
                "edges": [{"from": "a", "to": "a"}],
            },
            "GRAPH_CYCLE",
            "a",
        ),
    ]
    for graph, code, node_id in cases:
        error = await calls.err("post", "/flows", 400, code, json=flow(graph=graph))
        assert error["extensions"]["nodeId"] == node_id, (code, error)
        # A draft may be invalid.
        draft = await calls.ok("post", "/flows", 201, json=flow(status="draft", graph=graph))
        # ... until it is activated.
        error = await calls.err("patch", f"/flows/{draft['id']}", 400, code, json={"status": "active"})
        assert error["extensions"]["nodeId"] == node_id
        await calls.ok("delete", f"/flows/{draft['id']}", 204)


async def test_each_operation_checks_its_options(shared_site):
    calls = shared_site.calls
    bad = [
        ("log", {}, ["message"]),
        ("log", {"message": "{% for x in y %}{{ x }}{% endfor %}"}, ["message"]),
        ("transform", {"json": {"a": ["ok", "{{ x() }}"]}}, ["json", "a", 1]),
        ("log", {"message": "x", "extra": 1}, ["extra"]),
        ("transform", {}, ["json"]),
        ("jsonata", {"expression": ""}, ["expression"]),
        ("jsonata", {"expression": "x" * 20_000}, ["expression"]),
        ("condition", {"filter": {"$trigger": {"n": {"_bogus": 1}}}}, ["filter", "$trigger", "n", "_bogus"]),
        ("condition", {"filter": []}, ["filter"]),
        (
            "condition",
            {"filter": {"_or": [{"$trigger": {"tags": {"_json_contains": ["a"]}}}]}},
            ["filter", "_or", 0, "$trigger", "tags", "_json_contains"],
        ),
        ("request", {"url": "ftp://example.com/"}, ["url"]),
        ("request", {"url": "http://0.0.0.0/"}, ["url"]),
        ("request", {"url": "http://[::]/x"}, ["url"]),
        ("request", {"url": "https://example.com/", "method": "TRACE"}, ["method"]),
        ("request", {"url": "https://example.com/", "headers": {"a": 1}}, ["headers"]),
        ("item-create", {"collection": "posts"}, ["payload"]),
        ("item-create", {"payload": {}}, ["collection"]),
        ("item-update", {"collection": "posts", "payload": {}}, ["key"]),
        ("item-delete", {"collection": "posts"}, ["key"]),
        ("item-read", {"collection": "posts", "query": {"limit": "many"}}, None),
        ("mail", {"to": "not an address", "subject": "s", "body": "b"}, ["to", 0]),
        ("mail", {"to": [], "subject": "s", "body": "b"}, ["to"]),
        ("notify", {"title": "t", "severity": "loud"}, ["severity"]),
    ]
    for operation, options, path in bad:
        graph = {"nodes": [{"id": "n1", "operation": operation, "options": options}], "edges": []}
        error = await calls.err("post", "/flows", 400, "VALIDATION_FAILED", json=flow(graph=graph))
        assert error["extensions"]["nodeId"] == "n1", (operation, error)
        want = [str(p) for p in ["graph", "nodes", 0, "options", *(path or [])]]
        assert error["path"][: len(want)] == want, (operation, error)
    # A 'false' edge only leaves a branching node.
    graph = {
        "nodes": [
            {"id": "a", "operation": "log", "options": {"message": "m"}},
            {"id": "b", "operation": "log", "options": {"message": "m"}},
        ],
        "edges": [{"from": "a", "to": "b", "when": "false"}],
    }
    await calls.err("post", "/flows", 400, "VALIDATION_FAILED", json=flow(graph=graph))


async def test_bad_bodies_are_400(shared_site):
    calls = shared_site.calls
    bodies = [
        [],
        "x",
        {"name": "", "trigger": "manual"},
        {"name": "n", "trigger": "sometimes"},
        {"name": "n", "trigger": "manual", "status": "paused"},
        {"name": "n", "trigger": "manual", "surprise": 1},
        {"name": "n", "trigger": "manual", "graph": []},
        {"name": "n", "trigger": "manual", "graph": {"nodes": {}}},
        {"name": "n", "trigger": "manual", "graph": {"nodes": [{"id": "1a", "operation": "log"}]}},
        {"name": "n", "trigger": "manual", "graph": {"nodes": [{"id": "trigger", "operation": "log"}]}},
        {
            "name": "n",
            "trigger": "manual",
            "graph": {"nodes": [{"id": "a", "operation": "log"}, {"id": "a", "operation": "log"}]},
        },
        {"name": "n", "trigger": "manual", "graph": {"nodes": [], "edges": [{"from": "a"}]}},
        {
            "name": "n",
            "trigger": "manual",
            "graph": {"nodes": [], "edges": [{"from": "a", "to": "b", "when": 1}]},
        },
        {
            "name": "n",
            "trigger": "manual",
            "graph": {"nodes": [{"id": f"n{i}", "operation": "log"} for i in range(101)]},
        },
        {"name": "n", "trigger": "manual", "triggerOptions": []},
        {"name": "n", "trigger": "manual", "triggerOptions": {"cron": "* * * * *"}},
        {"name": "n", "trigger": "event", "triggerOptions": {"action": "explode"}},
        {"name": "n", "trigger": "event", "triggerOptions": {"collection": [1]}},
        {"name": "n", "trigger": "event", "triggerOptions": {"role": "no-such-role"}},
        {"name": "n", "trigger": "webhook", "triggerOptions": {"token": "short"}},
    ]
    for body in bodies:
        await calls.err("post", "/flows", 400, "VALIDATION_FAILED", json=body)
    await calls.err(
        "post",
        "/flows",
        400,
        "VALIDATION_FAILED",
        content=b"{not json",
        headers={"Content-Type": "application/json"},
    )
    for params in ({"status": "weird"}, {"trigger": "x"}):
        await calls.err("get", "/flows", 400, "VALIDATION_FAILED", params=params)
    await calls.err("get", "/flows/" + "x" * 40, 404)
    await calls.err("patch", "/flows/nope", 404, json={"name": "x"})
    await calls.err("delete", "/flows/nope", 404)


async def test_schedule_cron_rules(shared_site):
    calls = shared_site.calls
    for cron in ("* * * *", "61 * * * *", "* * * * * *", "@reboot", "a b c d e", "*/0 * * * *", 5, "x" * 300):
        await calls.err("post", "/flows", 400, "CRON_INVALID", json=flow("schedule", cron=cron))
    await calls.err("post", "/flows", 400, "CRON_REQUIRED", json=flow("schedule"))
    draft = await calls.ok("post", "/flows", 201, json=flow("schedule", status="draft"))
    assert draft["next_run_at"] is None
    await calls.err("patch", f"/flows/{draft['id']}", 400, "CRON_REQUIRED", json={"status": "active"})
    saved = await calls.ok(
        "patch", f"/flows/{draft['id']}", json={"status": "active", "triggerOptions": {"cron": "0  3 * * *"}}
    )
    assert saved["triggerOptions"]["cron"] == "0 3 * * *"
    assert saved["next_run_at"].endswith(("T03:00:00Z", "T03:00:00+00:00"))
    await calls.ok("delete", f"/flows/{draft['id']}", 204)


async def test_crud_listing_and_webhook_token_once(calls, calls_b):
    manual = await calls.ok("post", "/flows", 201, json=flow())
    assert manual["graph"]["nodes"][0] == {"id": "a", "operation": "log", "options": {"message": "step a"}}
    assert manual["graph"]["edges"] == [{"from": "a", "to": "b", "when": "true"}]
    event = await calls.ok(
        "post",
        "/flows",
        201,
        json=flow("event", status="draft", collection="posts", action=["create", "update"]),
    )
    assert event["triggerOptions"] == {"collection": ["posts"], "action": ["create", "update"]}
    hook = await calls.ok("post", "/flows", 201, json=flow("webhook"))
    assert len(hook["token"]) >= 24 and hook["hasToken"] is True
    proposed = "p" * 40
    hook2 = await calls.ok("post", "/flows", 201, json=flow("webhook", token=proposed))
    assert hook2["token"] == proposed and "token" not in hook2["triggerOptions"]
    again = await calls.ok("get", f"/flows/{hook['id']}")
    assert "token" not in again and again["hasToken"] is True and "token" not in again["triggerOptions"]
    listed = await calls.ok("get", "/flows")
    assert {f["id"] for f in listed} == {manual["id"], event["id"], hook["id"], hook2["id"]}
    assert all("token" not in f for f in listed)
    assert [f["id"] for f in await calls.ok("get", "/flows", params={"trigger": "event"})] == [event["id"]]
    assert {f["id"] for f in await calls.ok("get", "/flows", params={"status": "draft"})} == {event["id"]}
    assert await calls.ok("get", "/flows", params={"status": "active", "trigger": "event"}) == []
    renamed = await calls.ok("patch", f"/flows/{manual['id']}", json={"name": "renamed"})
    assert renamed["name"] == "renamed" and renamed["graph"] == manual["graph"]
    # Site B sees, touches and counts none of it.
    assert await calls_b.ok("get", "/flows") == []
    for method, json in (("get", None), ("patch", {"name": "mine"}), ("delete", None)):
        await calls_b.err(method, f"/flows/{manual['id']}", 404, json=json)
    await calls_b.err("get", f"/flows/{manual['id']}/runs", 404)
    await calls.ok("delete", f"/flows/{manual['id']}", 204)
    await calls.err("get", f"/flows/{manual['id']}", 404)


async def test_operations_listing_and_admin_only(svc_app, calls, site, make_member):
    listed = await calls.ok("get", "/flows/operations")
    keys = [op["key"] for op in listed]
    for key in (
        "log",
        "transform",
        "jsonata",
        "condition",
        "request",
        "item-create",
        "item-read",
        "item-update",
        "item-delete",
        "mail",
        "notify",
    ):
        assert key in keys
    assert next(op for op in listed if op["key"] == "request")["options"]["url"]
    editor = await make_member(site, "subscriber")
    for method, path in (("get", "/flows"), ("post", "/flows"), ("get", "/flows/operations")):
        resp = await svc_app.client.request(
            method, f"/api/v1{path}", headers=editor.headers, json={} if method == "post" else None
        )
        assert resp.status_code == 403, (method, path)
