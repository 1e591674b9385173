"""Bad input on every /ai body and on /mcp's JSON-RPC framing: 400 in the envelope (or a
JSON-RPC error), never 500. One app for the module."""

from __future__ import annotations

import pytest

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}

CHAT_BODIES = [
    ({}, ["message"]), ({"message": ""}, ["message"]), ({"message": "   "}, ["message"]),
    ({"message": 5}, ["message"]), ({"message": None}, ["message"]), ({"message": "x" * 4001}, ["message"]),
    ({"message": ["list collections"]}, ["message"]), ({"message": "hi", "extra": 1}, ["extra"]),
    ({"message": "hi", "conversationId": 5}, ["conversationId"]),
    # -- ai_ui: the studio's context
    ({"message": "hi", "context": "posts"}, ["context"]), ({"message": "hi", "context": {"page": 1}}, ["context", "page"]),
    ({"message": "hi", "context": {"collection": 5}}, ["context", "collection"]),
    ({"message": "hi", "context": {"item": ""}}, ["context", "item"]),
    ({"message": "hi", "context": {"collection": "x" * 65}}, ["context", "collection"]),
]


@pytest.mark.parametrize(("body", "path"), CHAT_BODIES)
async def test_chat_bodies(shared_site, body, path):
    await shared_site.calls.err("post", "/ai/chat", 400, "VALIDATION_FAILED", path_is=path, json=body)


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1, 2]", b'"text"', b"null", b"{\"message\": \"\\ud800\"}"])
async def test_chat_raw_bodies(shared_site, raw):
    await shared_site.calls.err("post", "/ai/chat", 400, "VALIDATION_FAILED", content=raw,
                                headers={"Content-Type": "application/json"})


@pytest.mark.parametrize("message", [
    "create posts {not json}", 'update posts 1 {"x": }', 'create posts {"a": 1} {"b": 2}', "read posts limit 999",
    "add field a nope to posts", "import ftp://example.com/a.png", "create collection " + "x" * 70])
async def test_grammar_arguments_are_checked(shared_site, message):
    await shared_site.calls.err("post", "/ai/chat", 400, "VALIDATION_FAILED", json={"message": message})


async def test_unknown_conversation(shared_site):
    await shared_site.calls.err("post", "/ai/chat", 404, "NOT_FOUND", json={"message": "hi", "conversationId": "x"})
    await shared_site.calls.err("get", "/ai/conversations/x/messages", 404, "NOT_FOUND")
    await shared_site.calls.err("delete", "/ai/conversations/" + "y" * 40, 404, "NOT_FOUND")


@pytest.mark.parametrize(("body", "path"), [
    ({}, ["decision"]), ({"decision": "yes"}, ["decision"]), ({"decision": True}, ["decision"]),
    ({"decision": "approved", "why": "x"}, ["why"]), ({"decision": None}, ["decision"])])
async def test_decide_bodies(shared_site, body, path):
    await shared_site.calls.err("post", "/ai/approvals/whatever/decide", 400, "VALIDATION_FAILED", path_is=path,
                                json=body)


async def test_decide_unknown_approval(shared_site):
    await shared_site.calls.err("post", "/ai/approvals/nope/decide", 404, "NOT_FOUND", json={"decision": "approved"})


@pytest.mark.parametrize("params", [{"status": "nope"}, {"limit": "0"}, {"limit": "201"}, {"offset": "-1"}])
async def test_list_parameters(shared_site, params):
    await shared_site.calls.err("get", "/ai/approvals", 400, "VALIDATION_FAILED", params=params)


@pytest.mark.parametrize(("raw", "status"), [
    (b"not json", 400), (b"[]", 400), (b"{}", 400), (b'{"jsonrpc": "1.0", "id": 1, "method": "initialize"}', 400),
    (b'{"jsonrpc": "2.0", "id": 1}', 400), (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', 400),
    (b'[{"jsonrpc": "2.0", "id": 1, "method": "initialize"}]', 400)])
async def test_jsonrpc_framing_before_a_session(shared_site, raw, status):
    resp = await shared_site.calls.call("post", "/mcp", content=raw, headers=ACCEPT)
    assert resp.status_code == status, resp.text
    assert "error" in resp.json() or "errors" in resp.json()


async def test_jsonrpc_inside_a_session(shared_site):
    calls = shared_site.calls
    opened = await calls.call("post", "/mcp", json=INIT, headers=ACCEPT)
    assert opened.status_code == 200, opened.text
    session = {**ACCEPT, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}

    async def rpc(body):
        return await calls.call("post", "/mcp", json=body, headers=session)

    unknown = await rpc({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"})
    assert unknown.status_code == 200 and unknown.json()["error"]["code"] == -32601
    bad_params = await rpc({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 5}})
    assert bad_params.json()["error"]["code"] == -32602
    no_tool = await rpc({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "nope", "arguments": {}}})
    assert no_tool.json()["result"]["isError"] is True
    bad_args = await rpc({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                          "params": {"name": "read_items", "arguments": {"collection": 5}}})
    assert bad_args.json()["result"]["isError"] is True
    assert "VALIDATION_FAILED" in bad_args.json()["result"]["content"][0]["text"]
    garbage = await calls.call("post", "/mcp", content=b"{", headers=session)
    assert garbage.status_code == 400 and garbage.json()["error"]["code"] == -32700


async def test_mcp_refuses_what_it_does_not_speak(shared_site):
    calls = shared_site.calls
    modern = await calls.call("post", "/mcp", json=INIT, headers={**ACCEPT, "MCP-Protocol-Version": "2026-07-28"})
    assert modern.status_code == 400 and modern.json()["error"]["code"] == -32600
    no_session = await calls.call("post", "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                  headers=ACCEPT)
    assert no_session.status_code == 400
    fake = await calls.call("post", "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            headers={**ACCEPT, "Mcp-Session-Id": "0" * 64})
    assert fake.status_code == 404
    get = await calls.call("get", "/mcp")
    assert get.status_code == 405
    no_accept = await calls.call("post", "/mcp", json=INIT, headers={"Accept": "text/html"})
    assert no_accept.status_code == 406


@pytest.mark.parametrize("arguments", [
    {"collection": "posts", "data": {"title": "a\u0000b"}},  # a value the approval would keep
    {"collection": "po\u0000sts"},  # a name a query would carry
    {"collection": "posts", "data": {"ti\u0000tle": "x"}},  # an object key
])
async def test_nul_in_a_tool_call_is_a_jsonrpc_error(shared_site, arguments):
    """A NUL (\\u0000) reaches no tool (PostgreSQL stores it in neither text nor JSONB): the
    call is the protocol's invalid-params error (HTTP 400, JSON-RPC -32602), nothing kept."""
    calls = shared_site.calls
    opened = await calls.call("post", "/mcp", json=INIT, headers=ACCEPT)
    assert opened.status_code == 200, opened.text
    session = {**ACCEPT, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    before = await calls.ok("get", "/ai/approvals")
    for name in ("create_item", "read_items"):
        resp = await calls.call("post", "/mcp", headers=session, json={
            "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
        assert resp.status_code == 400, resp.text
        body = resp.json()
        assert body["id"] == 7 and body["error"]["code"] == -32602 and "NUL" in body["error"]["message"]
    assert await calls.ok("get", "/ai/approvals") == before
