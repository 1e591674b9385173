"""Pull requests, CI runs and logs, validation, against local GitHub and GitLab REST servers that
check the token they receive."""

import json

from git_helpers import (
    GL_TOKEN,
    SHA,
    TOKEN,
    connect,
    git_app,
    github_pull,
    guarded,
    json_answer,
    record_status,
    serve_github_file,
    serve_github_pulls,
)

GL_PROJECT = "/gl/api/v4/projects/group%2Fsite"


async def test_github_refresh_lists_and_caches(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    path = serve_github_pulls(http_receiver, [github_pull(1), github_pull(2, state="closed", merged=True),
                                              {"number": "bad"}, "junk"])
    assert await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/refresh") == {"fetched": 2}
    sent = http_receiver.received(path)[0]
    assert sent.headers["Authorization"] == f"Bearer {TOKEN}"
    assert sent.headers["Accept"] == "application/vnd.github+json"
    listed = await calls.ok("get", f"/integrations/git/{made['id']}/pull-requests", full=True)
    assert [(p["number"], p["state"]) for p in listed["data"]] == [(2, "merged"), (1, "open")]
    assert listed["meta"]["total"] == 2 and listed["data"][1]["headSha"] == SHA
    # the list reads the cache: no new provider request
    assert http_receiver.hits[path] == 1
    page = await calls.ok("get", f"/integrations/git/{made['id']}/pull-requests", params={"limit": 1, "offset": 1})
    assert [p["number"] for p in page] == [1]


async def test_provider_refusals_are_502(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls, token="not-the-token")
    serve_github_pulls(http_receiver, [])
    error = await calls.err("post", f"/integrations/git/{made['id']}/pull-requests/refresh", 502, "GIT_PROVIDER_ERROR")
    assert "not-the-token" not in error["message"]
    http_receiver.respond("/repos/acme/site/pulls?state=all&sort=updated&direction=desc&per_page=50",
                          lambda r: json_answer({"not": "a list"}))
    await connect(calls, repo="acme/other")
    await calls.err("post", f"/integrations/git/{made['id']}/pull-requests/refresh", 502, "GIT_PROVIDER_ERROR")


async def test_github_ci_runs_and_capped_cached_logs(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    serve_github_pulls(http_receiver, [github_pull(5)])
    await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/refresh")
    http_receiver.respond(f"/repos/acme/site/commits/{SHA}/check-runs?per_page=100", guarded(TOKEN, {
        "total_count": 2, "check_runs": [
            {"id": 101, "name": "build", "status": "completed", "conclusion": "failure", "head_sha": SHA,
             "html_url": "https://ci/101"},
            {"id": 102, "name": "lint", "status": "in_progress", "conclusion": None, "head_sha": SHA}]}))
    runs = await calls.ok("get", f"/integrations/git/{made['id']}/pull-requests/5/ci")
    assert [(r["runId"], r["status"], r["conclusion"]) for r in runs] == [
        ("101", "completed", "failure"), ("102", "in_progress", None)]
    # GitHub redirects a job log to storage: followed once, without the token
    http_receiver.respond("/repos/acme/site/actions/jobs/101/logs", lambda r: (
        (302, b"", {"Location": "/storage/log-101?sig=abc"}) if r.headers.get("Authorization") == f"Bearer {TOKEN}"
        else json_answer({}, 401)))
    http_receiver.respond("/storage/log-101?sig=abc", lambda r: (
        (403, b"token leaked", {}) if "Authorization" in r.headers
        else (200, b"x" * 5000, {"Content-Type": "text/plain"})))
    log = await calls.ok("get", f"/integrations/git/{made['id']}/ci-runs/101/logs")
    assert log["truncated"] is True and log["log"] == "x" * 2048 and log["cached"] is False
    again = await calls.ok("get", f"/integrations/git/{made['id']}/ci-runs/101/logs")
    assert again == {**log, "cached": True}
    assert http_receiver.hits["/storage/log-101?sig=abc"] == 1
    await calls.err("get", f"/integrations/git/{made['id']}/ci-runs/999/logs", 404, "RECORD_NOT_FOUND")
    await calls.err("get", f"/integrations/git/{made['id']}/pull-requests/77/ci", 404, "RECORD_NOT_FOUND")


async def test_gitlab_refresh_jobs_and_trace(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls, provider="gitlab", repo="group/site", token=GL_TOKEN)
    http_receiver.respond(f"{GL_PROJECT}/merge_requests?state=all&order_by=updated_at&sort=desc&per_page=50",
                          guarded(GL_TOKEN, [{"iid": 3, "title": "MR 3", "state": "opened", "sha": SHA,
                                              "source_branch": "f", "target_branch": "main",
                                              "author": {"username": "dev"}, "web_url": "https://gl/3"}]))
    assert await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/refresh") == {"fetched": 1}
    http_receiver.respond(f"{GL_PROJECT}/merge_requests/3/pipelines", guarded(GL_TOKEN, [{"id": 70, "sha": SHA}]))
    http_receiver.respond(f"{GL_PROJECT}/pipelines/70/jobs?per_page=100", guarded(GL_TOKEN, [
        {"id": 700, "name": "test", "status": "failed", "commit": {"id": SHA}, "web_url": "https://gl/j/700"}]))
    runs = await calls.ok("get", f"/integrations/git/{made['id']}/pull-requests/3/ci")
    assert [(r["runId"], r["conclusion"]) for r in runs] == [("700", "failure")]
    http_receiver.respond(f"{GL_PROJECT}/jobs/700/trace", lambda r: (
        (200, b"line 1\nline 2\n", {"Content-Type": "text/plain"}) if r.headers.get("Authorization") ==
        f"Bearer {GL_TOKEN}" else json_answer({}, 401)))
    log = await calls.ok("get", f"/integrations/git/{made['id']}/ci-runs/700/logs")
    assert log == {"runId": "700", "log": "line 1\nline 2\n", "truncated": False, "cached": False}


async def test_validate_dry_runs_the_manifest_and_posts_a_status(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    serve_github_pulls(http_receiver, [github_pull(8)])
    await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/refresh")
    manifest = await calls.ok("get", "/config/export", params={"scope": "schema"})
    manifest["collections"].append({"name": "articles"})
    serve_github_file(http_receiver, json.dumps(manifest).encode())
    statuses = record_status(http_receiver, f"/repos/acme/site/statuses/{SHA}", TOKEN)
    result = await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/8/validate")
    assert result["valid"] is True and result["errors"] == [] and result["sha"] == SHA
    assert result["diff"]["collections"]["create"] == 1
    assert statuses == [{"state": "success", "context": "svc/content-validation",
                         "description": "The content configuration is valid"}]
    # the dry run wrote nothing
    assert "articles" not in [c["collection"] for c in await calls.ok("get", "/collections")]
    serve_github_file(http_receiver, json.dumps({"version": "svc.config@v9"}).encode())
    failed = await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/8/validate")
    assert failed["valid"] is False and failed["errors"]
    assert statuses[-1]["state"] == "failure" and statuses[-1]["context"] == "svc/content-validation"
    for content in (None, b"{nope", b"[]", json.dumps({"version": "svc.config@v1", "bogus": 1}).encode()):
        serve_github_file(http_receiver, content)
        answer = await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/8/validate")
        assert answer["valid"] is False, content
        assert statuses[-1]["state"] == "failure"


async def test_gitlab_validate_posts_a_named_status(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls, provider="gitlab", repo="group/site", token=GL_TOKEN)
    http_receiver.respond(f"{GL_PROJECT}/merge_requests?state=all&order_by=updated_at&sort=desc&per_page=50",
                          guarded(GL_TOKEN, [{"iid": 4, "title": "MR", "state": "opened", "sha": SHA,
                                              "source_branch": "f", "target_branch": "main"}]))
    await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/refresh")
    manifest = await calls.ok("get", "/config/export", params={"scope": "schema"})
    http_receiver.respond(f"{GL_PROJECT}/repository/files/svc%2Fmanifest.json/raw?ref={SHA}",
                          lambda r: (200, json.dumps(manifest).encode(), {"Content-Type": "text/plain"})
                          if r.headers.get("Authorization") == f"Bearer {GL_TOKEN}" else json_answer({}, 401))
    statuses = record_status(http_receiver, f"{GL_PROJECT}/statuses/{SHA}", GL_TOKEN)
    result = await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/4/validate")
    assert result["valid"] is True
    assert statuses == [{"state": "success", "name": "svc/content-validation",
                         "description": "The content configuration is valid"}]


async def test_bad_numbers_and_run_ids(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    for number in ("0", "-1", "abc", "1.5", "99999999999", "١"):
        await calls.err("get", f"/integrations/git/{made['id']}/pull-requests/{number}/ci", 400, "VALIDATION_FAILED")
        await calls.err("post", f"/integrations/git/{made['id']}/pull-requests/{number}/validate", 400,
                        "VALIDATION_FAILED")
    await calls.err("get", f"/integrations/git/{made['id']}/ci-runs/{'9' * 41}/logs", 404, "RECORD_NOT_FOUND")
    await calls.err("get", f"/integrations/git/{made['id']}/pull-requests", 400, params={"limit": "x"})


async def test_provider_text_with_nul_is_stored_without_it(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    serve_github_pulls(http_receiver, [{**github_pull(1), "title": "evil\x00title"}])
    await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/refresh")
    pulls = await calls.ok("get", f"/integrations/git/{made['id']}/pull-requests")
    assert pulls[0]["title"] == "evil\ufffdtitle"
    http_receiver.respond(f"/repos/acme/site/commits/{SHA}/check-runs?per_page=100", guarded(TOKEN, {
        "check_runs": [{"id": 7, "name": "n\x00", "status": "completed", "conclusion": "success"}]}))
    await calls.ok("get", f"/integrations/git/{made['id']}/pull-requests/1/ci")
    http_receiver.respond("/repos/acme/site/actions/jobs/7/logs", lambda r: (200, b"a\x00b", {"Content-Type": "text/plain"}))
    assert (await calls.ok("get", f"/integrations/git/{made['id']}/ci-runs/7/logs"))["log"] == "a\ufffdb"
