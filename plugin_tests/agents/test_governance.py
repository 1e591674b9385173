"""The constitution (draft, compile, dry-run, activate; checked on every agent write), the kill
switch (four scopes, capability, audit, across two apps sharing the database) and intents."""

from __future__ import annotations

from .conftest import goal, later, member_as, posts, update_line, writer_role


async def test_constitution_compiles_dry_runs_and_blocks_agent_writes(svc_app, calls, run_due_jobs):
    item = await posts(calls)
    await writer_role(calls)
    await goal(calls, update_line(item, {"title": "x" * 80}))
    await goal(calls, "delete posts " + item)
    bad = await calls.ok("post", "/agent/constitution", status=201, json={"rules": [
        {"rule": "deny_operation", "operation": "erase"}, {"rule": "max_length", "field": "title"},
        {"rule": "telepathy"}]})
    assert bad["status"] == "draft" and bad["version"] == 1
    resp = await calls.call("post", "/agent/constitution/compile", json={"id": bad["id"]})
    assert resp.status_code == 400
    errors = resp.json()["errors"]
    assert {e["code"] for e in errors} == {"CONSTITUTION_INVALID"}
    assert [e["path"] for e in errors] == [["rules", "0", "operation"], ["rules", "1", "max"], ["rules", "2", "rule"]]
    await calls.err("post", f"/agent/constitution/{bad['id']}/activate", 409, "CONSTITUTION_NOT_COMPILED")
    good = await calls.ok("post", "/agent/constitution", status=201, json={"note": "house rules", "rules": [
        {"id": "no-delete", "rule": "deny_operation", "operation": "delete"},
        {"id": "short-titles", "rule": "max_length", "field": "title", "max": 70},
        {"rule": "deny_collection", "collection": "secrets"}]})
    assert (await calls.ok("post", "/agent/constitution/compile", json={"rules": good["rules"]}))["checks"] == [
        "no-delete", "short-titles", "rule-2"]  # a check only: the draft stays a draft
    assert (await calls.ok("get", "/agent/constitution"))[0]["status"] == "draft"
    compiled = await calls.ok("post", f"/agent/constitution/{good['id']}/compile")
    assert compiled["status"] == "compiled" and compiled["checks"] == ["no-delete", "short-titles", "rule-2"]
    dry = await calls.ok("post", f"/agent/constitution/{good['id']}/dry-run")
    assert dry["examined"] == 2
    assert sorted(b["reason"].split(":")[0] for b in dry["wouldBlock"]) == ["no-delete", "short-titles"]
    active = await calls.ok("post", f"/agent/constitution/{good['id']}/activate")
    assert active["status"] == "active"
    blocked = await goal(calls, update_line(item, {"title": "y" * 75}))
    assert blocked["steps"][0] == {"skill": "update_item", "outcome": "blocked", "code": "CONSTITUTION_BLOCKED",
                                   "message": "short-titles: 'title' must stay under 70 characters"}
    fine = await goal(calls, update_line(item, {"title": "short"}))
    assert fine["steps"][0]["outcome"] == "staged"
    incidents = (await calls.ok("get", "/agent/autonomy"))["incidents"]
    assert [i["kind"] for i in incidents] == ["constitution_blocked"]
    # a staging is checked again when it applies: a stricter version activated meanwhile blocks it
    stricter = await calls.ok("post", "/agent/constitution", status=201, json={"rules": [
        {"rule": "deny_collection", "collection": "posts", "message": "posts are frozen for launch"}]})
    await calls.ok("post", "/agent/constitution/compile", json={"id": stricter["id"]})
    await calls.ok("post", f"/agent/constitution/{stricter['id']}/activate")
    versions = await calls.ok("get", "/agent/constitution")
    assert [(v["version"], v["status"]) for v in versions] == [(3, "active"), (2, "retired"), (1, "draft")]
    await run_due_jobs(svc_app, now=later(), periodic=False)
    assert (await calls.get("posts", item))["title"] == "hello"
    assert (await calls.ok("get", "/agent/staged", params={"status": "blocked"}))[0]["reason"].endswith(
        "posts are frozen for launch")


