"""Every body of the agent API refuses bad input with 400 in the error envelope (never 500),
naming the path; unknown ids are 404. One shared app and site for the module."""

from __future__ import annotations

import pytest
import pytest_asyncio

from .conftest import posts, update_line


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def seeded(shared_site):
    calls = shared_site.calls
    item = await posts(calls)
    await calls.ok("post", "/agent/roles", status=201, json={"name": "writer", "collections": ["posts"],
                                                              "autonomy": "stage"})
    pending = await calls.ok("post", "/agent/goals", status=201, json={"title": "p", "execution": "none"})
    staged = await calls.ok("post", "/agent/goals", status=201, json={
        "title": "s", "role": "writer", "execution": "sync", "description": update_line(item, {"title": "x"})})
    intent = await calls.ok("post", "/agent/intents", status=201, json={
        "key": "k", "title": "t", "description": "count posts", "trigger": {"type": "schedule",
                                                                             "everySeconds": 600}})
    version = await calls.ok("post", "/agent/constitution", status=201, json={"rules": []})
    promotion = await calls.ok("post", "/agent/autonomy/promotions", status=201, json={"role": "writer",
                                                                                       "level": "act"})
    return {"goal": pending["id"], "staging": staged["steps"][0]["stagingId"], "intent": intent["id"],
            "version": version["id"], "promotion": promotion["id"]}


GOALS = [([], ["body"]), ({}, ["title"]), ({"title": ""}, ["title"]), ({"title": "x" * 201}, ["title"]),
         ({"title": "t", "description": 5}, ["description"]), ({"title": "t", "execution": "later"}, ["execution"]),
         ({"title": "t", "budget": []}, ["budget"]), ({"title": "t", "budget": {"steps": -1}}, ["budget", "steps"]),
         ({"title": "t", "budget": {"steps": 10**9}}, ["budget", "steps"]),
         ({"title": "t", "budget": {"steps": True}}, ["budget", "steps"]),
         ({"title": "t", "budget": {"money": 1}}, ["budget", "money"]), ({"title": "t", "role": "ghost"}, ["role"]),
         ({"title": "t", "role": 7}, ["role"]), ({"title": "t", "owner": "me"}, ["owner"])]


@pytest.mark.parametrize(("body", "path"), GOALS)
async def test_goal_bodies(shared_site, seeded, body, path):
    resp = await shared_site.calls.call("post", "/agent/goals", json=body)
    assert resp.status_code == 400, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "VALIDATION_FAILED"
    assert error.get("path", []) == path


ROUTES = [
    ("post", "/agent/goals/{goal}/decompose", [[], {}, {"goals": []}, {"goals": "x"}, {"goals": [{}]},
                                                {"goals": [{"title": "t", "budget": {"steps": 10**6}}]},
                                                {"goals": [{"title": "t"}] * 21}, {"goals": [5]},
                                                {"goals": [{"title": "t"}], "extra": 1}]),
    ("post", "/agent/roles", [[], {}, {"name": "Bad Name"}, {"name": "r", "autonomy": "god"},
                              {"name": "r", "skills": "all"}, {"name": "r", "collections": [1]},
                              {"name": "r", "budget": {"writes": -5}}, {"name": "r", "description": 3},
                              {"name": "r", "x": 1}]),
    ("patch", "/agent/roles/writer", [[], {"name": "other"}, {"autonomy": "none"}, {"skills": [None]},
                                      {"budget": "lots"}]),
    ("post", "/agent/autonomy/promotions", [[], {}, {"role": "ghost", "level": "act"},
                                            {"role": "writer", "level": "king"}, {"role": "writer", "level": "act",
                                                                                  "reason": 5},
                                            {"role": "writer", "level": "stage"}]),
    ("post", "/agent/autonomy/promotions/{promotion}/decide", [[], {}, {"decision": "maybe"},
                                                                {"decision": "approved", "x": 1}]),
    ("post", "/agent/staged/{staging}/veto", [[], {"reason": 5}, {"why": "x"}]),
    ("post", "/agent/constitution", [[], {}, {"rules": {}}, {"rules": [{}] * 101}, {"rules": [], "note": 5}]),
    ("post", "/agent/constitution/compile", [[], {}, {"id": 5}, {"rules": 5}, {"id": "x", "rules": []}]),
    ("post", "/agent/constitution/{version}/compile", [[], {"id": "x"}]),
    ("post", "/agent/kill-switch", [[], {}, {"scope": "planet"}, {"scope": "site", "target": "x"},
                                    {"scope": "role"}, {"scope": "run", "target": ""},
                                    {"scope": "site", "reason": 5}]),
    ("post", "/agent/kill-switch/lift", [[], {}, {"id": 5}]),
    ("post", "/agent/intents", [[], {}, {"key": "Bad Key", "title": "t", "description": "d",
                                         "trigger": {"type": "schedule", "everySeconds": 60}},
                                {"key": "k2", "title": "t", "description": "d"},
                                {"key": "k2", "title": "t", "description": "d", "trigger": {"type": "cron"}},
                                {"key": "k2", "title": "t", "description": "d",
                                 "trigger": {"type": "schedule", "everySeconds": 5}},
                                {"key": "k2", "title": "t", "description": "d",
                                 "trigger": {"type": "event", "collection": "posts", "events": ["read"]}},
                                {"key": "k2", "title": "t", "description": "d", "status": "sleepy",
                                 "trigger": {"type": "schedule", "everySeconds": 60}},
                                {"key": "k2", "title": "t", "description": "d", "role": "ghost",
                                 "trigger": {"type": "schedule", "everySeconds": 60}}]),
    ("patch", "/agent/intents/{intent}", [[], {"title": ""}, {"trigger": 5}, {"status": "on"}, {"extra": 1}]),
    ("post", "/agent/approvals/{goal}/agent-decide", [[], {"decision": "yes"}, {"decision": "approved",
                                                                                 "goalId": 5}]),
]


