"""A NUL character (``\\u0000``) in a skill call's arguments is refused at the gate (400
``VALIDATION_FAILED`` at its path) whoever made the call: a command's JSON, a model's tool call
(MCP refuses it in the message already). Nothing runs, nothing is stored."""

from __future__ import annotations

import json

from kernel.testing import Calls

from .conftest import admin_with_model, tool_call


async def test_a_command_with_a_nul_is_refused(calls: Calls):
    await calls.collection("posts", {"title": "string", "meta": "json"})
    message = 'create posts {"title": "a\\u0000b"}'  # the JSON inside the command decodes to a NUL
    error = await calls.err("post", "/ai/chat", 400, "VALIDATION_FAILED", json={"message": message})
    assert error["path"] == ["arguments", "data", "title"] and "NUL" in error["message"], error
    error = await calls.err("post", "/ai/chat", 400, "VALIDATION_FAILED",
                            json={"message": 'create posts {"meta": {"k\\u0000": 1}}'})
    assert error["path"][:3] == ["arguments", "data", "meta"], error  # a key holding it too
    assert (await calls.list("posts"))["data"] == []


async def test_a_model_tool_call_with_a_nul_is_refused(make_app, model):
    calls = await admin_with_model(make_app, model)
    await calls.collection("posts", {"title": "string"})
    model.script = [{"tool_calls": [tool_call("create_item", {"collection": "posts", "data": {"title": "a\x00b"}})]},
                    {"content": "I could not."}]
    answer = await calls.ok("post", "/ai/chat", json={"message": "make a post"})
    assert answer["status"] == "answered" and answer["message"] == "I could not."
    assert (await calls.list("posts"))["data"] == []
    # The model was told why, in the tool result.
    tool = next(m for m in model.receiver.requests[-1].json()["messages"] if m["role"] == "tool")
    assert "VALIDATION_FAILED" in tool["content"] and "NUL" in tool["content"]
    messages = await calls.ok("get", f"/ai/conversations/{answer['conversationId']}/messages")
    assert "\\u0000" not in json.dumps([m.get("arguments") for m in messages])