async def test_max_writes_an_hour(svc_app, calls):
    item = await posts(calls)
    await writer_role(calls)
    version = await calls.ok("post", "/agent/constitution", status=201, json={"rules": [
        {"id": "rate", "rule": "max_writes", "limit": 2, "per": "hour"}]})
    await calls.ok("post", "/agent/constitution/compile", json={"id": version["id"]})
    await calls.ok("post", f"/agent/constitution/{version['id']}/activate")
    lines = "\n".join(update_line(item, {"title": f"t{n}"}) for n in range(3))
    done = await goal(calls, lines)
    assert [s["outcome"] for s in done["steps"]] == ["staged", "staged", "blocked"]


async def test_freeze_needs_the_capability_and_is_audited(svc_app, calls, site, make_member):
    plain = await member_as(svc_app, calls, make_member, site, "editors")
    await plain.err("post", "/agent/kill-switch", 403, "CAPABILITY_REQUIRED", json={"scope": "site"})
    freezer = await member_as(svc_app, calls, make_member, site, "agents:freeze")
    frozen = await freezer.ok("post", "/agent/kill-switch", status=201, json={"scope": "role", "target": "writer",
                                                                               "reason": "incident"})
    assert frozen["active"] is True
    assert [f["id"] for f in await plain.ok("get", "/agent/kill-switch")] == [frozen["id"]]
    await plain.err("post", "/agent/kill-switch/lift", 403, "CAPABILITY_REQUIRED", json={"id": frozen["id"]})
    lifted = await freezer.ok("post", "/agent/kill-switch/lift", json={"id": frozen["id"]})
    assert lifted["active"] is False
    await freezer.err("post", "/agent/kill-switch/lift", 409, "CONFLICT", json={"id": frozen["id"]})
    assert await plain.ok("get", "/agent/kill-switch") == []
    audit = await calls.ok("get", "/audit", params={"limit": 50})
    actions = [a["action"] for a in audit]
    assert "agent_frozen" in actions and "agent_freeze_lifted" in actions


async def test_a_freeze_in_one_app_stops_queued_work_and_stagings_in_another(svc_app, make_app, calls,
                                                                              run_due_jobs):
    """Two apps on one database (and one Redis namespace): app A freezes, app B's worker stops."""
    other = await make_app(data_dir=make_app.base_dir / "app0")
    item = await posts(calls)
    await writer_role(calls)
    await goal(calls, update_line(item, {"title": "staged"}))
    queued = await goal(calls, update_line(item, {"title": "queued"}), execution="async")
    site_freeze = await calls.ok("post", "/agent/kill-switch", status=201, json={"scope": "site"})
    await run_due_jobs(other, now=later(), periodic=False)
    assert (await calls.ok("get", f"/agent/goals/{queued['id']}"))["status"] == "frozen"
    assert (await calls.get("posts", item))["title"] == "hello"
    assert (await calls.ok("get", "/agent/staged"))[0]["status"] == "pending"  # held, not lost
    await calls.ok("post", "/agent/kill-switch/lift", json={"id": site_freeze["id"]})
    await run_due_jobs(other, now=later(3), periodic=False)  # the held staging looks again
    assert (await calls.get("posts", item))["title"] == "staged"


async def test_run_scope_freezes_a_goal_and_its_children(svc_app, calls, run_due_jobs):
    item = await posts(calls)
    await writer_role(calls)
    parent = await calls.ok("post", "/agent/goals", status=201, json={"title": "p", "execution": "none",
                                                                      "role": "writer"})
    tree = await calls.ok("post", f"/agent/goals/{parent['id']}/decompose", status=201, json={"goals": [
        {"title": "a", "description": update_line(item, {"title": "a"}), "role": "writer"}]})
    await calls.ok("post", "/agent/kill-switch", status=201, json={"scope": "run", "target": parent["id"]})
    await run_due_jobs(svc_app, periodic=False)
    child = await calls.ok("get", f"/agent/goals/{tree['children'][0]['id']}")
    assert child["status"] == "frozen" and child["error"]["code"] == "AGENT_FROZEN"


