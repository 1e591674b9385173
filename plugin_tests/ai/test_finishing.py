"""The copilot finishes what it starts (docs/ai.md): approvers are notified, an approved call that
fails transiently is retried through jobs with one idempotency key, and a chat turn streams as
Server-Sent Events (against the scripted model server of conftest.py)."""

from __future__ import annotations

import datetime as dt
import json

import httpx

from kernel import hookimpl
from kernel.base.errors import ApiError
from kernel.db.meta import now_utc
from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugin_tests.realtime.helpers import connect, frame, ticket
from plugin_tests.realtime.test_push import VAPID_ENV, Browser
from plugins.ai.api import Skill
from plugins.realtime import api as realtime_api

from .conftest import model_of_the_module, shared_site_asking_the_model, tool_call

ARGS = {
    "type": "object",
    "required": ["note"],
    "additionalProperties": False,
    "properties": {"note": {"type": "string"}},
}


def sse(text: str) -> list[tuple[str, dict]]:
    """``(event, data)`` of an event-stream body."""
    out = []
    for block in text.split("\n\n"):
        lines = block.strip().splitlines()
        event = next((x[6:].strip() for x in lines if x.startswith("event:")), "message")
        data = "\n".join(x[5:].strip() for x in lines if x.startswith("data:"))
        if data:
            out.append((event, json.loads(data)))
    return out


class Outbound:
    """An extension whose dangerous skill posts to an outside service with the idempotency key."""

    def __init__(self, url: str) -> None:
        self.url = url

    @hookimpl
    def register_ai_skills(self, kernel):
        async def post(ctx, args):
            async with httpx.AsyncClient() as client:
                answer = await client.post(
                    self.url, json=args, headers={"Idempotency-Key": ctx.idempotency_key}
                )
            if answer.status_code >= 500:
                raise ApiError(503, "UPSTREAM_UNAVAILABLE", f"The service answered {answer.status_code}")
            if answer.status_code >= 400:
                raise ApiError(400, "UPSTREAM_REFUSED", f"The service answered {answer.status_code}")
            return answer.json()

        return [
            Skill(
                "post_note",
                "Post a note to the outside service",
                post,
                ARGS,
                dangerous=True,
                capability="studio",
            )
        ]


RETRY = {"SVC_AI_APPROVAL_RETRY_SECONDS": "60"}

# The tests that read and write only in sites of their own share the module's app, which asks the
# module's model server (reset for each test), each in new sites of it (kernel/testing/shared.py);
# those that run the instance's jobs or register a plugin start an app of their own.
shared_site = shared_site_asking_the_model(**RETRY)
model = model_of_the_module
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b
shared_live_server = testing_shared.shared_live_server


async def own_app_asking(make_app, model, sites, **env):
    """An app of the test's own asking ``model``, and the instance admin's calls in ``sites`` new sites."""
    return await testing_shared.own_app(make_app, sites=sites, env={"SVC_AI_BASE_URL": model.base_url, **env})


def later(minutes: float) -> dt.datetime:
    return now_utc() + dt.timedelta(minutes=minutes)


async def test_a_new_approval_notifies_the_studio(calls, calls_b, model):
    await calls.collection("posts", {"title": "string"})
    model.script = [{"tool_calls": [tool_call("delete_collection", {"name": "posts"})]}]
    pending = await calls.ok("post", "/ai/chat", status=202, json={"message": "drop the posts"})
    [note] = [n for n in await calls.ok("get", "/notifications") if n["entityId"] == pending["approvalId"]]
    assert note["kind"] == "ai.approval.requested" and note["severity"] == "warning"
    assert note["deepLink"] == f"/ai/approvals/{pending['approvalId']}"
    assert "Delete collection 'posts'" in note["title"]
    # another site hears nothing of it
    assert [
        n for n in await calls_b.ok("get", "/notifications") if n["entityId"] == pending["approvalId"]
    ] == []


