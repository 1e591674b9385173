"""Site B never sees, touches or counts site A's goals, roles, stagings, promotions,
constitutions, freezes and intents; a freeze of A never stops B."""

from __future__ import annotations

from .conftest import goal, later, posts, update_line, writer_role


async def test_site_b_never_sees_or_touches_site_a(svc_app, calls, calls_b, run_due_jobs):
    item = await posts(calls)
    await writer_role(calls)
    pending = await calls.ok("post", "/agent/goals", status=201, json={"title": "p", "execution": "none"})
    done = await goal(calls, update_line(item, {"title": "A"}))
    staging = done["steps"][0]["stagingId"]
    promotion = await calls.ok("post", "/agent/autonomy/promotions", status=201, json={"role": "writer",
                                                                                       "level": "act"})
    version = await calls.ok("post", "/agent/constitution", status=201, json={"rules": []})
    intent = await calls.ok("post", "/agent/intents", status=201, json={
        "key": "k", "title": "t", "description": "count posts", "trigger": {"type": "schedule", "everySeconds": 60},
        "status": "paused"})
    freeze = await calls.ok("post", "/agent/kill-switch", status=201, json={"scope": "site"})
    # B reads nothing of A's
    assert await calls_b.ok("get", "/agent/goals") == []
    assert (await calls_b.ok("get", "/agent/goals", full=True))["meta"]["total"] == 0
    assert await calls_b.ok("get", "/agent/roles") == []
    assert await calls_b.ok("get", "/agent/staged", params={"status": "all"}) == []
    assert await calls_b.ok("get", "/agent/autonomy/promotions") == []
    assert await calls_b.ok("get", "/agent/constitution") == []
    assert await calls_b.ok("get", "/agent/kill-switch") == []
    assert await calls_b.ok("get", "/agent/intents") == []
    assert (await calls_b.ok("get", "/agent/autonomy"))["grants"] == []
    # and touches nothing of A's
    for method, path, body in [
            ("get", f"/agent/goals/{pending['id']}", None),
            ("post", f"/agent/goals/{pending['id']}/decompose", {"goals": [{"title": "x"}]}),
            ("post", f"/agent/goals/{pending['id']}/settle", None),
            ("get", "/agent/roles/writer", None), ("patch", "/agent/roles/writer", {"description": "x"}),
            ("delete", "/agent/roles/writer", None),
            ("get", f"/agent/staged/{staging}", None), ("post", f"/agent/staged/{staging}/veto", {}),
            ("post", f"/agent/autonomy/promotions/{promotion['id']}/decide", {"decision": "approved"}),
            ("post", f"/agent/constitution/{version['id']}/dry-run", None),
            ("post", f"/agent/constitution/{version['id']}/activate", None),
            ("post", "/agent/constitution/compile", {"id": version["id"]}),
            ("post", f"/agent/constitution/{version['id']}/compile", None),
            ("post", "/agent/kill-switch/lift", {"id": freeze["id"]}),
            ("get", f"/agent/intents/{intent['id']}", None), ("patch", f"/agent/intents/{intent['id']}",
                                                              {"title": "x"}),
            ("post", f"/agent/intents/{intent['id']}/resume", None), ("delete", f"/agent/intents/{intent['id']}", None)]:
        resp = await calls_b.call(method, path, json=body)
        assert resp.status_code == 404, (method, path, resp.text)
    # B cannot name A's role in its own goals, promotions or intents
    await calls_b.err("post", "/agent/goals", 400, "VALIDATION_FAILED", json={"title": "t", "role": "writer"})
    await calls_b.err("post", "/agent/autonomy/promotions", 400, "VALIDATION_FAILED",
                      json={"role": "writer", "level": "act"})
    # A's site freeze does not stop B, and B's role of the same name is B's own
    await posts(calls_b, "b-title")
    b_item = (await calls_b.list("posts"))["data"][0]["id"]
    await writer_role(calls_b)
    b_done = await goal(calls_b, update_line(b_item, {"title": "B"}))
    assert b_done["status"] == "succeeded" and b_done["steps"][0]["outcome"] == "staged"
    await run_due_jobs(svc_app, now=later(), periodic=False)
    assert (await calls_b.get("posts", b_item))["title"] == "B"
    assert (await calls.get("posts", item))["title"] == "hello"  # A is frozen
    # A's state is as A left it
    assert (await calls.ok("get", f"/agent/intents/{intent['id']}"))["title"] == "t"
    assert (await calls.ok("get", "/agent/roles/writer"))["description"] == "Keeps posts tidy"
    assert (await calls.ok("get", "/agent/autonomy/promotions"))[0]["status"] == "pending"
    assert len(await calls.ok("get", "/agent/kill-switch")) == 1
