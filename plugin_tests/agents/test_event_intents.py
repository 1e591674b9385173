"""Event intents: a content event spawns a goal (from the durable event log, per intent), the
goal's own writes spawn nothing, a paused intent gets nothing, and site B's events never reach A."""

from __future__ import annotations

import asyncio

import pytest_asyncio

from plugins.agents.goals.intents import EVENT_GROUP

from .conftest import later, writer_role


@pytest_asyncio.fixture
async def svc_app(make_app):
    return await make_app(env={"SVC_EVENTS_POLL_SECONDS": "0.1"})


async def _goals(calls, count):
    for _ in range(200):
        data = await calls.ok("get", "/agent/goals")
        if len(data) >= count:
            return data
        await asyncio.sleep(0.05)
    raise AssertionError(f"fewer than {count} goals")


async def _caught_up(kernel, site, intent_id):
    """Until the intent's consumer has taken every event of the site so far (its checkpoint is at
    the log's head): after that, a goal it did not spawn will not come."""
    head = await kernel.events.head(site)
    for _ in range(200):
        found = await kernel.events.checkpoint(site, f"{EVENT_GROUP}:{intent_id}")
        if found is not None and found["cursor"] == head:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the intent {intent_id} did not reach the head of the event log")


async def test_a_content_event_spawns_a_goal_for_that_item(svc_app, calls, calls_b, run_due_jobs):
    await calls.collection("posts", {"title": "string", "body": "text"})
    await calls_b.collection("posts", {"title": "string"})
    await writer_role(calls)
    intent = await calls.ok("post", "/agent/intents", status=201, json={
        "key": "title-case", "title": "Title-case new posts", "role": "writer",
        "description": 'update {{collection}} {{itemId}} {"body": "checked"}',
        "trigger": {"type": "event", "collection": "posts", "events": ["create"]}})
    await calls_b.create("posts", {"title": "other site"})
    item = await calls.create("posts", {"title": "new post"})
    [spawned] = await _goals(calls, 1)
    assert spawned["intentId"] == intent["id"] and spawned["status"] == "queued"
    assert spawned["description"] == f'update posts {item["id"]} {{"body": "checked"}}'
    await run_due_jobs(svc_app, periodic=False)
    staged = await calls.ok("get", "/agent/staged")
    assert staged[0]["itemId"] == item["id"] and staged[0]["diff"]["after"] == {"body": "checked"}
    # a paused intent gets no creates
    await calls.ok("post", f"/agent/intents/{intent['id']}/pause")
    await calls.create("posts", {"title": "while paused"})
    # an intent on updates: an agent's write (the staging applying) spawns nothing, a person's edit does
    on_edit = await calls.ok("post", "/agent/intents", status=201, json={
        "key": "on-edit", "title": "Re-check edited posts", "role": "writer", "description": "read posts",
        "trigger": {"type": "event", "collection": "posts", "events": ["update"]}})
    await run_due_jobs(svc_app, now=later(), periodic=False)
    assert (await calls.get("posts", item["id"]))["body"] == "checked"
    site = calls.headers["X-Svc-Site"]
    await _caught_up(svc_app.kernel, site, on_edit["id"])  # the agent's write reached it: no goal
    assert len(await calls.ok("get", "/agent/goals")) == 1
    await calls.ok("patch", f"/items/posts/{item['id']}", json={"title": "edited by a person"})
    await _goals(calls, 2)
    await _caught_up(svc_app.kernel, site, on_edit["id"])
    assert len(await calls.ok("get", "/agent/goals")) == 2
    assert await calls_b.ok("get", "/agent/goals") == []  # site B has no intent: nothing can spawn there
