"""A skill call that asks for ``allowDestructive`` (dropping data) always waits for a human's
approval, whatever the skill's own ``dangerous`` flag; ``delete_field`` can ask for it, so the
copilot can drop a field holding data once an approver agrees."""

from __future__ import annotations

from kernel import hookimpl
from kernel.testing import Calls
from plugins.ai.api import Skill

from .conftest import admin_with_model, mcp_client, tool_call


async def test_delete_field_with_data_asks_for_allow_destructive(calls: Calls):
    await calls.collection("notes", {"body": "text", "tag": "string"})
    await calls.create("notes", {"body": "kept", "tag": "x"})
    # Without it: the approved call fails as REST would answer (409 DESTRUCTIVE_BLOCKED).
    resp = await calls.call("post", "/ai/chat", json={"message": "delete field body of notes"})
    assert resp.status_code == 202, resp.text
    pending = resp.json()["data"]
    failed = await calls.ok("post", f"/ai/approvals/{pending['approvalId']}/decide", json={"decision": "approved"})
    assert failed["status"] == "failed" and failed["error"]["code"] == "DESTRUCTIVE_BLOCKED", failed
    await calls.ok("get", "/fields/notes/body")
    # With it: a pending approval that names the data loss; approved, the field goes with its values.
    resp = await calls.call("post", "/ai/chat", json={"message": "delete field body of notes with its data"})
    assert resp.status_code == 202, resp.text
    approval_id = resp.json()["data"]["approvalId"]
    [approval] = [a for a in await calls.ok("get", "/ai/approvals") if a["id"] == approval_id]
    assert approval["arguments"] == {"collection": "notes", "field": "body", "allowDestructive": True}
    assert "with its data" in approval["message"]
    await calls.ok("get", "/fields/notes/body")  # nothing happened yet
    done = await calls.ok("post", f"/ai/approvals/{approval['id']}/decide", json={"decision": "approved"})
    assert done["status"] == "approved", done
    await calls.err("get", "/fields/notes/body", 404)
    assert [n.get("body") for n in (await calls.list("notes"))["data"]] == [None]


async def test_the_model_asks_for_it_as_a_tool_argument(make_app, model):
    calls = await admin_with_model(make_app, model)
    await calls.collection("notes", {"body": "text"})
    await calls.create("notes", {"body": "kept"})
    model.script = [{"tool_calls": [tool_call("delete_field", {"collection": "notes", "field": "body",
                                                                "allowDestructive": True})]}]
    resp = await calls.call("post", "/ai/chat", json={"message": "drop the body field, data and all"})
    assert resp.status_code == 202 and resp.json()["data"]["code"] == "HITL_REQUIRED", resp.text
    tools = {s["name"]: s for s in await calls.ok("get", "/ai/skills")}
    assert tools["delete_field"]["parameters"]["properties"]["allowDestructive"]["type"] == "boolean"


async def erase(ctx, args):
    return {"erased": args["collection"], "destructive": bool(args.get("allowDestructive"))}


class Eraser:
    @hookimpl
    def register_ai_skills(self, kernel):
        return [Skill("erase_things", "Erase things", erase, {
            "type": "object", "required": ["collection"], "additionalProperties": False,
            "properties": {"collection": {"type": "string"}, "allowDestructive": {"type": "boolean"}}},
            capability="admin")]


async def test_any_skill_asking_for_it_is_gated(svc_app, calls: Calls, temporary_plugin, live_server):
    with temporary_plugin(svc_app.kernel, Eraser(), "eraser"):
        server = await live_server(svc_app)
        async with mcp_client(server, calls.headers) as mcp:
            plain = await mcp.call_tool("erase_things", {"collection": "notes"})
            assert '"executed"' in plain.content[0].text
            gated = await mcp.call_tool("erase_things", {"collection": "notes", "allowDestructive": True})
            assert "HITL_REQUIRED" in gated.content[0].text, gated.content[0].text
            unasked = await mcp.call_tool("erase_things", {"collection": "notes", "allowDestructive": False})
            assert '"executed"' in unasked.content[0].text
