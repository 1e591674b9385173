"""Webhook, schedule and retention through HTTP, the request operation against a real local
HTTP server, and an extension's operation registered through ``register_flow_operations``."""

import asyncio
import datetime as dt

from kernel import hookimpl
from plugins.flows import runner, triggers
from plugins.flows.api import Operation, OptionError


def _one(node):
    return {"nodes": [node], "edges": []}


async def test_webhook_token_headers_and_truthful_outcome(svc_app, calls, calls_b, site, site_b, http_receiver):
    client = svc_app.client
    ok_url = http_receiver.serve("/ok", {"pong": True})
    bad_url = http_receiver.serve("/bad", {"oops": True}, status=500)
    graph = {"nodes": [{"id": "echo", "operation": "transform", "options": {"json": "{{ $trigger }}"}},
                       {"id": "call", "operation": "request",
                        "options": {"url": ok_url, "method": "POST", "body": {"got": "{{ $trigger.body.n }}"}}}],
             "edges": [{"from": "echo", "to": "call"}]}
    hook = await calls.ok("post", "/flows", 201, json={"name": "w", "status": "active", "trigger": "webhook",
                                                       "graph": graph})
    token = hook["token"]
    path = f"/api/v1/flows/{hook['id']}/trigger"
    headers = {"X-Svc-Site": site, "x-flow-token": token, "Cookie": "sid=1", "X-Api-Key": "k",
               "X-Custom-Token": "t", "X-Trace": "keep"}
    resp = await client.post(path, params={"q": "1"}, json={"n": 7}, headers=headers)
    assert resp.status_code == 200, resp.text
    answer = resp.json()["data"]
    assert answer["status"] == "succeeded" and answer["runId"] and answer["finishedAt"]
    run = await calls.ok("get", f"/flows/{hook['id']}/runs/{answer['runId']}")
    seen = run["steps"][0]["output"]
    assert seen["body"] == {"n": 7} and seen["query"] == {"q": "1"}
    lowered = {k.lower() for k in seen["headers"]}
    assert "x-trace" in lowered
    assert not lowered & {"cookie", "x-api-key", "x-custom-token", "x-flow-token", "authorization"}
    assert run["steps"][1]["output"]["status"] == 200 and run["steps"][1]["output"]["data"] == {"pong": True}
    assert http_receiver.received("/ok")[-1].json() == {"got": 7}  # a whole reference keeps its type
    # Bearer works too; a wrong or missing token is 401; another site's header finds nothing.
    resp = await client.post(path, json={}, headers={"X-Svc-Site": site, "Authorization": f"Bearer {token}"})
    assert resp.status_code == 200
    for bad in ({"x-flow-token": "x" * 43}, {"Authorization": "Bearer nope"}, {}):
        resp = await client.post(path, content=b"{nope", headers={"X-Svc-Site": site, **bad,
                                                                   "Content-Type": "application/json"})
        assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"
    resp = await client.post(path, content=b"{nope", headers={"X-Svc-Site": site, "x-flow-token": token,
                                                               "Content-Type": "application/json"})
    assert resp.status_code == 400
    resp = await client.post(path, content=b"plain words", headers={"X-Svc-Site": site, "x-flow-token": token,
                                                                     "Content-Type": "text/plain"})
    assert resp.status_code == 200
    resp = await client.post(path, json={}, headers={"X-Svc-Site": site_b, "x-flow-token": token})
    assert resp.status_code == 404
    b_hook = await calls_b.ok("post", "/flows", 201, json={"name": "w", "status": "active", "trigger": "webhook",
                                                           "graph": graph})
    resp = await client.post(path, json={}, headers={"X-Svc-Site": site, "x-flow-token": b_hook["token"]})
    assert resp.status_code == 401
    # A failing run answers 502 FLOW_RUN_FAILED with its id; the run says why.
    failing = await calls.ok("post", "/flows", 201, json={"name": "f", "status": "active", "trigger": "webhook",
                                                          "graph": _one({"id": "call", "operation": "request",
                                                                         "options": {"url": bad_url}})})
    resp = await client.post(f"/api/v1/flows/{failing['id']}/trigger", json={},
                             headers={"X-Svc-Site": site, "x-flow-token": failing["token"]})
    assert resp.status_code == 502, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "FLOW_RUN_FAILED" and error["extensions"]["nodeId"] == "call"
    run = await calls.ok("get", f"/flows/{failing['id']}/runs/{error['extensions']['runId']}")
    assert run["status"] == "failed" and run["steps"][0]["output"]["status"] == 500
    assert run["steps"][0]["attempts"] == 1  # a GET answered 500: not retried (only 429/502-504 are)
    # No token: WEBHOOK_NOT_CONFIGURED; a draft, or a manual flow, is 404.
    await calls.ok("patch", f"/flows/{failing['id']}", json={"triggerOptions": {"token": None}})
    resp = await client.post(f"/api/v1/flows/{failing['id']}/trigger", json={},
                             headers={"X-Svc-Site": site, "x-flow-token": failing["token"]})
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "WEBHOOK_NOT_CONFIGURED"
    await calls.ok("patch", f"/flows/{hook['id']}", json={"status": "draft"})
    resp = await client.post(path, json={}, headers={"X-Svc-Site": site, "x-flow-token": token})
    assert resp.status_code == 404
    manual = await calls.ok("post", "/flows", 201, json={"name": "m", "status": "active", "trigger": "manual",
                                                         "graph": _one({"id": "a", "operation": "log",
                                                                        "options": {"message": "m"}})})
    resp = await client.post(f"/api/v1/flows/{manual['id']}/trigger", json={},
                             headers={"X-Svc-Site": site, "x-flow-token": token})
    assert resp.status_code == 404


