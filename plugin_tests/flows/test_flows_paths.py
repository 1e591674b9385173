"""Flows error paths and promises of docs/flows.md not shown elsewhere, on one shared app with a
site per test that writes: trigger changes and token rotation on PATCH, the 500-flow cap, the
audit trail, runs listing and deletion, the webhook's 404s and its failed-run answer, a role
deleted under a flow, an extension operation that breaks, and other sites' flows and runs."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from kernel import hookimpl
from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from kernel.testing import Calls, new_member
from plugin_tests.flows.conftest import flow, log_graph, one_node
from plugins.flows import triggers
from plugins.flows.api import Operation
from plugins.flows.tables import flows, runs


async def _run(shared_site, calls, flow_id, body=None):
    started = await calls.ok("post", f"/flows/{flow_id}/run", 202, json=body if body is not None else {})
    await shared_site.app.kernel.jobs.run_due()
    return await calls.ok("get", f"/flows/{flow_id}/runs/{started['runId']}")


async def _trigger(shared_site, calls, flow_id, token, **kw):
    headers = {
        "X-Svc-Site": calls.headers["X-Svc-Site"],
        **({"x-flow-token": token} if token else {}),
        **kw.pop("headers", {}),
    }
    return await shared_site.app.client.post(f"/api/v1/flows/{flow_id}/trigger", headers=headers, **kw)


def _code(resp):
    return resp.status_code, resp.json()["errors"][0]["code"]


async def test_changing_the_trigger_drops_the_old_trigger_options(shared_site):
    calls = await shared_site.new_site("fl")
    saved = await calls.ok("post", "/flows", 201, json=flow("schedule", cron="0 6 * * *", role="admin"))
    assert saved["next_run_at"]
    manual = await calls.ok("patch", f"/flows/{saved['id']}", json={"trigger": "manual"})
    assert (manual["triggerOptions"], manual["next_run_at"]) == ({}, None)


async def test_a_flow_turned_webhook_gets_a_token_once(shared_site):
    calls = await shared_site.new_site("fl")
    saved = await calls.ok("post", "/flows", 201, json=flow())
    assert "hasToken" not in saved and "token" not in saved
    hook = await calls.ok("patch", f"/flows/{saved['id']}", json={"trigger": "webhook"})
    assert len(hook["token"]) >= 24 and hook["hasToken"] is True
    renamed = await calls.ok("patch", f"/flows/{saved['id']}", json={"name": "again"})
    assert "token" not in renamed and renamed["hasToken"] is True
    assert (await _trigger(shared_site, calls, saved["id"], hook["token"])).status_code == 200


async def test_a_new_token_replaces_the_old_one_and_the_audit_says_so(shared_site):
    calls = await shared_site.new_site("fl")
    hook = await calls.ok("post", "/flows", 201, json=flow("webhook"))
    new = "n" * 32
    rotated = await calls.ok("patch", f"/flows/{hook['id']}", json={"triggerOptions": {"token": new}})
    assert rotated["token"] == new
    assert _code(await _trigger(shared_site, calls, hook["id"], hook["token"])) == (401, "UNAUTHENTICATED")
    assert (await _trigger(shared_site, calls, hook["id"], new)).status_code == 200
    audit = await calls.ok("get", "/audit", params={"action": "flows.flow.update"})
    assert [a["details"]["webhookRotated"] for a in audit] == [True]


async def test_a_revoked_token_is_gone_until_a_new_one(shared_site):
    calls = await shared_site.new_site("fl")
    hook = await calls.ok("post", "/flows", 201, json=flow("webhook"))
    revoked = await calls.ok("patch", f"/flows/{hook['id']}", json={"triggerOptions": {"token": None}})
    assert revoked["hasToken"] is False and "token" not in revoked
    assert _code(await _trigger(shared_site, calls, hook["id"], hook["token"])) == (
        401,
        "WEBHOOK_NOT_CONFIGURED",
    )
    # Saving it again without a token does not make one; proposing one does.
    assert (await calls.ok("patch", f"/flows/{hook['id']}", json={"name": "still none"}))["hasToken"] is False
    again = await calls.ok("patch", f"/flows/{hook['id']}", json={"triggerOptions": {"token": "z" * 30}})
    assert (await _trigger(shared_site, calls, hook["id"], again["token"])).status_code == 200


async def test_saving_and_deleting_is_audited_with_what_changed(shared_site):
    calls = await shared_site.new_site("fl")
    saved = await calls.ok("post", "/flows", 201, json=flow(status="draft"))
    await calls.ok("patch", f"/flows/{saved['id']}", json={"name": "x", "status": "active"})
    await calls.ok("delete", f"/flows/{saved['id']}", 204)
    audit = {
        a["action"]: a
        for a in await calls.ok("get", "/audit", params={"limit": 50})
        if a["action"].startswith("flows.")
    }
    assert set(audit) == {"flows.flow.create", "flows.flow.update", "flows.flow.delete"}
    assert {(a["target"]["type"], a["target"]["id"]) for a in audit.values()} == {("flow", saved["id"])}
    assert audit["flows.flow.create"]["details"] == {"trigger": "manual", "status": "draft"}
    assert audit["flows.flow.update"]["details"] == {"fields": ["name", "status"], "webhookRotated": False}


async def test_a_site_holds_at_most_500_flows(shared_site):
    calls = await shared_site.new_site("fl")
    site = calls.headers["X-Svc-Site"]
    kernel = shared_site.app.kernel
    async with kernel.unit_of_work(site) as uow:
        now = now_utc()
        for i in range(500):
            await uow.db.insert(
                flows,
                {
                    "id": uuid7(),
                    "name": f"f{i}",
                    "status": "draft",
                    "trigger": "manual",
                    "trigger_options": {},
                    "graph": {"nodes": [], "edges": []},
                    "token_hash": None,
                    "next_run_at": None,
                    "saved_by": None,
                    "created_at": now,
                    "updated_at": now,
                },
            )
    error = await calls.err("post", "/flows", 403, "PERMISSION_DENIED", json=flow())
    assert error["extensions"]["limit"] == 500, error
    # Another site is not counted with this one.
    other = await shared_site.new_site("fo")
    await other.ok("post", "/flows", 201, json=flow())


async def test_runs_page_newest_first_with_a_total(shared_site):
    calls = await shared_site.new_site("fl")
    saved = await calls.ok("post", "/flows", 201, json=flow())
    ids = [(await _run(shared_site, calls, saved["id"]))["runId"] for _ in range(3)]
    page = await calls.ok("get", f"/flows/{saved['id']}/runs", full=True, params={"limit": 2})
    assert [r["runId"] for r in page["data"]] == ids[::-1][:2]
    assert page["meta"]["total"] == 3
    assert all("steps" not in r and r["status"] == "succeeded" for r in page["data"])
    rest = await calls.ok("get", f"/flows/{saved['id']}/runs", params={"limit": 2, "offset": 2})
    assert [r["runId"] for r in rest] == ids[:1]


async def test_a_run_is_found_only_under_its_own_flow(shared_site):
    calls = await shared_site.new_site("fl")
    one = await calls.ok("post", "/flows", 201, json=flow())
    two = await calls.ok("post", "/flows", 201, json=flow())
    run = await _run(shared_site, calls, one["id"])
    await calls.err("get", f"/flows/{two['id']}/runs/{run['runId']}", 404, "NOT_FOUND")
    await calls.err("get", "/flows/no-such-flow/runs", 404, "NOT_FOUND")
    await calls.err("get", f"/flows/{one['id']}/runs/" + "r" * 37, 404, "NOT_FOUND")


async def test_deleting_a_flow_deletes_its_runs(shared_site):
    calls = await shared_site.new_site("fl")
    saved = await calls.ok("post", "/flows", 201, json=flow())
    await _run(shared_site, calls, saved["id"])
    await calls.ok("delete", f"/flows/{saved['id']}", 204)
    async with shared_site.app.kernel.db.connect() as conn:
        left = await conn.scalar(select(func.count()).select_from(runs).where(runs.c.flow_id == saved["id"]))
    assert left == 0


@pytest.mark.parametrize("trigger", ["webhook", "event", "schedule"])
async def test_only_a_manual_flow_runs_by_hand(shared_site, trigger):
    calls = await shared_site.new_site("fl")
    options = {"cron": "0 6 * * *"} if trigger == "schedule" else {}
    saved = await calls.ok("post", "/flows", 201, json=flow(trigger, **options))
    await calls.err("post", f"/flows/{saved['id']}/run", 404, "NOT_FOUND", json={})


async def test_the_webhook_of_a_draft_a_manual_or_no_flow_is_404(shared_site):
    calls = await shared_site.new_site("fl")
    hook = await calls.ok("post", "/flows", 201, json=flow("webhook", status="draft"))
    manual = await calls.ok("post", "/flows", 201, json=flow())
    for flow_id in (hook["id"], manual["id"], "no-such-flow", "x" * 40):
        assert _code(await _trigger(shared_site, calls, flow_id, hook["token"])) == (404, "NOT_FOUND"), (
            flow_id
        )


async def test_a_failed_webhook_run_is_502_with_the_node_and_reason(shared_site):
    calls = await shared_site.new_site("fl")
    await calls.collection("posts", {"title": "string"})
    graph = one_node(
        "item-update",
        {"collection": "posts", "key": "{{ $trigger.body.id }}", "payload": {"title": "x"}},
        node_id="edit",
    )
    hook = await calls.ok("post", "/flows", 201, json=flow("webhook", role="admin", graph=graph))
    resp = await _trigger(
        shared_site, calls, hook["id"], hook["token"], json={"id": "01a2433a-0000-7000-8000-0"}
    )
    assert _code(resp) == (502, "FLOW_RUN_FAILED")
    error = resp.json()["errors"][0]
    assert (error["extensions"]["nodeId"], error["extensions"]["reason"]) == ("edit", "RECORD_NOT_FOUND")
    run = await calls.ok("get", f"/flows/{hook['id']}/runs/{error['extensions']['runId']}")
    assert (run["status"], run["trigger"]) == ("failed", "webhook")


async def test_a_webhook_body_that_is_not_json_is_text(shared_site):
    calls = await shared_site.new_site("fl")
    graph = one_node("transform", {"json": "{{ $trigger.body }}"})
    hook = await calls.ok("post", "/flows", 201, json=flow("webhook", graph=graph))
    resp = await _trigger(
        shared_site,
        calls,
        hook["id"],
        hook["token"],
        content=b"a=1&b=2",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    run = await calls.ok("get", f"/flows/{hook['id']}/runs/{resp.json()['data']['runId']}")
    assert run["steps"][0]["output"] == "a=1&b=2"
    empty = await _trigger(shared_site, calls, hook["id"], hook["token"], content=b"  ")
    run = await calls.ok("get", f"/flows/{hook['id']}/runs/{empty.json()['data']['runId']}")
    assert run["input"]["body"] is None


async def test_a_role_deleted_under_a_flow_fails_its_run(shared_site):
    calls = await shared_site.new_site("fl")
    role = await calls.ok("post", "/roles", 201, json={"name": "Hooks"})
    hook = await calls.ok("post", "/flows", 201, json=flow("webhook", role=role["id"]))
    assert (await _trigger(shared_site, calls, hook["id"], hook["token"])).status_code == 200
    await calls.ok("delete", f"/roles/{role['id']}", 204)
    resp = await _trigger(shared_site, calls, hook["id"], hook["token"])
    assert _code(resp) == (502, "FLOW_RUN_FAILED")
    assert resp.json()["errors"][0]["extensions"]["reason"] == "VALIDATION_FAILED"


async def test_a_payload_template_that_is_not_an_object_fails_the_step(shared_site):
    calls = await shared_site.new_site("fl")
    await calls.collection("posts", {"title": "string"})
    graph = one_node(
        "item-create", {"collection": "posts", "payload": "{{ $trigger.title }}"}, node_id="save"
    )
    saved = await calls.ok("post", "/flows", 201, json=flow(graph=graph))
    run = await _run(shared_site, calls, saved["id"], {"title": "just text"})
    assert (run["status"], run["error"]["code"], run["error"]["nodeId"]) == (
        "failed",
        "OPTION_INVALID",
        "save",
    )
    assert (await calls.list("posts"))["data"] == []


async def test_a_step_after_a_failed_one_does_not_run(shared_site):
    calls = await shared_site.new_site("fl")
    graph = {
        "nodes": [
            {"id": "bad", "operation": "jsonata", "options": {"expression": "$error('no')"}},
            {"id": "after", "operation": "log", "options": {"message": "m"}},
        ],
        "edges": [{"from": "bad", "to": "after"}],
    }
    saved = await calls.ok("post", "/flows", 201, json=flow(graph=graph))
    run = await _run(shared_site, calls, saved["id"])
    assert [(s["nodeId"], s["status"]) for s in run["steps"]] == [("bad", "failed")]
    assert run["error"]["code"] == "JSONATA_FAILED" and run["finishedAt"] and run["durationMs"] >= 0


class BrokenPlugin:
    """An extension whose operation raises what no operation should, and whose check is wrong."""

    async def explode(self, ctx, options):
        raise RuntimeError("a bug in the extension")

    def check(self, options):
        return int(options.get("n", "not a number"))

    @hookimpl(optionalhook=True)
    def register_flow_operations(self, kernel):
        return [Operation("explode", self.explode, options={"n": "int"}, validate=self.check)]


async def test_a_broken_extension_fails_its_run_not_the_worker(shared_site, temporary_plugin):
    calls = await shared_site.new_site("fl")
    with temporary_plugin(shared_site.app.kernel, BrokenPlugin()):
        error = await calls.err(
            "post", "/flows", 400, "VALIDATION_FAILED", json=flow(graph=one_node("explode", {"n": "x"}))
        )
        assert error["message"].startswith("Bad options") and error["extensions"]["nodeId"] == "n1"
        saved = await calls.ok("post", "/flows", 201, json=flow(graph=one_node("explode", {"n": 1})))
        run = await _run(shared_site, calls, saved["id"])
    assert (run["status"], run["error"]["code"]) == ("failed", "INTERNAL")
    assert "a bug" not in str(run)


async def test_a_flow_whose_operation_was_unloaded_fails_that_step(shared_site, temporary_plugin):
    calls = await shared_site.new_site("fl")
    with temporary_plugin(shared_site.app.kernel, BrokenPlugin()):
        saved = await calls.ok("post", "/flows", 201, json=flow(graph=one_node("explode", {"n": 1})))
    run = await _run(shared_site, calls, saved["id"])
    assert run["steps"][0]["error"]["code"] == "GRAPH_UNKNOWN_OPERATION" and run["error"]["nodeId"] == "n1"


async def test_another_sites_member_cannot_run_read_or_list(shared_site):
    a, b = await shared_site.new_site("fa"), await shared_site.new_site("fb")
    saved = await a.ok("post", "/flows", 201, json=flow(graph=log_graph("a")))
    run = await _run(shared_site, a, saved["id"])
    for method, path in (
        ("post", f"/flows/{saved['id']}/run"),
        ("get", f"/flows/{saved['id']}/runs"),
        ("get", f"/flows/{saved['id']}/runs/{run['runId']}"),
    ):
        await b.err(method, path, 404, "NOT_FOUND", json={} if method == "post" else None)
    assert await b.ok("get", "/flows", full=True) == {"data": [], "meta": {"total": 0}}


async def test_a_member_without_flows_run_is_refused_before_the_body(shared_site):
    calls = await shared_site.new_site("fl")
    saved = await calls.ok("post", "/flows", 201, json=flow())
    made = await new_member(shared_site.app, calls.headers["X-Svc-Site"])
    member = Calls(shared_site.app.client, made.headers)
    error = await member.err(
        "post",
        f"/flows/{saved['id']}/run",
        403,
        "PERMISSION_DENIED",
        content=b"{broken",
        headers={"Content-Type": "application/json"},
    )
    assert "flows:run" in str(error)


async def test_a_run_input_of_any_json_value_is_kept_redacted(shared_site):
    calls = await shared_site.new_site("fl")
    saved = await calls.ok(
        "post", "/flows", 201, json=flow(graph=one_node("transform", {"json": "{{ $trigger }}"}))
    )
    for body in ([1, 2], "text", 7, {"password": "p", "user": {"apiKey": "k", "name": "n"}}):
        run = await _run(shared_site, calls, saved["id"], body)
        if isinstance(body, dict):
            assert run["input"] == {"password": "**********", "user": {"apiKey": "**********", "name": "n"}}
            assert run["steps"][0]["output"] == run["input"]
        else:
            assert (run["input"], run["steps"][0]["output"]) == (body, body)


async def test_a_run_without_a_body_sees_null(shared_site):
    calls = await shared_site.new_site("fl")
    graph = one_node("log", {"message": "got {{ $trigger }}"})
    saved = await calls.ok("post", "/flows", 201, json=flow(graph=graph))
    started = await calls.ok("post", f"/flows/{saved['id']}/run", 202)
    assert started["status"] == "running" and started["startedAt"]
    await shared_site.app.kernel.jobs.run_due()
    run = await calls.ok("get", f"/flows/{saved['id']}/runs/{started['runId']}")
    assert run["input"] is None and run["trigger"] == "manual" and run["status"] == "succeeded"


async def test_an_event_flow_becoming_draft_leaves_the_consumer_group(shared_site):
    calls = await shared_site.new_site("fl")
    site = calls.headers["X-Svc-Site"]
    saved = await calls.ok("post", "/flows", 201, json=flow("event", collection="posts"))
    assert [m.key for m in await triggers.members(shared_site.app.kernel, site)] == [saved["id"]]
    await calls.ok("patch", f"/flows/{saved['id']}", json={"status": "draft"})
    assert await triggers.members(shared_site.app.kernel, site) == []
    await calls.ok("patch", f"/flows/{saved['id']}", json={"status": "active"})
    await calls.ok("delete", f"/flows/{saved['id']}", 204)
    assert await triggers.members(shared_site.app.kernel, site) == []


async def test_a_webhook_flow_without_a_role_runs_as_public(shared_site):
    calls = await shared_site.new_site("fl")
    await calls.collection("posts", {"title": "string"})
    graph = one_node("item-read", {"collection": "posts"}, node_id="read")
    saved = await calls.ok("post", "/flows", 201, json=flow("webhook", graph=graph))
    resp = await _trigger(shared_site, calls, saved["id"], saved["token"])
    assert _code(resp) == (502, "FLOW_RUN_FAILED")
    extensions = resp.json()["errors"][0]["extensions"]
    assert (extensions["nodeId"], extensions["reason"]) == ("read", "PERMISSION_DENIED")
    admin = await calls.ok("patch", f"/flows/{saved['id']}", json={"triggerOptions": {"role": "admin"}})
    assert admin["triggerOptions"] == {"role": "admin"} and admin["hasToken"] is True
    assert (await _trigger(shared_site, calls, saved["id"], saved["token"])).status_code == 200
