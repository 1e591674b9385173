"""Running flows through HTTP: manual (as the caller, through the job queue), data between steps,
branches, redaction, bounds, hostile JSONata, request against a real local HTTP server, webhooks
(token, stripped headers, truthful failure), schedule (idempotent sweep), retention and tenancy."""

import asyncio

from kernel.testing import shared as testing_shared
from plugin_tests.flows.conftest import FLOWS_ENV, HOSTILE_JSONATA_MS


async def _run(app, calls, flow_id, body):
    started = await calls.ok("post", f"/flows/{flow_id}/run", 202, json=body)
    assert started["status"] == "running" and started["startedAt"]
    await app.kernel.jobs.run_due()
    return await calls.ok("get", f"/flows/{flow_id}/runs/{started['runId']}")


async def test_manual_run_data_branches_redaction_and_items(svc_app, calls, calls_b, site, make_member):
    await calls.collection("posts", {"title": "string"})
    graph = {
        "nodes": [
            {"id": "shape", "operation": "transform",
             "options": {"json": {"title": "{{ $trigger.title }}!", "apiToken": "{{ $trigger.title }}"}}},
            {"id": "twice", "operation": "jsonata", "options": {"expression": "$trigger.n * 2"}},
            {"id": "big", "operation": "condition", "options": {"filter": {"twice": {"_gt": 4}}}},
            {"id": "save", "operation": "item-create",
             "options": {"collection": "posts", "payload": {"title": "{{ $shape.title }}"}}},
            {"id": "small", "operation": "log", "options": {"message": "small: {{ $last.passed }}"}},
        ],
        "edges": [{"from": "shape", "to": "twice"}, {"from": "twice", "to": "big"},
                  {"from": "big", "to": "save"}, {"from": "big", "to": "small", "when": "false"}],
    }
    flow = await calls.ok("post", "/flows", 201, json={"name": "m", "status": "active", "trigger": "manual",
                                                       "graph": graph})
    run = await _run(svc_app, calls, flow["id"], {"title": "Hello", "n": 3, "password": "hunter2"})
    assert run["status"] == "succeeded", run
    assert run["input"] == {"title": "Hello", "n": 3, "password": "**********"}
    steps = {s["nodeId"]: s for s in run["steps"]}
    assert [s["nodeId"] for s in run["steps"]] == ["shape", "twice", "big", "save"]
    assert steps["shape"]["output"] == {"title": "Hello!", "apiToken": "**********"}
    assert steps["twice"]["output"] == 6 and steps["big"]["output"] == {"passed": True}
    created = steps["save"]["output"]
    assert created["title"] == "Hello!"
    assert (await calls.get("posts", created["id"]))["title"] == "Hello!"
    assert all(s["status"] == "succeeded" and s["durationMs"] >= 0 for s in run["steps"])
    # The false branch.
    run = await _run(svc_app, calls, flow["id"], {"title": "x", "n": 1})
    assert [s["nodeId"] for s in run["steps"]] == ["shape", "twice", "big", "small"]
    assert run["steps"][-1]["output"] == {"message": "small: false"}
    listed = await calls.ok("get", f"/flows/{flow['id']}/runs", full=True)
    assert listed["meta"]["total"] == 2 and [r["status"] for r in listed["data"]] == ["succeeded"] * 2
    assert "steps" not in listed["data"][0]
    # Permission: a member without admin access or flows:run may not run it; B cannot see it.
    member = await make_member(site, "subscriber")
    resp = await svc_app.client.post(f"/api/v1/flows/{flow['id']}/run", headers=member.headers, json={})
    assert resp.status_code == 403 and resp.json()["errors"][0]["code"] == "PERMISSION_DENIED"
    # ... and is told so before its body is read: not JSON, still 403.
    resp = await svc_app.client.post(f"/api/v1/flows/{flow['id']}/run", content=b"{nope",
                                     headers={**member.headers, "Content-Type": "application/json"})
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (403, "PERMISSION_DENIED"), resp.text
    await calls_b.err("post", f"/flows/{flow['id']}/run", 404, json={})
    await calls_b.err("get", f"/flows/{flow['id']}/runs/{run['runId']}", 404)
    await calls.err("get", f"/flows/{flow['id']}/runs/nope", 404)
    await calls.err("post", f"/flows/{flow['id']}/run", 400, "VALIDATION_FAILED", content=b"{nope",
                    headers={"Content-Type": "application/json"})
    # Only active manual flows run.
    await calls.ok("patch", f"/flows/{flow['id']}", json={"status": "draft"})
    await calls.err("post", f"/flows/{flow['id']}/run", 404, json={})