async def test_only_the_approvers_hear_of_a_request(shared_live_server, svc_app, calls, calls_b, site, model,
                                                    make_member):
    """Over the real realtime socket: the approver named in ``ai.approvers`` gets the frame and the
    listed notification; another studio member of the site, and another site, get neither. With
    nobody named, the site's admins are told instead."""
    server = shared_live_server
    role = await calls.ok("post", "/roles", status=201, json={"name": "Editor"})
    approver, bystander = await make_member(site, role["id"]), await make_member(site, role["id"])
    admin = await make_member(site, "admin")
    await calls.ok("put", "/settings/ai.approvers", json={"value": [approver.id]})
    await calls.collection("posts", {"title": "string"})
    as_approver, as_bystander = Calls(calls.client, approver.headers), Calls(calls.client, bystander.headers)
    as_admin = Calls(calls.client, admin.headers)
    async with connect(server, await ticket(as_approver)) as theirs, \
            connect(server, await ticket(as_bystander)) as not_theirs, \
            connect(server, await ticket(as_admin)) as admins, connect(server, await ticket(calls_b)) as other_site:
        for ws in (theirs, not_theirs, admins, other_site):
            await ws.send_json({"type": "ping"})
            assert await frame(ws) == {"type": "pong"}
        model.script = [{"tool_calls": [tool_call("delete_collection", {"name": "posts"})]}]
        pending = await calls.ok("post", "/ai/chat", status=202, json={"message": "drop the posts"})
        told = (await frame(theirs))["notification"]
        assert told["kind"] == "ai.approval.requested" and told["entityId"] == pending["approvalId"]
        # The next site-wide notification is the first frame the others read.
        everyone = await realtime_api.notify(svc_app.kernel, site, kind="flow", title="For everyone")
        for ws in (not_theirs, admins):
            assert await frame(ws) == {"type": "notification", "notification": everyone}
        # Nobody named: the site's admins (members with admin access) are told, not the editors.
        await calls.ok("put", "/settings/ai.approvers", json={"value": []})
        model.script = [{"tool_calls": [tool_call("delete_collection", {"name": "posts"})]}]
        second = await calls.ok("post", "/ai/chat", status=202, json={"message": "drop the posts"})
        assert (await frame(admins))["notification"]["entityId"] == second["approvalId"]
        everyone_again = await realtime_api.notify(svc_app.kernel, site, kind="flow", title="Again")
        assert await frame(theirs) == {"type": "notification", "notification": everyone}
        for ws in (theirs, not_theirs):  # the second request reached neither editor
            assert await frame(ws) == {"type": "notification", "notification": everyone_again}
        note_b = await realtime_api.notify(svc_app.kernel, calls_b.headers["X-Svc-Site"], kind="flow", title="B")
        assert await frame(other_site) == {"type": "notification", "notification": note_b}

    def requests(listed: list[dict]) -> list[str]:
        return [n["entityId"] for n in listed if n["kind"] == "ai.approval.requested"]

    assert requests(await as_approver.ok("get", "/notifications")) == [pending["approvalId"]]
    assert requests(await as_admin.ok("get", "/notifications")) == [second["approvalId"]]
    assert requests(await as_bystander.ok("get", "/notifications")) == []
    assert requests(await calls_b.ok("get", "/notifications")) == []


async def test_a_decision_tells_the_requester_and_the_other_approvers(shared_live_server, svc_app, calls, calls_b,
                                                                     site, model, make_member):
    """-- more43: an approval decided (here rejected) is told, kind ``ai.approval.decided``, to its
    requester and the approvers who did not decide it (their open inboxes redraw on it); the
    decider, a member who is no approver and another site hear nothing of it."""
    server = shared_live_server
    deciding, other = await make_member(site, "admin"), await make_member(site, "admin")
    bystander = await make_member(site, (await calls.ok("post", "/roles", status=201, json={"name": "Editor"}))["id"])
    await calls.ok("put", "/settings/ai.approvers", json={"value": [deciding.id, other.id]})
    await calls.collection("posts", {"title": "string"})
    as_deciding, as_other = Calls(calls.client, deciding.headers), Calls(calls.client, other.headers)
    as_bystander = Calls(calls.client, bystander.headers)
    model.script = [{"tool_calls": [tool_call("delete_collection", {"name": "posts"})]}]
    pending = await calls.ok("post", "/ai/chat", status=202, json={"message": "drop the posts"})
    async with connect(server, await ticket(as_other)) as others, connect(server, await ticket(calls)) as requester, \
            connect(server, await ticket(as_deciding)) as decider, connect(server, await ticket(as_bystander)) as idle, \
            connect(server, await ticket(calls_b)) as other_site:
        for ws in (others, requester, decider, idle, other_site):
            await ws.send_json({"type": "ping"})
            assert await frame(ws) == {"type": "pong"}
        decided = await as_deciding.ok("post", f"/ai/approvals/{pending['approvalId']}/decide",
                                       json={"decision": "rejected"})
        assert decided["status"] == "rejected"
        for ws in (others, requester):
            told = (await frame(ws))["notification"]
            assert told["kind"] == "ai.approval.decided" and told["entityId"] == pending["approvalId"], told
            assert told["title"].startswith("Approval rejected: ") and told["severity"] == "info"
        everyone = await realtime_api.notify(svc_app.kernel, site, kind="flow", title="For everyone")
        for ws in (decider, idle):  # the first frame they read is the site-wide one
            assert await frame(ws) == {"type": "notification", "notification": everyone}
        note_b = await realtime_api.notify(svc_app.kernel, calls_b.headers["X-Svc-Site"], kind="flow", title="B")
        assert await frame(other_site) == {"type": "notification", "notification": note_b}

    def decisions(listed: list[dict]) -> list[str]:
        return [n["entityId"] for n in listed if n["kind"] == "ai.approval.decided"]

    assert decisions(await as_other.ok("get", "/notifications")) == [pending["approvalId"]]
    assert decisions(await calls.ok("get", "/notifications")) == [pending["approvalId"]]
    for quiet in (as_deciding, as_bystander, calls_b):
        assert decisions(await quiet.ok("get", "/notifications")) == []


