"""Conversations, approvals and skills of site A are unusable and invisible from site B, and a
conversation is its owner's alone."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test but the retention's writes and reads in sites of its own: they share the module's app,
# each in new sites of it (kernel/testing/shared.py). Retention runs over every site, so its tests
# start an app of their own (``testing_shared.own_app``).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def test_site_b_never_sees_site_a(calls, calls_b):
    for c, title in ((calls, "a-item"), (calls_b, "b-secret")):
        await c.collection("posts", {"title": "string"})
        await c.create("posts", {"title": title})
    read = await calls.ok("post", "/ai/chat", json={"message": "read posts"})
    assert [p["title"] for p in read["data"]] == ["a-item"]
    found = await calls.ok("post", "/ai/chat", json={"message": "search b-secret"})
    assert found["data"]["hits"] == []
    counted = await calls.ok("post", "/ai/chat", json={"message": "count posts"})
    assert counted["data"] == [{"count": 1}]
    pending = (await calls.call("post", "/ai/chat", json={"message": "delete collection posts"})).json()["data"]
    conv = read["conversationId"]
    assert await calls_b.ok("get", "/ai/conversations") == []
    await calls_b.err("get", f"/ai/conversations/{conv}/messages", 404, "NOT_FOUND")
    await calls_b.err("delete", f"/ai/conversations/{conv}", 404, "NOT_FOUND")
    await calls_b.err("post", "/ai/chat", 404, "NOT_FOUND", json={"message": "hi", "conversationId": conv})
    assert await calls_b.ok("get", "/ai/approvals", params={"status": "all"}) == []
    await calls_b.err("post", f"/ai/approvals/{pending['approvalId']}/decide", 404, "NOT_FOUND",
                      json={"decision": "approved"})
    # still pending in A, and A's collection is still there
    assert [a["id"] for a in await calls.ok("get", "/ai/approvals")] == [pending["approvalId"]]
    await calls.ok("get", "/collections/posts")
    meta = (await calls_b.ok("get", "/ai/conversations", full=True))["meta"]
    assert meta["total"] == 0


async def test_conversations_are_their_owners(svc_app, calls, make_member, site):
    await calls.collection("posts", {"title": "string"})
    first = await make_member(site, "subscriber")
    second = await make_member(site, "subscriber")
    one, two = Calls(svc_app.client, first.headers), Calls(svc_app.client, second.headers)
    mine = await one.ok("post", "/ai/chat", json={"message": "hello"})
    conv = mine["conversationId"]
    assert [c["id"] for c in await one.ok("get", "/ai/conversations")] == [conv]
    assert await two.ok("get", "/ai/conversations") == []
    assert await calls.ok("get", "/ai/conversations") == []  # not even the admin's
    await two.err("get", f"/ai/conversations/{conv}/messages", 404, "NOT_FOUND")
    await two.err("delete", f"/ai/conversations/{conv}", 404, "NOT_FOUND")
    await two.err("post", "/ai/chat", 404, "NOT_FOUND", json={"message": "hi", "conversationId": conv})
    await one.ok("delete", f"/ai/conversations/{conv}", status=204)
    await one.err("get", f"/ai/conversations/{conv}/messages", 404, "NOT_FOUND")
    assert await one.ok("get", "/ai/conversations") == []


async def test_approvals_of_others_are_hidden_from_non_approvers(svc_app, calls, make_member, site):
    await calls.collection("posts", {"title": "string"})
    rules = [{"collection": "posts", "action": a, "fields": ["*"]} for a in ("read", "create")]
    users = [await make_member(site, "subscriber") for _ in range(2)]
    for user in users:
        await calls.grant(rules, {"userId": user.id})
    svc_app.kernel.access.invalidate(site)
    one, two = (Calls(svc_app.client, u.headers) for u in users)
    made = (await one.call("post", "/ai/chat", json={"message": 'create posts {"title": "x"}'})).json()["data"]
    assert await two.ok("get", "/ai/approvals", params={"status": "all"}) == []
    await two.err("post", f"/ai/approvals/{made['approvalId']}/decide", 403, "PERMISSION_DENIED",
                  json={"decision": "rejected"})
    assert [a["id"] for a in await calls.ok("get", "/ai/approvals")] == [made["approvalId"]]


async def test_retention_prunes_one_site_only(make_app, run_due_jobs):
    svc_app, [calls, calls_b] = await testing_shared.own_app(make_app, 2)
    site, site_b = calls.headers["X-Svc-Site"], calls_b.headers["X-Svc-Site"]
    import datetime as dt

    from plugins.ai.chat import conversations

    for c in (calls, calls_b):
        await c.ok("post", "/ai/chat", json={"message": "hello"})
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    assert await conversations.prune_site(svc_app.kernel, site, later) == 1
    assert await calls.ok("get", "/ai/conversations") == []
    assert len(await calls_b.ok("get", "/ai/conversations")) == 1
    await run_due_jobs(svc_app)  # the hourly job keeps what is younger than the retention
    assert len(await calls_b.ok("get", "/ai/conversations")) == 1
    assert await conversations.prune_site(svc_app.kernel, site_b, later) == 1


async def test_a_member_of_another_site_is_refused(svc_app, make_member, site, site_b):
    stranger = await make_member(site_b, "subscriber")
    calls = Calls(svc_app.client, {**stranger.headers, "X-Svc-Site": site})
    await calls.err("post", "/ai/chat", 401, "UNAUTHENTICATED", json={"message": "list collections"})
    await calls.err("post", "/mcp", 401, "UNAUTHENTICATED", json={"jsonrpc": "2.0", "id": 1, "method": "initialize"})


async def test_retention_costs_the_same_at_5_and_50_idle_sites(make_app):
    # Issue 27 ("scale"): the hourly job deletes across sites in bounded batches (conversations
    # with their messages, idle MCP sessions); an idle site costs nothing. What the job runs
    # when the privacy plugin is off (conversations.purge) and always (purge_sessions). Each
    # round: an old conversation and MCP session in A, recent ones in B.
    import datetime as dt

    from sqlalchemy import insert, select, update

    from kernel.testing import add_idle_sites, counted_statements
    from plugins.ai.chat import conversations
    from plugins.ai.mcp import sessions
    from plugins.ai.tables import conversations as conversation_rows
    from plugins.ai.tables import mcp_sessions, messages

    svc_app, [calls, calls_b] = await testing_shared.own_app(make_app, 2)
    site, site_b = calls.headers["X-Svc-Site"], calls_b.headers["X-Svc-Site"]
    kernel = svc_app.kernel
    days = int(kernel.settings.get("ai_conversation_retention_days"))
    counts = []
    for idle in (5, 45):
        await add_idle_sites(kernel, idle)
        for c in (calls, calls_b):
            await c.ok("post", "/ai/chat", json={"message": "hello"})
        now = dt.datetime.now(dt.UTC)
        async with kernel.db.begin() as conn:
            await conn.execute(update(conversation_rows).where(conversation_rows.c.site_id == site).values(
                updated_at=now - dt.timedelta(days=days + 1)))
            for site_id, age in ((site, dt.timedelta(days=2)), (site_b, dt.timedelta(0))):
                await conn.execute(insert(mcp_sessions).values(
                    id=f"s-{idle}-{site_id}", site_id=site_id, owner="u", created_at=now - age, last_used_at=now - age))
        with counted_statements(kernel) as seen:
            assert await conversations.purge(kernel) == 1
            assert await sessions.purge_sessions(kernel) == 1
        counts.append(len(seen))
        assert await calls.ok("get", "/ai/conversations") == []
        async with kernel.db.connect() as conn:
            assert set((await conn.execute(select(messages.c.site_id))).scalars()) == {site_b}
            assert set((await conn.execute(select(mcp_sessions.c.site_id))).scalars()) == {site_b}
    assert counts[0] == counts[1]
    assert len(await calls_b.ok("get", "/ai/conversations")) == 2


async def test_the_retention_job_does_not_load_the_mcp_sdk(make_app, monkeypatch):
    """The hourly ``ai.retention`` job runs in whatever process runs jobs (an API worker without
    Redis): it purges MCP sessions through ``plugins.ai.mcp.sessions``. Reaching for the MCP server
    module loaded the MCP SDK and pydantic there, about 20 MB of that process's RSS for good."""
    import sys

    import plugins.ai
    from plugins.ai.plugin import retention_job

    class NotLoaded:
        def __getattr__(self, name):
            raise AssertionError(f"the retention job reached plugins.ai.mcp.mcp.{name}")

    monkeypatch.setitem(sys.modules, "plugins.ai.mcp.mcp", NotLoaded())
    monkeypatch.setattr(plugins.ai, "mcp", NotLoaded(), raising=False)
    await retention_job((await make_app()).kernel)