async def test_run_as_the_caller_and_bounds(svc_app, calls, site, make_member):
    await calls.collection("secrets_box", {"label": "string"})
    graph = {"nodes": [{"id": "read", "operation": "item-read", "options": {"collection": "secrets_box"}}],
             "edges": []}
    flow = await calls.ok("post", "/flows", 201, json={"name": "r", "status": "active", "trigger": "manual",
                                                       "graph": graph})
    # A member granted flows:run but no read on the collection: the read step is refused.
    member = await make_member(site, "subscriber")
    await calls.grant([{"collection": "*", "action": "flows:run"}], {"userId": member.id})
    svc_app.kernel.access.invalidate(site)
    resp = await svc_app.client.post(f"/api/v1/flows/{flow['id']}/run", headers=member.headers, json={})
    assert resp.status_code == 202, resp.text
    await svc_app.kernel.jobs.run_due()
    run = await calls.ok("get", f"/flows/{flow['id']}/runs/{resp.json()['data']['runId']}")
    assert run["status"] == "failed" and run["error"]["code"] == "PERMISSION_DENIED", run
    assert run["error"]["nodeId"] == "read"
    # The admin's run reads it.
    assert (await _run(svc_app, calls, flow["id"], {}))["status"] == "succeeded"
    # Output size, hostile JSONata and a templated refused URL fail their step, truthfully.
    cases = [
        ({"id": "big", "operation": "transform", "options": {"json": "{{ $trigger.blob }}"}}, "OUTPUT_TOO_LARGE"),
        ({"id": "out", "operation": "request", "options": {"url": "http://{{ $trigger.host }}/"}}, "URL_REFUSED"),
        ({"id": "mail", "operation": "mail", "options": {"to": "a@example.com", "subject": "s", "body": "b"}},
         "EMAIL_NOT_CONFIGURED"),
    ]
    chain = {"nodes": [{"id": f"n{i}", "operation": "log", "options": {"message": "m"}} for i in range(60)],
             "edges": [{"from": f"n{i}", "to": f"n{i + 1}"} for i in range(59)]}
    long = await calls.ok("post", "/flows", 201, json={"name": "long", "status": "active", "trigger": "manual",
                                                       "graph": chain})
    run = await _run(svc_app, calls, long["id"], {})
    assert run["status"] == "failed" and run["error"]["code"] == "STEP_LIMIT" and len(run["steps"]) == 50
    for node, code in cases:
        bounded = await calls.ok("post", "/flows", 201, json={"name": node["id"], "status": "active",
                                                              "trigger": "manual",
                                                              "graph": {"nodes": [node], "edges": []}})
        run = await _run(svc_app, calls, bounded["id"], {"blob": "x" * 5000, "host": "0.0.0.0"})
        assert run["status"] == "failed" and run["steps"][0]["error"]["code"] == code, (code, run)


async def test_hostile_jsonata_fails_its_step(make_app):
    """On an app whose JSONata limit is short (the other tests' is long, so that their ordinary
    steps never miss it on a loaded machine): a runaway expression fails its step, truthfully."""
    app, [calls] = await testing_shared.own_app(
        make_app, env={**FLOWS_ENV, "SVC_JSONATA_TIMEOUT_MS": str(HOSTILE_JSONATA_MS)})
    runaways = {"spin": "($f := function($x){$f($x)}; $f(1))", "sum": "$sum([1..100000000])"}
    for name, expression in runaways.items():
        node = {"id": name, "operation": "jsonata", "options": {"expression": expression}}
        flow = await calls.ok("post", "/flows", 201, json={"name": name, "status": "active", "trigger": "manual",
                                                           "graph": {"nodes": [node], "edges": []}})
        run = await _run(app, calls, flow["id"], {})
        assert run["status"] == "failed" and run["steps"][0]["error"]["code"] == "JSONATA_FAILED", run


