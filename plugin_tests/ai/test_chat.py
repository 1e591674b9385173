"""POST /ai/chat with the command grammar (no model provider), approvals and their decisions."""

from __future__ import annotations

from kernel.testing import shared as testing_shared

from .conftest import member_with

# Every test but the expiry's (a setting of its own) writes and reads in a site of its own: they
# share the module's app, each in a new site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

READ_POSTS = [{"collection": "posts", "action": "read", "fields": ["*"]}]


async def _posts(calls):
    await calls.collection("posts", {"title": "string"})
    return await calls.create("posts", {"title": "hello"})


async def test_list_collections_executes_and_is_kept_in_the_conversation(calls):
    await _posts(calls)
    data = await calls.ok("post", "/ai/chat", json={"message": "list collections"})
    assert data["status"] == "executed"
    assert [c["collection"] for c in data["data"]] == ["posts"]
    conv = data["conversationId"]
    listed = await calls.ok("get", "/ai/conversations")
    assert [c["id"] for c in listed] == [conv]
    msgs = await calls.ok("get", f"/ai/conversations/{conv}/messages")
    assert [m["role"] for m in msgs] == ["user", "tool"]
    assert msgs[1]["skill"] == "list_collections" and msgs[1]["result"] == data["data"]


async def test_unknown_text_answers_the_grammar(calls):
    data = await calls.ok("post", "/ai/chat", json={"message": "hello there"})
    assert data["status"] == "answered"
    assert "list collections" in data["message"]


async def test_delete_collection_waits_for_approval_then_runs_once(calls):
    await _posts(calls)
    resp = await calls.call("post", "/ai/chat", json={"message": "delete collection posts"})
    assert resp.status_code == 202
    data = resp.json()["data"]
    assert data["status"] == "pending_approval" and data["code"] == "HITL_REQUIRED"
    approval_id = data["approvalId"]
    # nothing changed yet
    await calls.ok("get", "/collections/posts")
    pending = await calls.ok("get", "/ai/approvals")
    assert [a["id"] for a in pending] == [approval_id]
    assert pending[0]["status"] == "pending" and pending[0]["skill"] == "delete_collection"
    decided = await calls.ok("post", f"/ai/approvals/{approval_id}/decide", json={"decision": "approved"})
    assert decided["status"] == "approved"
    assert decided["result"] == {"collection": "posts", "deleted": True}
    await calls.err("get", "/collections/posts", 404)
    # exactly once: a second decision is refused
    await calls.err("post", f"/ai/approvals/{approval_id}/decide", 409, "CONFLICT", json={"decision": "approved"})
    assert await calls.ok("get", "/ai/approvals") == []
    audit = await calls.ok("get", "/audit", params={"limit": 50})
    actions = {a["action"] for a in audit}
    assert {"ai.approval.request", "ai.approval.approve"} <= actions


async def test_rejected_approval_changes_nothing(calls):
    await _posts(calls)
    data = (await calls.call("post", "/ai/chat", json={"message": "delete collection posts"})).json()["data"]
    decided = await calls.ok("post", f"/ai/approvals/{data['approvalId']}/decide", json={"decision": "rejected"})
    assert decided["status"] == "rejected" and decided["result"] is None
    await calls.ok("get", "/collections/posts")
    await calls.err("post", f"/ai/approvals/{data['approvalId']}/decide", 409, "CONFLICT",
                    json={"decision": "approved"})


async def test_skill_denied_without_the_capability(svc_app, calls, make_member, site):
    await _posts(calls)
    reader = await member_with(svc_app, calls, make_member, site, READ_POSTS)
    await reader.err("post", "/ai/chat", 403, "SKILL_DENIED", json={"message": "delete collection posts"})
    await reader.err("post", "/ai/chat", 403, "SKILL_DENIED", json={"message": "delete posts 1"})
    assert await calls.ok("get", "/ai/approvals", params={"status": "all"}) == []
    # safe skills run as the caller
    data = await reader.ok("post", "/ai/chat", json={"message": "read posts"})
    assert [p["title"] for p in data["data"]] == ["hello"]
    nobody = await member_with(svc_app, calls, make_member, site, [])
    await nobody.err("post", "/ai/chat", 403, "SKILL_DENIED", json={"message": "read posts"})


async def test_create_item_approved_runs_as_the_requester(svc_app, calls, make_member, site):
    await _posts(calls)
    writer = await member_with(svc_app, calls, make_member, site, READ_POSTS + [
        {"collection": "posts", "action": "create", "fields": ["*"]}])
    resp = await writer.call("post", "/ai/chat", json={"message": 'create posts {"title": "from ai"}'})
    assert resp.status_code == 202, resp.text
    approval_id = resp.json()["data"]["approvalId"]
    # the requester is no approver
    await writer.err("post", f"/ai/approvals/{approval_id}/decide", 403, "PERMISSION_DENIED",
                     json={"decision": "approved"})
    # the requester sees its own request, the admin sees it too
    assert [a["id"] for a in await writer.ok("get", "/ai/approvals")] == [approval_id]
    decided = await calls.ok("post", f"/ai/approvals/{approval_id}/decide", json={"decision": "approved"})
    assert decided["status"] == "approved" and decided["result"]["title"] == "from ai"
    created = await calls.get("posts", decided["result"]["id"])
    assert created["userCreated"] == (await writer.ok("get", "/auth/me"))["id"]  # the requester, not the admin
    titles = sorted(p["title"] for p in (await calls.list("posts"))["data"])
    assert titles == ["from ai", "hello"]