async def test_schedule_sweep_runs_each_slot_once_and_retention(svc_app, calls, site):
    flow = await calls.ok("post", "/flows", 201, json={
        "name": "tick", "status": "active", "trigger": "schedule", "triggerOptions": {"cron": "*/5 * * * *"},
        "graph": _one({"id": "a", "operation": "log", "options": {"message": "at {{ $trigger.scheduledAt }}"}})})
    due = dt.datetime.fromisoformat(flow["next_run_at"].replace("Z", "+00:00"))
    assert due.minute % 5 == 0 and due > dt.datetime.now(dt.UTC)
    kernel = svc_app.kernel
    assert await triggers.schedule_sweep(kernel) == 0  # not due yet
    # Two workers sweep at once after the slot: one run.
    later = due + dt.timedelta(seconds=30)
    import plugins.flows.triggers as t

    real_now = t.now_utc
    t.now_utc = lambda: later
    try:
        started = await asyncio.gather(triggers.schedule_sweep(kernel), triggers.schedule_sweep(kernel))
    finally:
        t.now_utc = real_now
    assert sum(started) == 1
    moved = await calls.ok("get", f"/flows/{flow['id']}")
    assert dt.datetime.fromisoformat(moved["next_run_at"].replace("Z", "+00:00")) == due + dt.timedelta(minutes=5)
    await kernel.jobs.run_due(later, periodic=False)
    [run] = await calls.ok("get", f"/flows/{flow['id']}/runs")
    detail = await calls.ok("get", f"/flows/{flow['id']}/runs/{run['runId']}")
    assert detail["status"] == "succeeded" and detail["trigger"] == "schedule"
    assert detail["steps"][0]["output"]["message"].startswith("at " + due.strftime("%Y-%m-%dT%H:%M"))
    # Retention: runs older than SVC_FLOWS_RUN_RETENTION_DAYS are removed by the hourly job.
    assert await runner.prune(kernel, now=dt.datetime.now(dt.UTC) + dt.timedelta(days=29)) == 0
    assert await runner.prune(kernel, now=dt.datetime.now(dt.UTC) + dt.timedelta(days=31)) == 1
    assert await calls.ok("get", f"/flows/{flow['id']}/runs") == []
    # A run whose worker died after claiming it is not run again (its steps may not be safe to
    # repeat): the job's second execution marks it INTERRUPTED.
    async with kernel.db.begin() as conn:
        cut = await runner.create_run(kernel, conn, site, flow["id"], "schedule", {}, claimed=True)
    assert await runner.execute(kernel, site, cut["id"], {}) is None
    detail = await calls.ok("get", f"/flows/{flow['id']}/runs/{cut['id']}")
    assert detail["status"] == "failed" and detail["error"]["code"] == "INTERRUPTED"


