"""Holes found in the security review of the AI plugin (each test failed before its fix)."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

from .conftest import member_with

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site
shared_live_server = testing_shared.shared_live_server

READ_POSTS = [{"collection": "posts", "action": "read", "fields": ["*"]}]
WRITE_POSTS = READ_POSTS + [{"collection": "posts", "action": "create", "fields": ["*"]}]


async def test_a_named_approver_cannot_approve_their_own_request(svc_app, calls, make_member, site):
    await calls.collection("posts", {"title": "string"})
    requester_user = await make_member(site, "subscriber")
    other_user = await make_member(site, "subscriber")
    for made in (requester_user, other_user):
        await calls.grant(WRITE_POSTS, {"userId": made.id})
    svc_app.kernel.access.invalidate(site)
    await calls.ok("put", "/settings/ai.approvers", json={"value": [requester_user.id, other_user.id]})
    requester, other = Calls(svc_app.client, requester_user.headers), Calls(svc_app.client, other_user.headers)
    resp = await requester.call("post", "/ai/chat", json={"message": 'create posts {"title": "mine"}'})
    assert resp.status_code == 202, resp.text
    approval_id = resp.json()["data"]["approvalId"]
    error = await requester.err("post", f"/ai/approvals/{approval_id}/decide", 403, "PERMISSION_DENIED",
                                json={"decision": "approved"})
    assert error["extensions"]["reason"] == "self_approval"
    assert (await calls.list("posts"))["data"] == []
    pending = await calls.ok("get", "/ai/approvals")
    assert [(a["id"], a["status"]) for a in pending] == [(approval_id, "pending")]
    # the requester may still withdraw (reject) it; a second approver could have approved it
    decided = await other.ok("post", f"/ai/approvals/{approval_id}/decide", json={"decision": "approved"})
    assert decided["status"] == "approved" and decided["result"]["title"] == "mine"


async def test_a_requester_may_reject_their_own_request(svc_app, calls, make_member, site):
    await calls.collection("posts", {"title": "string"})
    writer = await member_with(svc_app, calls, make_member, site, WRITE_POSTS)
    me = (await writer.ok("get", "/auth/me"))["id"]
    await calls.ok("put", "/settings/ai.approvers", json={"value": [me]})
    data = (await writer.call("post", "/ai/chat", json={"message": 'create posts {"title": "x"}'})).json()["data"]
    decided = await writer.ok("post", f"/ai/approvals/{data['approvalId']}/decide", json={"decision": "rejected"})
    assert decided["status"] == "rejected"
    assert (await calls.list("posts"))["data"] == []


async def test_mcp_needs_a_session_whatever_json_the_body_holds(shared_live_server, calls):
    """The route's own parse of the body must agree with the SDK's: a body orjson refuses (NaN)
    but the SDK reads was passed on without a session (a tools/call with no ``initialize``)."""
    await calls.collection("posts", {"title": "string"})
    await calls.create("posts", {"title": "secret"})
    server = shared_live_server
    headers = {**calls.headers, "Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-06-18"}
    bodies = [b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_items",'
              b'"arguments":{"collection":"posts","x":NaN}}}',
              b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_items",'
              b'"arguments":{"collection":"posts","limit":Infinity}}}']
    for body in bodies:
        resp = await server.client.post("/api/v1/mcp", content=body, headers=headers)
        assert resp.status_code == 400, resp.text
        assert "secret" not in resp.text


async def test_a_nul_in_an_approval_or_conversation_id_is_not_found_not_a_500(calls):
    """PostgreSQL refuses NUL in text: such an id names nothing (was 500 INTERNAL on PostgreSQL)."""
    await calls.err("post", "/ai/approvals/a%00b/decide", 404, "NOT_FOUND", json={"decision": "approved"})
    await calls.err("delete", "/ai/conversations/a%00b", 404, "NOT_FOUND")
    await calls.err("get", "/ai/conversations/a%00b/messages", 404, "NOT_FOUND")
