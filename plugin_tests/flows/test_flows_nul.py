"""A run record keeps what PostgreSQL's JSONB can hold: a NUL (or a lone surrogate) in a webhook's
body or query, in a step's output or in an upstream's answer becomes U+FFFD in the stored run, and
the run ends. Before, the finishing write failed on PostgreSQL: a 500 for the webhook, and a
manual or event run left ``running`` for ever."""

from plugin_tests.flows.conftest import one_node


async def test_nul_in_a_webhook_a_step_and_an_upstream_is_stored_as_fffd(svc_app, calls, site, http_receiver):
    upstream = http_receiver.serve("/nul", {"v": "up\x00stream", "k\x00": 1})
    graph = {"nodes": [{"id": "echo", "operation": "transform", "options": {"json": "{{ $trigger }}"}},
                       {"id": "decode", "operation": "jsonata", "options": {"expression": '$decodeUrlComponent("a%00b")'}},
                       {"id": "call", "operation": "request", "options": {"url": upstream}}],
             "edges": [{"from": "echo", "to": "decode"}, {"from": "decode", "to": "call"}]}
    hook = await calls.ok("post", "/flows", 201, json={"name": "w", "status": "active", "trigger": "webhook",
                                                       "graph": graph})
    resp = await svc_app.client.post(f"/api/v1/flows/{hook['id']}/trigger", params={"q": "x\x00"},
                                     json={"n\x00": "b\x00dy"},
                                     headers={"X-Svc-Site": site, "x-flow-token": hook["token"]})
    assert resp.status_code == 200, resp.text
    run = await calls.ok("get", f"/flows/{hook['id']}/runs/{resp.json()['data']['runId']}")
    assert run["status"] == "succeeded", run
    assert run["input"]["body"] == {"n\ufffd": "b\ufffddy"} and run["input"]["query"] == {"q": "x\ufffd"}
    steps = {s["nodeId"]: s["output"] for s in run["steps"]}
    assert steps["decode"] == "a\ufffdb"
    assert steps["call"]["data"] == {"v": "up\ufffdstream", "k\ufffd": 1}
    # -- flows editor: a step's input (its rendered options) is stored the same way
    assert run["steps"][0]["input"]["json"]["body"] == {"n\ufffd": "b\ufffddy"}
    # A manual run (through the job queue) whose step makes a NUL ends too.
    manual = await calls.ok("post", "/flows", 201, json={"name": "m", "status": "active", "trigger": "manual", "graph":
                            one_node("jsonata", {"expression": '$decodeUrlComponent("%00")'})})
    started = await calls.ok("post", f"/flows/{manual['id']}/run", 202, json={})
    await svc_app.kernel.jobs.run_due()
    run = await calls.ok("get", f"/flows/{manual['id']}/runs/{started['runId']}")
    assert (run["status"], run["steps"][0]["output"]) == ("succeeded", "\ufffd")