class ShoutPlugin:
    """An extension's operation, registered exactly as the built-ins are."""

    name = "shout"

    @staticmethod
    async def shout(ctx, options):
        return {"text": str(options["text"]).upper(), "node": ctx.node_id}

    @staticmethod
    def check(options):
        if not isinstance(options.get("text"), str):
            raise OptionError("text", "'text' must be a string")

    @hookimpl(optionalhook=True)
    def register_flow_operations(self, kernel):
        return [Operation("shout", self.shout, options={"text": "string (template)"}, validate=self.check)]


async def test_an_extension_adds_an_operation(svc_app, calls, temporary_plugin):
    with temporary_plugin(svc_app.kernel, ShoutPlugin()):
        keys = [op["key"] for op in await calls.ok("get", "/flows/operations")]
        assert "shout" in keys
        graph = _one({"id": "s", "operation": "shout", "options": {"text": "hi {{ $trigger.who }}"}})
        await calls.err("post", "/flows", 400, "VALIDATION_FAILED", json={
            "name": "x", "status": "active", "trigger": "manual",
            "graph": _one({"id": "s", "operation": "shout", "options": {"text": 1}})})
        flow = await calls.ok("post", "/flows", 201, json={"name": "x", "status": "active", "trigger": "manual",
                                                           "graph": graph})
        started = await calls.ok("post", f"/flows/{flow['id']}/run", 202, json={"who": "you"})
        await svc_app.kernel.jobs.run_due()
        run = await calls.ok("get", f"/flows/{flow['id']}/runs/{started['runId']}")
        assert run["steps"][0]["output"] == {"text": "HI YOU", "node": "s"}
    # Unloaded: the operation is gone, and an active flow naming it cannot be saved again.
    assert "shout" not in [op["key"] for op in await calls.ok("get", "/flows/operations")]
    await calls.err("patch", f"/flows/{flow['id']}", 400, "GRAPH_UNKNOWN_OPERATION", json={"name": "y"})


async def test_mail_notify_and_delete(make_app, mailbox):
    from plugin_tests.flows.conftest import FLOWS_ENV

    app = await make_app(env=FLOWS_ENV, smtp_host="127.0.0.1", smtp_port=mailbox.port)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    from kernel.testing import Calls

    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    await calls.collection("posts", {"title": "string"})
    item = await calls.create("posts", {"title": "Gone soon"})
    graph = {"nodes": [
        {"id": "drop", "operation": "item-delete", "options": {"collection": "posts", "key": "{{ $trigger.key }}"}},
        {"id": "mail", "operation": "mail", "options": {"to": "{{ $trigger.to }}", "subject": "Deleted",
                                                        "body": "Deleted {{ $drop.key }}"}},
        {"id": "tell", "operation": "notify", "options": {"title": "Deleted {{ $drop.key }}", "severity": "warning"}}],
        "edges": [{"from": "drop", "to": "mail"}, {"from": "mail", "to": "tell"}]}
    flow = await calls.ok("post", "/flows", 201, json={"name": "d", "status": "active", "trigger": "manual",
                                                       "graph": graph})
    started = await calls.ok("post", f"/flows/{flow['id']}/run", 202, json={"key": item["id"], "to": "ed@example.com"})
    await app.kernel.jobs.run_due()
    run = await calls.ok("get", f"/flows/{flow['id']}/runs/{started['runId']}")
    assert run["status"] == "succeeded", run
    await calls.err("get", f"/items/posts/{item['id']}", 404)
    [message] = await mailbox.wait_for(1, to="ed@example.com")
    assert message["Subject"] == "Deleted" and item["id"] in message.get_content()
    notes = await calls.ok("get", "/notifications")
    assert any(n["title"] == f"Deleted {item['id']}" and n["severity"] == "warning" for n in notes)