async def test_intents_spawn_goals_on_schedule_pause_and_respect_freezes(svc_app, calls, run_due_jobs):
    item = await posts(calls)
    await writer_role(calls)
    intent = await calls.ok("post", "/agent/intents", status=201, json={
        "key": "tidy-posts", "title": "Keep titles tidy", "description": update_line(item, {"title": "Tidy"}),
        "role": "writer", "trigger": {"type": "schedule", "everySeconds": 3600}})
    assert intent["status"] == "active" and intent["nextRunAt"]
    await calls.err("post", "/agent/intents", 409, "RECORD_NOT_UNIQUE", json={
        "key": "tidy-posts", "title": "t", "description": "d", "trigger": {"type": "schedule", "everySeconds": 60}})
    freeze = await calls.ok("post", "/agent/kill-switch", status=201, json={"scope": "intent",
                                                                            "target": intent["id"]})
    await run_due_jobs(svc_app, periodic=True)
    assert await calls.ok("get", "/agent/goals") == []
    await calls.ok("post", "/agent/kill-switch/lift", json={"id": freeze["id"]})
    await calls.ok("patch", f"/agent/intents/{intent['id']}", json={"trigger": {"type": "schedule",
                                                                                  "everySeconds": 3600}})
    await run_due_jobs(svc_app, now=later(0.05), periodic=True)  # the next periodic slot
    spawned = await calls.ok("get", "/agent/goals")
    assert len(spawned) == 1 and spawned[0]["intentId"] == intent["id"] and spawned[0]["status"] == "succeeded"
    assert (await calls.ok("get", "/agent/staged"))[0]["goalId"] == spawned[0]["id"]
    paused = await calls.ok("post", f"/agent/intents/{intent['id']}/pause")
    assert paused["status"] == "paused" and paused["nextRunAt"] is None
    resumed = await calls.ok("post", f"/agent/intents/{intent['id']}/resume")
    assert resumed["status"] == "active"
    await calls.ok("delete", f"/agent/intents/{intent['id']}", status=204)
    await calls.err("get", f"/agent/intents/{intent['id']}", 404, "NOT_FOUND")


async def test_intents_export_and_import_by_key(svc_app, calls, site):
    from plugins.agents import api
    from plugins.items import api as items

    await writer_role(calls)
    ctx = items.context(svc_app.kernel, site, _admin(svc_app), "test")
    one = {"key": "flag-old", "title": "Flag old posts", "description": "count posts", "role": "writer",
           "trigger": {"type": "schedule", "everySeconds": 86400}, "budget": {"steps": 3}, "status": "paused"}
    assert await api.import_intents(ctx, [one], source="git:svc/intents.json") == {
        "created": ["flag-old"], "updated": [], "unchanged": []}
    assert await api.export_intents(ctx) == [one]
    assert await api.import_intents(ctx, [one], source="git") == {"created": [], "updated": [],
                                                                  "unchanged": ["flag-old"]}
    changed = {**one, "title": "Flag posts older than a year"}
    assert (await api.import_intents(ctx, [changed], source="git"))["updated"] == ["flag-old"]
    from kernel.base.errors import ApiError

    try:
        await api.import_intents(ctx, [changed, {**one, "trigger": {"type": "cron"}}], source="git")
    except ApiError as exc:
        assert exc.status == 400 and exc.code == "VALIDATION_FAILED" and exc.details[0].path == [1, "trigger", "type"]
    else:
        raise AssertionError("a bad intent was accepted")
    listed = await calls.ok("get", "/agent/intents")
    assert [(i["key"], i["source"]) for i in listed] == [("flag-old", "git")]
    await calls.ok("post", "/agent/roles", status=201, json={"name": "git-sync", "autonomy": "stage"})
    incident = await api.record_incident(ctx, role="git-sync", kind="ci_failed", detail={"pr": 7})
    assert incident["kind"] == "ci_failed" and incident["weight"] == 3
    ledger = await calls.ok("get", "/agent/autonomy")
    assert [i["role"] for i in ledger["incidents"]] == ["git-sync"]
    assert {g["role"]: g["level"] for g in ledger["grants"]}["git-sync"] == "suggest"  # one CI failure demotes
    audit = await calls.ok("get", "/audit", params={"limit": 50})
    assert "agent_demoted" in [a["action"] for a in audit]