async def test_approvers_get_the_request_by_web_push(make_app, model, http_receiver, run_due_jobs):
    app, [calls] = await own_app_asking(make_app, model, 1, **VAPID_ENV)
    browser = Browser()
    endpoint = http_receiver.serve_raw("/push/admin", b"", 201)
    await calls.ok(
        "post", "/push/subscriptions", status=201, json={"endpoint": endpoint, "keys": browser.keys}
    )
    await calls.collection("posts", {"title": "string"})
    model.script = [{"tool_calls": [tool_call("delete_collection", {"name": "posts"})]}]
    pending = await calls.ok("post", "/ai/chat", status=202, json={"message": "drop the posts"})
    await run_due_jobs(app, periodic=False)
    [request] = http_receiver.received("/push/admin")
    pushed = browser.decrypt(request.body)["notification"]
    assert pushed["kind"] == "ai.approval.requested" and pushed["entityId"] == pending["approvalId"]


async def _approve_note(calls, model, note: str) -> dict:
    model.script = [{"tool_calls": [tool_call("post_note", {"note": note})]}]
    pending = await calls.ok("post", "/ai/chat", status=202, json={"message": f"post {note}"})
    return await calls.ok(
        "post", f"/ai/approvals/{pending['approvalId']}/decide", json={"decision": "approved"}
    )


async def test_a_transient_failure_is_retried_with_one_idempotency_key(
    make_app, model, http_receiver, temporary_plugin, run_due_jobs
):
    svc_app, [calls, calls_b] = await own_app_asking(make_app, model, 2, **RETRY)
    answers = [(503, b"{}", {}), (201, b'{"posted": true}', {})]
    url = http_receiver.respond("/notes", lambda request: answers.pop(0))
    with temporary_plugin(svc_app.kernel, Outbound(url), "outbound"):
        first = await _approve_note(calls, model, "hello")
        assert first["status"] == "retrying" and first["attempts"] == 1 and first["result"] is None
        assert first["error"] == {"code": "UPSTREAM_UNAVAILABLE", "message": "The service answered 503"}
        assert [a["id"] for a in await calls.ok("get", "/ai/approvals", params={"status": "retrying"})] == [
            first["id"]
        ]
        await calls_b.err(
            "post", f"/ai/approvals/{first['id']}/decide", 404, "NOT_FOUND", json={"decision": "approved"}
        )
        await calls.err(
            "post", f"/ai/approvals/{first['id']}/decide", 409, "CONFLICT", json={"decision": "approved"}
        )
        await run_due_jobs(svc_app, periodic=False)  # the backoff has not passed
        assert len(http_receiver.received("/notes")) == 1
        await run_due_jobs(svc_app, now=later(5), periodic=False)
    done = [
        a for a in await calls.ok("get", "/ai/approvals", params={"status": "all"}) if a["id"] == first["id"]
    ]
    assert done[0]["status"] == "approved" and done[0]["attempts"] == 2
    assert done[0]["result"] == {"posted": True} and done[0]["error"] is None
    keys = [
        {k.lower(): v for k, v in r.headers.items()}.get("idempotency-key")
        for r in http_receiver.received("/notes")
    ]
    assert keys == [f"ai-approval:{first['id']}"] * 2 == [first["idempotencyKey"]] * 2
    # the conversation keeps the outcome once
    messages = await calls.ok("get", f"/ai/conversations/{first['conversationId']}/messages")
    assert [m["result"] for m in messages if m["approvalId"] and m["result"]] == [{"posted": True}]