async def test_request_retries_only_where_safe(svc_app, calls, http_receiver):
    answers = {"n": 0}

    def flaky(request):
        answers["n"] += 1
        if answers["n"] % 3:
            return 503, b'{"busy": true}', {"Content-Type": "application/json"}
        return 200, b'{"ok": true}', {"Content-Type": "application/json"}

    url = http_receiver.respond("/flaky", flaky)
    redirect = http_receiver.respond("/moved", lambda r: (302, b"", {"Location": url}))
    big = http_receiver.serve_raw("/big", b"x" * 5000)
    outcomes = {}
    for name, options in (("get", {"url": url}), ("post", {"url": url, "method": "POST", "body": "b"}),
                          ("redirect", {"url": redirect}), ("big", {"url": big})):
        answers["n"] = 0
        flow = await calls.ok("post", "/flows", 201, json={"name": name, "status": "active", "trigger": "manual",
                                                           "graph": _one({"id": "r", "operation": "request",
                                                                          "options": options})})
        started = await calls.ok("post", f"/flows/{flow['id']}/run", 202, json={})
        await svc_app.kernel.jobs.run_due()
        outcomes[name] = await calls.ok("get", f"/flows/{flow['id']}/runs/{started['runId']}")
    step = outcomes["get"]["steps"][0]
    assert outcomes["get"]["status"] == "succeeded" and step["attempts"] == 3 and step["output"]["data"] == {"ok": True}
    step = outcomes["post"]["steps"][0]
    assert outcomes["post"]["status"] == "failed" and step["attempts"] == 1 and step["output"]["status"] == 503
    assert outcomes["redirect"]["steps"][0]["output"]["status"] == 302  # not followed
    assert outcomes["big"]["steps"][0]["error"]["code"] == "RESPONSE_TOO_LARGE"


async def test_a_run_is_bounded_in_time(make_app, http_receiver):
    import time

    from kernel.testing import Calls
    from plugin_tests.flows.conftest import FLOWS_ENV

    app = await make_app(env={**FLOWS_ENV, "SVC_FLOWS_RUN_TIMEOUT": "0.5"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    calls = Calls(app.client, {**admin, "X-Svc-Site": await app.create_site(admin)})

    def slow(request):
        time.sleep(1.5)
        return 200, b"{}", {"Content-Type": "application/json"}

    url = http_receiver.respond("/slow", slow)
    flow = await calls.ok("post", "/flows", 201, json={"name": "slow", "status": "active", "trigger": "manual",
                                                       "graph": _one({"id": "wait", "operation": "request",
                                                                      "options": {"url": url}})})
    started = await calls.ok("post", f"/flows/{flow['id']}/run", 202, json={})
    await app.kernel.jobs.run_due()
    run = await calls.ok("get", f"/flows/{flow['id']}/runs/{started['runId']}")
    assert run["status"] == "failed" and run["error"] == {
        "code": "RUN_TIMEOUT", "message": "The run's time limit was reached", "nodeId": "wait"}


async def test_retention_costs_the_same_at_5_and_50_idle_sites(svc_app, calls, calls_b, site, site_b):
    # Issue 27 ("scale"): the hourly job marks interrupted runs in one UPDATE across sites and
    # finds the sites holding an expired run in one query; an idle site costs nothing. Each
    # round: an expired run in A, a day-old run in B whose worker died (interrupted, kept).
    from sqlalchemy import update

    from kernel.testing import add_idle_sites, counted_statements
    from plugins.flows.tables import runs

    kernel = svc_app.kernel
    graph = {"nodes": [{"id": "a", "operation": "log", "options": {"message": "x"}}], "edges": []}
    flow_a = await calls.ok("post", "/flows", 201, json={"name": "a", "trigger": "manual", "graph": graph})
    flow_b = await calls_b.ok("post", "/flows", 201, json={"name": "b", "trigger": "manual", "graph": graph})
    counts = []
    for idle in (5, 45):
        await add_idle_sites(kernel, idle)
        async with kernel.db.begin() as conn:
            old = await runner.create_run(kernel, conn, site, flow_a["id"], "manual", {})
            cut = await runner.create_run(kernel, conn, site_b, flow_b["id"], "manual", {})
            now = dt.datetime.now(dt.UTC)
            await conn.execute(update(runs).where(runs.c.id == old["id"]).values(
                status="succeeded", started_at=now - dt.timedelta(days=31)))
            await conn.execute(update(runs).where(runs.c.id == cut["id"]).values(started_at=now - dt.timedelta(days=1)))
        with counted_statements(kernel) as seen:
            assert await runner.prune(kernel) == 1
        counts.append(len(seen))
    assert counts[0] == counts[1]
    assert await calls.ok("get", f"/flows/{flow_a['id']}/runs") == []
    kept = await calls_b.ok("get", f"/flows/{flow_b['id']}/runs")
    assert len(kept) == 2 and {r["status"] for r in kept} == {"failed"}
