"""POST /mcp with the official SDK's own client over a live server: initialize, list the tools,
call them as two users (different results), sessions bound to their principal, approvals."""

from __future__ import annotations

import json

from kernel.testing import shared as testing_shared

from .conftest import mcp_client as _client
from .conftest import member_with

# The tests that read and write only in sites of their own share the module's app and one server
# of it, each in new sites (kernel/testing/shared.py); those that need a setting of their own, or an
# app that has not yet loaded the MCP SDK, start an app of their own.
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b
shared_live_server = testing_shared.shared_live_server


def _payload(result):
    assert len(result.content) == 1
    return json.loads(result.content[0].text)


async def _posts(calls):
    await calls.collection("posts", {"title": "string"})
    await calls.create("posts", {"title": "public"})
    await calls.create("posts", {"title": "secret"})


async def test_two_users_see_their_own_results(svc_app, shared_live_server, calls, make_member, site):
    await _posts(calls)
    server = shared_live_server
    reader = await member_with(svc_app, calls, make_member, site, [
        {"collection": "posts", "action": "read", "fields": ["*"], "conditions": {"title": {"_eq": "public"}}}])
    async with _client(server, calls.headers) as admin:
        names = {t.name for t in (await admin.list_tools()).tools}
        assert {"list_collections", "read_items", "search_items", "create_item", "update_item",
                "import_file", "delete_collection"} <= names
        rows = _payload(await admin.call_tool("read_items", {"collection": "posts", "sort": ["title"]}))
        assert [r["title"] for r in rows["data"]] == ["public", "secret"]
    async with _client(server, reader.headers) as member:
        names = {t.name for t in (await member.list_tools()).tools}
        assert "delete_collection" not in names and "read_items" in names
        rows = _payload(await member.call_tool("read_items", {"collection": "posts"}))
        assert [r["title"] for r in rows["data"]] == ["public"]
        colls = _payload(await member.call_tool("list_collections", {}))
        assert [c["collection"] for c in colls["data"]] == ["posts"]
        denied = await member.call_tool("delete_collection", {"name": "posts"})
        assert denied.is_error and _payload(denied)["error"]["code"] == "SKILL_DENIED"


async def test_dangerous_tools_answer_an_approval_id(svc_app, shared_live_server, calls):
    await _posts(calls)
    server = shared_live_server
    async with _client(server, calls.headers) as admin:
        answer = _payload(await admin.call_tool("create_item", {"collection": "posts", "data": {"title": "mcp"}}))
    assert answer["status"] == "pending_approval" and answer["code"] == "HITL_REQUIRED"
    assert len((await calls.list("posts"))["data"]) == 2  # nothing created yet
    decided = await calls.ok("post", f"/ai/approvals/{answer['approvalId']}/decide", json={"decision": "approved"})
    assert decided["result"]["title"] == "mcp"
    assert len((await calls.list("posts"))["data"]) == 3


async def test_import_file_refuses_internal_addresses(make_app, live_server, http_receiver):
    app = await make_app(env={"SVC_OUTBOUND_ALLOW_NETWORKS": ""})  # production's default: nothing opened
    admin_headers = {"Authorization": f"Bearer {await app.login()}"}
    headers = {**admin_headers, "X-Svc-Site": await app.create_site(admin_headers)}
    server = await live_server(app)
    http_receiver.serve_raw("/a.png", b"\x89PNG\r\n\x1a\n", content_type="image/png")
    urls = [http_receiver.url("/a.png"), "http://[::ffff:127.0.0.1]/a.png", "http://[::1]/x.png",
            "http://10.0.0.1/x.png", "http://169.254.169.254/latest/meta-data", "http://0x7f000001/x.png",
            "http://2130706433/x.png", "http://localhost/x.png", "ftp://example.com/x.png"]
    async with _client(server, headers) as admin:
        for url in urls:
            result = await admin.call_tool("import_file", {"url": url})
            assert result.is_error, url
            assert _payload(result)["error"]["code"] == "VALIDATION_FAILED", url
    assert http_receiver.hits["/a.png"] == 0


