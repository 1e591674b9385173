"""GitOps: svc/intents.json into agent intents with a drift scan; a CI failure's incident."""

import json

from git_helpers import TOKEN, connect, git_app, github_hook, github_pull, guarded

from kernel.testing import disabled_with_dependents, run_due_jobs

FILE = "/repos/acme/site/contents/svc/intents.json?ref={ref}"


def intent(key, title="Keep pages fresh", every=3600):
    return {"key": key, "title": title, "description": f"Intent {key}", "role": None,
            "trigger": {"type": "schedule", "everySeconds": every}, "budget": None, "status": "active"}


def serve_intents(receiver, intents, ref="HEAD"):
    import base64

    content = base64.b64encode(json.dumps(intents).encode()).decode()
    receiver.respond(FILE.format(ref=ref), guarded(TOKEN, {"encoding": "base64", "content": content}))


async def test_sync_imports_reports_drift_conflicts_and_removals(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    sync = f"/integrations/git/{made['id']}/gitops/sync"
    serve_intents(http_receiver, [intent("one"), intent("two")])
    first = await calls.ok("post", sync)
    assert first["created"] == ["one", "two"] and first["driftInSvc"] == [] and first["conflicts"] == []
    assert http_receiver.received(FILE.format(ref="HEAD"))[0].headers["Authorization"] == f"Bearer {TOKEN}"
    listed = {i["key"]: i for i in await calls.ok("get", "/agent/intents")}
    assert set(listed) == {"one", "two"}
    # svc edits one; git edits two and adds three
    await calls.ok("patch", f"/agent/intents/{listed['one']['id']}", json={"title": "Edited in svc"})
    serve_intents(http_receiver, [intent("one"), intent("two", title="Edited in git"), intent("three")])
    second = await calls.ok("post", sync)
    assert second["changedInGit"] == ["three", "two"] and second["created"] == ["three"]
    assert second["updated"] == ["two"] and second["driftInSvc"] == ["one"] and second["conflicts"] == []
    listed = {i["key"]: i for i in await calls.ok("get", "/agent/intents")}
    assert listed["one"]["title"] == "Edited in svc" and listed["two"]["title"] == "Edited in git"
    # both sides change two differently: a conflict, not applied; git drops three
    await calls.ok("patch", f"/agent/intents/{listed['two']['id']}", json={"title": "svc again"})
    serve_intents(http_receiver, [intent("one"), intent("two", title="git again")])
    third = await calls.ok("post", sync)
    assert third["conflicts"] == ["two"] and third["removedInGit"] == ["three"] and third["changedInGit"] == []
    listed = {i["key"]: i for i in await calls.ok("get", "/agent/intents")}
    assert listed["two"]["title"] == "svc again" and "three" in listed


async def test_sync_refusals(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    sync = f"/integrations/git/{made['id']}/gitops/sync"
    for body in ([], {"ref": 5}, {"ref": ""}, {"ref": "a b"}, {"ref": "../x"}, {"other": 1}):
        await calls.err("post", sync, 400, "VALIDATION_FAILED", json=body)
    await calls.err("post", sync, 422, "VALIDATION_FAILED", json={"ref": "missing"})
    http_receiver.respond(FILE.format(ref="notjson"), guarded(TOKEN, {"encoding": "base64", "content": "e25v"}))
    await calls.err("post", sync, 422, "VALIDATION_FAILED", json={"ref": "notjson"})
    serve_intents(http_receiver, [intent("a"), intent("a", title="again")], ref="twice")
    await calls.err("post", sync, 422, "VALIDATION_FAILED", json={"ref": "twice"})
    serve_intents(http_receiver, [{"key": "BAD KEY", "title": "x", "description": "y",
                                   "trigger": {"type": "schedule", "everySeconds": 3600}}], ref="badintent")
    await calls.err("post", sync, 400, "VALIDATION_FAILED", json={"ref": "badintent"})
    assert await calls.ok("get", "/agent/intents") == []


async def test_ci_failure_records_a_git_sync_incident_once(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request",
                      {"action": "opened", "pull_request": github_pull(2)})
    check = {"id": 5, "name": "build", "status": "completed", "conclusion": "timed_out", "head_sha": "a" * 40}
    for _ in range(2):  # the replay records nothing more
        resp = await github_hook(app.client, site, made["id"], made["webhookSecret"], "check_run",
                                 {"action": "completed", "check_run": check}, delivery="ci-1")
        assert resp.status_code == 200
    await run_due_jobs(app)
    ledger = await calls.ok("get", "/agent/autonomy")
    found = [i for i in ledger["incidents"] if i["role"] == "git-sync"]
    assert len(found) == 1 and found[0]["kind"] == "ci_failed"


async def test_without_agents_git_runs_sync_is_404_and_a_ci_failure_is_only_audited(make_app, http_receiver):
    # git reaches agents through its own hooks (gitops_intents, git_ci_failed), not through requires
    app, calls, site = await git_app(make_app, http_receiver, SVC_PLUGINS_DISABLED=disabled_with_dependents("agents"))
    assert app.kernel.enabled("git") and not app.kernel.enabled("agents")
    made = await connect(calls)
    serve_intents(http_receiver, [intent("one")])
    await calls.err("post", f"/integrations/git/{made['id']}/gitops/sync", 404, "NOT_FOUND")
    assert http_receiver.received(FILE.format(ref="HEAD")) == []  # refused before reaching the provider
    check = {"id": 6, "name": "build", "status": "completed", "conclusion": "failure", "head_sha": "b" * 40}
    resp = await github_hook(app.client, site, made["id"], made["webhookSecret"], "check_run",
                             {"action": "completed", "check_run": check}, delivery="ci-2")
    assert resp.status_code == 200
    runs = [r for r in await run_due_jobs(app) if r.name == "git.incident"]
    assert len(runs) == 1 and runs[0].ok