async def test_requester_who_lost_access_gets_nothing(svc_app, calls, make_member, site):
    await _posts(calls)
    made = await make_member(site, "subscriber")
    policy = await calls.grant(READ_POSTS + [{"collection": "posts", "action": "create", "fields": ["*"]}],
                               {"userId": made.id})
    svc_app.kernel.access.invalidate(site)
    from kernel.testing import Calls

    writer = Calls(svc_app.client, made.headers)
    data = (await writer.call("post", "/ai/chat", json={"message": 'create posts {"title": "late"}'})).json()["data"]
    await calls.ok("delete", f"/policies/{policy}", status=204)
    svc_app.kernel.access.invalidate(site)
    decided = await calls.ok("post", f"/ai/approvals/{data['approvalId']}/decide", json={"decision": "approved"})
    assert decided["status"] == "failed" and decided["error"]["code"] == "SKILL_DENIED"
    assert [p["title"] for p in (await calls.list("posts"))["data"]] == ["hello"]


async def test_named_approver_needs_the_capability_too(svc_app, calls, make_member, site):
    await _posts(calls)
    writer_rules = READ_POSTS + [{"collection": "posts", "action": "create", "fields": ["*"]}]
    writer = await member_with(svc_app, calls, make_member, site, writer_rules)
    approver_user = await make_member(site, "subscriber")
    reader_user = await make_member(site, "subscriber")
    await calls.grant(writer_rules, {"userId": approver_user.id})
    await calls.grant(READ_POSTS, {"userId": reader_user.id})
    svc_app.kernel.access.invalidate(site)
    await calls.ok("put", "/settings/ai.approvers", json={"value": [approver_user.id, reader_user.id]})
    from kernel.testing import Calls

    approver, reader = Calls(svc_app.client, approver_user.headers), Calls(svc_app.client, reader_user.headers)
    data = (await writer.call("post", "/ai/chat", json={"message": 'create posts {"title": "ok"}'})).json()["data"]
    assert [a["id"] for a in await approver.ok("get", "/ai/approvals")] == [data["approvalId"]]
    await reader.err("post", f"/ai/approvals/{data['approvalId']}/decide", 403, "PERMISSION_DENIED",
                     json={"decision": "approved"})
    decided = await approver.ok("post", f"/ai/approvals/{data['approvalId']}/decide", json={"decision": "approved"})
    assert decided["status"] == "approved"


async def test_approvals_expire(make_app):
    app = await make_app(env={"SVC_AI_APPROVAL_TTL_HOURS": "0.0001"})
    headers = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(headers)
    from kernel.testing import Calls

    calls = Calls(app.client, {**headers, "X-Svc-Site": site})
    await _posts(calls)
    data = (await calls.call("post", "/ai/chat", json={"message": "delete collection posts"})).json()["data"]
    import asyncio

    expired: list = []
    for _ in range(250):  # the TTL is 0.36 seconds; bounded at ~5 s past it
        expired = await calls.ok("get", "/ai/approvals", params={"status": "expired"})
        if expired:
            break
        await asyncio.sleep(0.02)
    assert await calls.ok("get", "/ai/approvals") == []
    assert [a["id"] for a in expired] == [data["approvalId"]] and expired[0]["status"] == "expired"
    error = await calls.err("post", f"/ai/approvals/{data['approvalId']}/decide", 409, "CONFLICT",
                            json={"decision": "approved"})
    assert "expired" in error["message"]
    await calls.ok("get", "/collections/posts")


async def test_two_concurrent_decisions_run_once(calls):
    import asyncio

    await _posts(calls)
    item = await calls.create("posts", {"title": "bye"})
    data = (await calls.call("post", "/ai/chat", json={"message": f"delete posts {item['id']}"})).json()["data"]
    path = f"/ai/approvals/{data['approvalId']}/decide"
    answers = await asyncio.gather(*(calls.call("post", path, json={"decision": "approved"}) for _ in range(4)))
    assert sorted(a.status_code for a in answers) == [200, 409, 409, 409]
    audit = await calls.ok("get", "/audit", params={"limit": 100})
    assert sum(1 for a in audit if a["action"] == "ai.approval.approve") == 1


async def test_an_approved_update_records_its_cause(calls):
    post = await _posts(calls)
    resp = await calls.call("post", "/ai/chat", json={"message": f'update posts {post["id"]} {{"title": "new"}}'})
    approval_id = resp.json()["data"]["approvalId"]
    assert (await calls.get("posts", post["id"]))["title"] == "hello"
    await calls.ok("post", f"/ai/approvals/{approval_id}/decide", json={"decision": "approved"})
    assert (await calls.get("posts", post["id"]))["title"] == "new"
    revisions = await calls.ok("get", f"/items/posts/{post['id']}/revisions")
    assert revisions[0]["causedBy"] == f"ai-approval:{approval_id}"