async def test_a_session_is_bound_to_its_principal(svc_app, shared_live_server, calls, make_member, site, site_b):
    server = shared_live_server
    other = await make_member(site, "subscriber")
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    opened = await server.client.post("/api/v1/mcp", json=init, headers={**calls.headers, **accept})
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    own = await server.client.post("/api/v1/mcp", json=listing, headers={
        **calls.headers, **accept, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"})
    assert own.status_code == 200 and own.json()["result"]["tools"]
    stolen = await server.client.post("/api/v1/mcp", json=listing, headers={
        **other.headers, **accept, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"})
    assert stolen.status_code == 404 and stolen.json()["error"]["message"] == "Session not found"
    elsewhere = await server.client.post("/api/v1/mcp", json=listing, headers={
        **calls.headers, "X-Svc-Site": site_b, **accept, "Mcp-Session-Id": session})
    assert elsewhere.status_code == 404
    gone = await server.client.delete("/api/v1/mcp", headers={**other.headers, "Mcp-Session-Id": session})
    assert gone.status_code == 404
    ended = await server.client.delete("/api/v1/mcp", headers={**calls.headers, "Mcp-Session-Id": session})
    assert ended.status_code == 204
    after = await server.client.post("/api/v1/mcp", json=listing, headers={
        **calls.headers, **accept, "Mcp-Session-Id": session})
    assert after.status_code == 404


async def test_origin_rule_and_authentication(svc_app, shared_live_server, calls, site):
    server = shared_live_server
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    evil = await server.client.post("/api/v1/mcp", json=init, headers={
        **calls.headers, **accept, "Origin": "https://evil.example"})
    assert evil.status_code == 403 and evil.json()["errors"][0]["code"] == "PERMISSION_DENIED"
    await calls.ok("patch", "/site", json={"siteUrl": "https://studio.example.com/app"})
    good = await server.client.post("/api/v1/mcp", json=init, headers={
        **calls.headers, **accept, "Origin": "https://studio.example.com"})
    assert good.status_code == 200, good.text
    anon = await server.client.post("/api/v1/mcp", json=init, headers={"X-Svc-Site": site, **accept})
    assert anon.status_code == 401


async def test_import_file_fetches_as_the_caller_without_redirects(make_app, live_server, http_receiver):
    app = await make_app(env={"SVC_OUTBOUND_ALLOW_NETWORKS": "127.0.0.1/32"})
    headers = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(headers)
    headers["X-Svc-Site"] = site
    server = await live_server(app)
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (2, 2), (200, 10, 10)).save(buffer, "PNG")
    png = buffer.getvalue()
    url = http_receiver.serve_raw("/pic.png", png, content_type="image/png")
    http_receiver.respond("/hop.png", lambda r: (302, b"", {"Location": "http://169.254.169.254/x.png"}))
    async with _client(server, headers) as client:
        answer = _payload(await client.call_tool("import_file", {"url": url}))
        assert "data" in answer, answer
        record = answer["data"]
        hop = await client.call_tool("import_file", {"url": http_receiver.url("/hop.png")})
    assert record["id"] and record["type"] == "image/png"
    assert hop.is_error and _payload(hop)["error"]["code"] == "IMPORT_FAILED"
    assert [r.path for r in http_receiver.received()] == ["/pic.png", "/hop.png"]
    files = (await app.client.get("/api/v1/files", headers=headers)).json()["data"]
    assert [f["id"] for f in files] == [record["id"]]


async def test_an_api_key_is_a_principal_of_its_own(svc_app, shared_live_server, calls, site):
    await _posts(calls)
    role = await calls.ok("post", "/roles", status=201, json={"name": "agent"})
    await calls.grant([{"collection": "posts", "action": "read", "fields": ["*"],
                        "conditions": {"title": {"_eq": "secret"}}}], {"roleId": role["id"]})
    key = (await calls.ok("post", "/api-keys", status=201, json={"name": "agent", "roleId": role["id"]}))["key"]
    key_headers = {"Authorization": f"Bearer {key}", "X-Svc-Site": site}
    server = shared_live_server
    async with _client(server, key_headers) as agent:
        rows = _payload(await agent.call_tool("read_items", {"collection": "posts"}))
        assert [r["title"] for r in rows["data"]] == ["secret"]
    accept = {"Accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    opened = await server.client.post("/api/v1/mcp", json=init, headers={**key_headers, **accept})
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    as_admin = await server.client.post("/api/v1/mcp", json=listing, headers={
        **calls.headers, **accept, "Mcp-Session-Id": session})
    assert as_admin.status_code == 404


async def test_without_the_ai_extra_mcp_answers_503_with_the_install_line(make_app, monkeypatch):
    """The MCP SDK is the ai extra (kernel/base/extras.py): without it, /mcp says so, not 500."""
    import sys

    _, _, calls = await testing_shared.app_with_site(make_app)  # the module's app has loaded the SDK

    monkeypatch.setitem(sys.modules, "mcp", None)  # as if `pip install svc-cms` without the extra
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    error = await calls.err("post", "/mcp", 503, "SERVICE_UNAVAILABLE", json=init,
                            headers={"Accept": "application/json, text/event-stream"})
    assert "pip install 'svc-cms[ai]'" in error["message"], error