def _admin(svc_app):
    from kernel.auth.principal import Principal

    return Principal(kind="user", user_id="instance-admin", is_instance_admin=True)


async def test_an_api_key_is_an_agent_its_role_the_capability_set(svc_app, calls, site, run_due_jobs):
    from kernel.testing import Calls

    item = await posts(calls)
    await writer_role(calls)
    role = await calls.ok("post", "/roles", status=201, json={"name": "agents:freeze"})
    await calls.grant([{"collection": "posts", "action": "read", "fields": ["*"]},
                       {"collection": "posts", "action": "update", "fields": ["*"]}], {"roleId": role["id"]})
    key = await calls.ok("post", "/api-keys", status=201, json={"name": "bot", "roleId": role["id"]})
    svc_app.kernel.access.invalidate(site)
    bot = Calls(svc_app.client, {"Authorization": f"Bearer {key['key']}", "X-Svc-Site": site})
    done = await goal(bot, update_line(item, {"title": "by the bot"}))
    assert done["status"] == "succeeded" and done["createdBy"] == f"key:{key['id']}"
    assert done["steps"][0]["outcome"] == "staged"
    frozen = await bot.ok("post", "/agent/kill-switch", status=201, json={"scope": "role", "target": "writer"})
    assert frozen["createdBy"] == f"key:{key['id']}"
    await bot.ok("post", "/agent/kill-switch/lift", json={"id": frozen["id"]})
    # a queued goal of a deleted key runs nothing
    queued = await goal(bot, update_line(item, {"title": "after"}), execution="async")
    await calls.ok("delete", f"/api-keys/{key['id']}", status=204)
    await run_due_jobs(svc_app, periodic=False)
    gone = await calls.ok("get", f"/agent/goals/{queued['id']}")
    assert gone["status"] == "failed" and gone["error"]["code"] == "PRINCIPAL_GONE"


async def test_agent_actions_are_a_retention_target(svc_app, calls, calls_b, site):
    import datetime as dt

    from sqlalchemy import update

    from plugins.agents.tables import actions

    item = await posts(calls)
    await writer_role(calls)
    await goal(calls, update_line(item, {"title": "x"}))
    await goal(calls, update_line(item, {"title": "y"}))
    b_item = await posts(calls_b)
    await writer_role(calls_b)
    await goal(calls_b, update_line(b_item, {"title": "b"}))
    async with svc_app.kernel.db.begin() as conn:  # age every site's records by 40 days
        await conn.execute(update(actions).values(created_at=dt.datetime.now(dt.UTC) - dt.timedelta(days=40)))
    run = await calls.ok("post", "/retention/run")
    assert run["deleted"]["agentActions"] == 2  # A's only
    version = await calls_b.ok("post", "/agent/constitution", status=201, json={"rules": []})
    assert (await calls_b.ok("post", f"/agent/constitution/{version['id']}/dry-run"))["examined"] == 0  # > 7 days
    async with svc_app.kernel.db.connect() as conn:
        from sqlalchemy import func, select

        left = await conn.scalar(select(func.count()).select_from(actions))
    assert left == 1
