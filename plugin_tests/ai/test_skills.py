"""The skills hook (an extension's skill is offered and gated like a built-in), the chat rate
limit, publishing a release and importing a file through skills."""

from __future__ import annotations

import pytest

from kernel import hookimpl
from kernel.testing import Calls
from plugins.ai.api import Skill
from plugins.items import api as items

from .conftest import mcp_client


async def shout(ctx, args):
    item = await items.read(ctx.items_context(), args["collection"], args["id"])
    return {"shout": str(item["title"]).upper()}


async def purge(ctx, args):
    await items.delete(ctx.items_context(), args["collection"], args["id"], cause=ctx.cause)
    return {"purged": args["id"]}


ARGS = {"type": "object", "required": ["collection", "id"], "additionalProperties": False,
        "properties": {"collection": {"type": "string"}, "id": {"type": "string"}}}


class Extension:
    @hookimpl
    def register_ai_skills(self, kernel):
        return [Skill("shout", "Shout an item's title", shout, ARGS, capability="items:read"),
                Skill("purge", "Delete an item for good", purge, ARGS, dangerous=True, capability="items:delete")]


async def test_an_extension_adds_skills(svc_app, calls, make_member, site, temporary_plugin, live_server):
    await calls.collection("posts", {"title": "string"})
    post = await calls.create("posts", {"title": "quiet"})
    with temporary_plugin(svc_app.kernel, Extension(), "shouter"):
        listed = {s["name"]: s for s in await calls.ok("get", "/ai/skills")}
        assert listed["shout"]["dangerous"] is False and listed["purge"]["dangerous"] is True
        made = await make_member(site, "subscriber")
        member = Calls(svc_app.client, made.headers)
        await calls.grant([{"collection": "posts", "action": "read", "fields": ["*"]}], {"userId": made.id})
        svc_app.kernel.access.invalidate(site)
        server = await live_server(svc_app)
        async with mcp_client(server, member.headers) as mcp:
            result = await mcp.call_tool("shout", {"collection": "posts", "id": post["id"]})
            assert '"QUIET"' in result.content[0].text
            denied = await mcp.call_tool("purge", {"collection": "posts", "id": post["id"]})
            assert denied.is_error and "SKILL_DENIED" in denied.content[0].text
        async with mcp_client(server, calls.headers) as mcp:
            pending = await mcp.call_tool("purge", {"collection": "posts", "id": post["id"]})
            assert "HITL_REQUIRED" in pending.content[0].text
    await calls.ok("get", f"/items/posts/{post['id']}")
    assert "shout" not in {s["name"] for s in await calls.ok("get", "/ai/skills")}


def test_a_skill_declares_itself_properly():
    with pytest.raises(ValueError):
        Skill("Bad Name", "x", shout)
    with pytest.raises(ValueError):
        Skill("ok", "x", shout, capability="root")
    with pytest.raises(ValueError):
        Skill("ok", "x", shout, parameters={"type": "array"})


async def test_chat_is_rate_limited_per_user(make_app):
    app = await make_app(env={"SVC_RATE_LIMIT_AI": "2"})
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    calls = Calls(app.client, headers)
    for _ in range(2):
        resp = await calls.call("post", "/ai/chat", json={"message": "list collections"})
        assert resp.status_code == 200 and resp.headers["X-RateLimit-Limit"] == "2"
    await calls.err("post", "/ai/chat", 429, "RATE_LIMITED", json={"message": "list collections"})


async def test_publish_release_through_an_approval(calls):
    await calls.collection("posts", {"title": "string"})
    post = await calls.create("posts", {"title": "draft one", "status": "draft"})
    release = await calls.ok("post", "/releases", status=201, json={
        "name": "r1", "addItems": [{"collection": "posts", "itemId": post["id"], "targetStatus": "published"}]})
    resp = await calls.call("post", "/ai/chat", json={"message": f"publish release {release['id']}"})
    assert resp.status_code == 202
    assert (await calls.get("posts", post["id"]))["status"] == "draft"
    decided = await calls.ok("post", f"/ai/approvals/{resp.json()['data']['approvalId']}/decide",
                             json={"decision": "approved"})
    assert decided["status"] == "approved" and decided["result"]["status"] == "published"
    assert (await calls.get("posts", post["id"]))["status"] == "published"


class Clash:
    @hookimpl
    def register_ai_skills(self, kernel):
        return [Skill("read_items", "Another read_items", shout, ARGS)]


async def test_a_taken_skill_name_is_refused(svc_app, temporary_plugin):
    from plugins.ai import registry

    with temporary_plugin(svc_app.kernel, Clash(), "clash"), pytest.raises(ValueError, match="read_items"):
        registry.skills(svc_app.kernel)
    assert "read_items" in registry.skills(svc_app.kernel)


@pytest.mark.parametrize("value", ["ftp://models.example/v1", "http://user:pw@127.0.0.1/v1", "localhost:11434"])
def test_a_bad_provider_url_stops_the_start(value):
    from plugins.ai.provider import parse_base_url

    with pytest.raises(ValueError):
        parse_base_url(value)
    assert parse_base_url(" http://127.0.0.1:11434/v1 ") == "http://127.0.0.1:11434/v1"