async def test_event_flows_run_after_commit_and_never_fail_the_write(svc_app, calls, calls_b):
    await calls.collection("posts", {"title": "string"})
    await calls_b.collection("posts", {"title": "string"})
    reader = await calls.ok("post", "/flows", 201, json={
        "name": "on-create", "status": "active", "trigger": "event",
        "triggerOptions": {"collection": "posts", "action": "create", "role": "admin"},
        "graph": {"nodes": [{"id": "read", "operation": "item-read",
                             "options": {"collection": "posts", "key": "{{ $trigger.key }}"}},
                            {"id": "touch", "operation": "item-update",
                             "options": {"collection": "posts", "key": "{{ $trigger.key }}",
                                         "payload": {"title": "{{ $read.title }} (seen)"}}}],
                  "edges": [{"from": "read", "to": "touch"}]}})
    public = await calls.ok("post", "/flows", 201, json={
        "name": "public-reader", "status": "active", "trigger": "event",
        "triggerOptions": {"collection": ["posts"]},
        "graph": {"nodes": [{"id": "read", "operation": "item-read",
                             "options": {"collection": "posts", "key": "{{ $trigger.key }}"}}], "edges": []}})
    item = await calls.create("posts", {"title": "First"})
    await calls_b.create("posts", {"title": "Other site"})

    async def runs_of(flow_id, count):
        for _ in range(200):
            data = await calls.ok("get", f"/flows/{flow_id}/runs")
            if len(data) >= count and all(r["status"] != "running" for r in data):
                return data
            await asyncio.sleep(0.05)
        raise AssertionError(f"no run of {flow_id}")

    [run] = await runs_of(reader["id"], 1)
    detail = await calls.ok("get", f"/flows/{reader['id']}/runs/{run['runId']}")
    assert detail["status"] == "succeeded", detail
    assert detail["input"]["key"] == item["id"] and detail["input"]["action"] == "create"
    assert "First" not in str(detail["input"])  # thin: ids and field names, no values
    assert (await calls.get("posts", item["id"]))["title"] == "First (seen)"
    causes = [r.get("causedBy") for r in await calls.ok("get", f"/items/posts/{item['id']}/revisions")]
    assert f"flow-run:{run['runId']}" in causes, causes  # the run is the write's cause
    # The public role may not read posts here: that flow fails, the write did not.
    [failed] = await runs_of(public["id"], 1)
    assert failed["status"] == "failed"
    # The flow's own update (cause flow-run:...) started no further run; site B's item none at all.
    await asyncio.sleep(0.3)
    assert len(await calls.ok("get", f"/flows/{reader['id']}/runs")) == 1
    assert len(await calls.ok("get", f"/flows/{public['id']}/runs")) == 1
    # Durable: writes committed while no dispatcher runs (every worker down) start their flows
    # once one is back, from the flow's checkpoint in the event log.
    await svc_app.kernel.events.stop()
    second = await calls.create("posts", {"title": "While down"})
    await asyncio.sleep(0.3)
    assert len(await calls.ok("get", f"/flows/{reader['id']}/runs")) == 1
    await svc_app.kernel.events.start()
    runs = await runs_of(reader["id"], 2)
    assert runs[0]["status"] == "succeeded"
    assert (await calls.get("posts", second["id"]))["title"] == "While down (seen)"
    # A draft flow gets nothing; reactivated, it starts from the tail (no backlog replay).
    await calls.ok("patch", f"/flows/{reader['id']}", json={"status": "draft"})
    await calls.create("posts", {"title": "Unwatched"})
    await calls.ok("patch", f"/flows/{reader['id']}", json={"status": "active"})
    await asyncio.sleep(0.3)
    assert len(await calls.ok("get", f"/flows/{reader['id']}/runs")) == 2


async def test_each_step_keeps_its_rendered_redacted_input(svc_app, calls):
    # -- flows editor (studio): a step's record holds the options its operation received
    graph = {
        "nodes": [
            {"id": "greet", "operation": "log", "options": {"message": "Hi {{ $trigger.name }}"}},
            {"id": "shape", "operation": "transform",
             "options": {"json": {"who": "{{ $trigger.name }}", "secretKey": "{{ $trigger.name }}"}}},
            {"id": "twice", "operation": "jsonata", "options": {"expression": "$trigger.n * 2"}},
            {"id": "big", "operation": "transform", "options": {"json": "{{ $trigger.blob }}"}},
        ],
        "edges": [{"from": "greet", "to": "shape"}, {"from": "shape", "to": "twice"}, {"from": "twice", "to": "big"}],
    }
    flow = await calls.ok("post", "/flows", 201, json={"name": "inputs", "status": "active", "trigger": "manual",
                                                       "graph": graph})
    run = await _run(svc_app, calls, flow["id"], {"name": "Ada", "n": 2, "blob": "x" * 100})
    assert run["status"] == "succeeded", run
    steps = {s["nodeId"]: s for s in run["steps"]}
    assert steps["greet"]["input"] == {"message": "Hi Ada"}
    assert steps["shape"]["input"] == {"json": {"who": "Ada", "secretKey": "**********"}}
    assert steps["twice"]["input"] == {"expression": "$trigger.n * 2"}  # a raw option, as written
    assert steps["big"]["input"] == {"json": "x" * 100}
    # Larger than SVC_FLOWS_MAX_OUTPUT_BYTES (4096 here): not kept; the output is refused as before.
    run = await _run(svc_app, calls, flow["id"], {"name": "Ada", "n": 2, "blob": "x" * 5000})
    assert run["status"] == "failed" and run["error"]["code"] == "OUTPUT_TOO_LARGE"
    last = run["steps"][-1]
    assert (last["nodeId"], last["input"], last["output"]) == ("big", None, None)