@pytest.mark.parametrize(("method", "template", "bodies"), ROUTES, ids=[f"{m} {t}" for m, t, _ in ROUTES])
async def test_bad_bodies_are_400(shared_site, seeded, method, template, bodies):
    path = template.format(**seeded)
    for body in bodies:
        resp = await shared_site.calls.call(method, path, json=body)
        assert resp.status_code == 400, (body, resp.text)
        assert resp.json()["errors"][0]["code"] == "VALIDATION_FAILED", (body, resp.text)


async def test_not_json_and_unknown_ids(shared_site, seeded):
    calls = shared_site.calls
    resp = await calls.call("post", "/agent/goals", content=b"{nope", headers={"Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"
    for method, path in [("get", "/agent/goals/nope"), ("post", "/agent/goals/nope/settle"),
                         ("get", "/agent/roles/ghost"), ("get", "/agent/roles/Bad%20Name"),
                         ("delete", "/agent/roles/ghost"), ("get", "/agent/staged/nope"),
                         ("post", "/agent/constitution/nope/dry-run"), ("post", "/agent/constitution/nope/activate"),
                         ("get", "/agent/intents/nope"), ("post", "/agent/intents/nope/pause"),
                         ("get", "/agent/goals/" + "x" * 300)]:
        resp = await calls.call(method, path)
        assert resp.status_code == 404, (method, path, resp.text)
    await calls.err("post", "/agent/kill-switch/lift", 404, "NOT_FOUND", json={"id": "nope"})
    await calls.err("post", f"/agent/autonomy/promotions/{seeded['promotion']}x/decide", 404, "NOT_FOUND",
                    json={"decision": "approved"})
    await calls.err("post", "/agent/constitution/compile", 404, "NOT_FOUND", json={"id": "nope"})
    await calls.err("post", "/agent/approvals/nope/agent-decide", 404, "NOT_FOUND", json={"decision": "approved"})


async def test_state_conflicts(shared_site, seeded):
    calls = shared_site.calls
    await calls.err("post", f"/agent/goals/{seeded['goal']}/settle", 409, "GOAL_NOT_SETTLEABLE")
    staged_goal = (await calls.ok("get", "/agent/goals", params={"status": "succeeded"}))[0]
    await calls.err("post", f"/agent/goals/{staged_goal['id']}/decompose", 409, "GOAL_NOT_DECOMPOSABLE",
                    json={"goals": [{"title": "x"}]})
    await calls.err("post", "/agent/roles", 409, "RECORD_NOT_UNIQUE", json={"name": "writer"})


async def test_members_only(shared_site, seeded):
    anon = shared_site.app.client
    resp = await anon.get("/api/v1/agent/goals", headers={"X-Svc-Site": shared_site.site})
    assert resp.status_code == 401
    subscriber = await shared_site.member()  # the frontend realm
    await subscriber.err("get", "/agent/goals", 403, "PERMISSION_DENIED")
    await subscriber.err("post", "/agent/kill-switch", 403, "PERMISSION_DENIED", json={"scope": "site"})