async def test_retries_end_failed_and_a_refusal_is_not_retried(
    make_app, model, http_receiver, temporary_plugin, run_due_jobs
):
    svc_app, [calls] = await own_app_asking(make_app, model, 1, **RETRY)
    url = http_receiver.respond("/notes", lambda request: (503, b"{}", {}))
    refused = http_receiver.respond("/refused", lambda request: (422, b"{}", {}))
    with temporary_plugin(svc_app.kernel, Outbound(url), "outbound"):
        first = await _approve_note(calls, model, "again")
        for minutes in (5, 15, 60):  # 60 s, then 120 s, then 240 s later
            await run_due_jobs(svc_app, now=later(minutes), periodic=False)
    assert len(http_receiver.received("/notes")) == 4  # SVC_AI_APPROVAL_ATTEMPTS
    [done] = await calls.ok("get", "/ai/approvals", params={"status": "failed"})
    assert (
        done["id"] == first["id"]
        and done["attempts"] == 4
        and done["error"]["code"] == "UPSTREAM_UNAVAILABLE"
    )
    [note] = [n for n in await calls.ok("get", "/notifications") if n["kind"] == "ai.approval.failed"]
    assert note["entityId"] == first["id"] and note["severity"] == "error"
    with temporary_plugin(svc_app.kernel, Outbound(refused), "outbound"):
        once = await _approve_note(calls, model, "no")
    assert (
        once["status"] == "failed" and once["attempts"] == 1 and once["error"]["code"] == "UPSTREAM_REFUSED"
    )
    assert len(http_receiver.received("/refused")) == 1


async def test_a_chat_turn_streams_as_server_sent_events(calls, model):
    await calls.collection("posts", {"title": "string"})
    await calls.create("posts", {"title": "hello"})
    model.script = [
        {"tool_calls": [tool_call("read_items", {"collection": "posts"})]},
        {"content": "There is one post: hello."},
    ]
    resp = await calls.call(
        "post", "/ai/chat", json={"message": "what posts?"}, headers={"Accept": "text/event-stream"}
    )
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
    events = sse(resp.text)
    kinds = [e for e, _ in events]
    assert kinds[0] == "tool" and kinds[-1] == "done" and kinds.count("text") == 5
    assert events[0][1]["skill"] == "read_items" and [p["title"] for p in events[0][1]["result"]] == ["hello"]
    assert "".join(d["content"] for e, d in events if e == "text") == "There is one post: hello."
    done = events[-1][1]
    assert done["status"] == "executed" and done["message"] == "There is one post: hello."
    # the provider was asked to stream, and the turn is kept like any other
    assert all(r.get("stream") is True for r in model.requests())
    messages = await calls.ok("get", f"/ai/conversations/{done['conversationId']}/messages")
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[-1]["content"] == "There is one post: hello."


async def test_a_streamed_turn_by_body_flag_ends_pending_or_with_the_error_envelope(calls, calls_b, model):
    await calls.collection("posts", {"title": "string"})
    model.script = [{"tool_calls": [tool_call("delete_collection", {"name": "posts"})]}]
    events = sse((await calls.call("post", "/ai/chat", json={"message": "drop posts", "stream": True})).text)
    assert [e for e, _ in events] == ["done"]
    assert events[0][1]["status"] == "pending_approval" and events[0][1]["code"] == "HITL_REQUIRED"
    # the model provider failing mid-turn: the stream ends with the error envelope
    model.receiver.respond("/v1/chat/completions", lambda request: (500, b"{}", {}))
    events = sse((await calls.call("post", "/ai/chat", json={"message": "again", "stream": True})).text)
    assert events == [
        (
            "error",
            {
                "errors": [
                    {
                        "code": "AI_PROVIDER_FAILED",
                        "message": "The model provider failed: HTTP 500",
                        "extensions": {"code": "AI_PROVIDER_FAILED"},
                    }
                ],
                "status": 502,
            },
        )
    ]
    # checks come before the stream: plain error answers
    await calls.err("post", "/ai/chat", 400, "VALIDATION_FAILED", json={"message": "x", "stream": "yes"})
    conversation = events and (await calls.ok("get", "/ai/conversations"))[0]["id"]
    await calls_b.err(
        "post", "/ai/chat", 404, json={"message": "x", "conversationId": conversation, "stream": True}
    )
    # "stream": false wins over the Accept header
    plain = await calls.call(
        "post", "/ai/chat", json={"message": "x", "stream": False}, headers={"Accept": "text/event-stream"}
    )
    assert plain.headers["content-type"].startswith("application/json")
