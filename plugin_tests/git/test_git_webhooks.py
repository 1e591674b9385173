"""The public webhook receiver: GitHub's HMAC over the raw body, GitLab's token, idempotent by
delivery id, the same 401 for an unknown integration, A's webhook on B's path, events handled."""

import json
import uuid

import pytest
import pytest_asyncio
from git_helpers import (
    GL_TOKEN,
    audits,
    connect,
    env_for,
    git_app,
    github_hook,
    github_pull,
    github_signature,
    gitlab_hook,
)
from sqlalchemy import func, select

from kernel.testing import Calls, HttpReceiver
from kernel.testing import shared as testing_shared
from plugins.git.tables import deliveries

# Every test posts webhooks to an integration of a site of its own and reads only that site's
# rows: they share the module's app, each in a new site of it (kernel/testing/shared.py). The
# app's provider URLs name a receiver of the module's, which no test answers from (a webhook asks
# the provider nothing); the rate-limit test, with a limit of its own, starts its own app.
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


@pytest.fixture(scope="module")
def providers():
    """The providers' URLs of the module's app: a receiver with no responder, which nothing asks."""
    receiver = HttpReceiver()
    try:
        yield receiver
    finally:
        receiver.stop()


shared_site = testing_shared.shared_site_started_with(
    lambda request: {"env": env_for(request.getfixturevalue("providers"))})


@pytest_asyncio.fixture(loop_scope="module")
async def hooked(svc_app, calls, site):
    return svc_app, calls, site, await connect(calls)


async def _deliveries_kept(app, site: str) -> int:
    """The webhook deliveries recorded in ``site`` (the module's other tests record theirs too)."""
    async with app.kernel.db.engine.connect() as conn:
        kept = select(func.count()).select_from(deliveries).where(deliveries.c.site_id == site)
        return (await conn.execute(kept)).scalar()


async def test_ping_and_bad_signatures(hooked):
    app, _, site, made = hooked
    secret = made["webhookSecret"]
    ok = await github_hook(app.client, site, made["id"], secret, "ping", {"zen": "x"})
    assert ok.status_code == 200 and ok.json()["data"]["handled"] == "ping"
    raw = json.dumps({"zen": "x"}).encode()
    refused = []
    for signature in ["", "sha256=", github_signature("wrong", raw), github_signature(secret, raw + b" "),
                      github_signature(secret, raw).replace("sha256=", "sha1="), "sha256=" + "0" * 64,
                      github_signature(secret, raw).upper()]:
        resp = await github_hook(app.client, site, made["id"], secret, "ping", {"zen": "x"}, signature=signature)
        assert resp.status_code == 401, signature
        refused.append(resp.json()["errors"][0])
    assert all(e == refused[0] for e in refused) and refused[0]["code"] == "UNAUTHENTICATED"


async def test_signature_is_over_the_raw_body(hooked):
    app, _, site, made = hooked
    raw = b'{"zen":  "spaced",\n "x": 1}'
    headers = {"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d-raw",
               "X-Hub-Signature-256": github_signature(made["webhookSecret"], raw)}
    url = f"/api/v1/integrations/git/webhook/github/{site}/{made['id']}"
    assert (await app.client.post(url, content=raw, headers=headers)).status_code == 200
    reencoded = json.dumps(json.loads(raw)).encode()
    assert (await app.client.post(url, content=reencoded, headers={**headers, "X-GitHub-Delivery": "d2"})
            ).status_code == 401


async def test_unknown_integrations_answer_like_bad_signatures(hooked):
    app, calls, site, made = hooked
    secret = made["webhookSecret"]
    bad_sig = (await github_hook(app.client, site, made["id"], "nope", "ping", {})).json()
    for provider, site_id, integration in [("github", site, str(uuid.uuid4())), ("github", "no-such-site", made["id"]),
                                           ("gitlab", site, made["id"]), ("github", site, "x" * 300)]:
        resp = await github_hook(app.client, site_id, integration, secret, "ping", {}, provider=provider)
        assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == bad_sig["errors"][0]["code"]
        assert resp.json()["errors"][0]["message"] == bad_sig["errors"][0]["message"]
    resp = await github_hook(app.client, site, made["id"], secret, "ping", {}, provider="bitbucket")
    assert resp.status_code == 401


async def test_a_webhook_of_site_a_on_site_b_path_is_refused(hooked):
    app, calls, site, made = hooked
    admin = {"Authorization": calls.headers["Authorization"]}
    site_b = await app.create_site(admin, prefix="b")
    b_made = await connect(Calls(app.client, {**admin, "X-Svc-Site": site_b}))
    # A's id under B's site, and B's id signed with A's secret
    assert (await github_hook(app.client, site_b, made["id"], made["webhookSecret"], "ping", {})).status_code == 401
    assert (await github_hook(app.client, site_b, b_made["id"], made["webhookSecret"], "ping", {})).status_code == 401
    assert (await github_hook(app.client, site, b_made["id"], b_made["webhookSecret"], "ping", {})).status_code == 401


async def test_replay_of_a_delivery_does_nothing_twice(hooked):
    app, calls, site, made = hooked
    payload = {"action": "opened", "pull_request": github_pull(7)}
    first = await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request", payload,
                              delivery="same-delivery")
    assert first.json()["data"] == {"received": True, "duplicate": False, "event": "pull_request",
                                    "handled": "pull_request"}
    payload["pull_request"]["title"] = "changed by the replay"
    again = await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request", payload,
                              delivery="same-delivery")
    assert again.status_code == 200 and again.json()["data"]["duplicate"] is True
    pulls = await calls.ok("get", f"/integrations/git/{made['id']}/pull-requests")
    assert [(p["number"], p["title"]) for p in pulls] == [(7, "PR 7")]
    assert await _deliveries_kept(app, site) == 1


async def test_headers_and_body_checked_after_the_signature(hooked):
    app, _, site, made = hooked
    url = f"/api/v1/integrations/git/webhook/github/{site}/{made['id']}"
    raw = b"{not json"
    signed = {"X-Hub-Signature-256": github_signature(made["webhookSecret"], raw), "X-GitHub-Event": "ping",
              "X-GitHub-Delivery": "d1"}
    resp = await app.client.post(url, content=raw, headers=signed)
    assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"
    raw = b"[1, 2]"
    signed["X-Hub-Signature-256"] = github_signature(made["webhookSecret"], raw)
    assert (await app.client.post(url, content=raw, headers=signed)).status_code == 400
    raw = b"{}"
    for missing in ("X-GitHub-Delivery", "X-GitHub-Event"):
        headers = {"X-Hub-Signature-256": github_signature(made["webhookSecret"], raw), "X-GitHub-Event": "ping",
                   "X-GitHub-Delivery": "d9"}
        headers.pop(missing)
        resp = await app.client.post(url, content=raw, headers=headers)
        assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["headers", missing.lower()]
    headers = {"X-Hub-Signature-256": github_signature(made["webhookSecret"], raw), "X-GitHub-Event": "ping",
               "X-GitHub-Delivery": "x" * 101}
    assert (await app.client.post(url, content=raw, headers=headers)).status_code == 400
    bad_pr = {"action": "opened", "pull_request": {"number": "7"}}
    resp = await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request", bad_pr)
    assert resp.status_code == 400


async def test_github_check_run_failure_audits_git_ci_failed(hooked):
    app, calls, site, made = hooked
    await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request",
                      {"action": "opened", "pull_request": github_pull(4, sha="d" * 40)})
    check = {"id": 991, "name": "build", "status": "completed", "conclusion": "failure", "head_sha": "d" * 40,
             "html_url": "https://ci.example/991", "pull_requests": []}
    resp = await github_hook(app.client, site, made["id"], made["webhookSecret"], "check_run",
                             {"action": "completed", "check_run": check})
    assert resp.json()["data"]["handled"] == "ci_failed"
    entries = await audits(app, site, "git_ci_failed")
    assert len(entries) == 1
    assert entries[0]["details"]["number"] == 4 and entries[0]["details"]["runId"] == "991"
    passed = {**check, "id": 992, "conclusion": "success"}
    resp = await github_hook(app.client, site, made["id"], made["webhookSecret"], "check_run",
                             {"action": "completed", "check_run": passed})
    assert resp.json()["data"]["handled"] == "check_run" and len(await audits(app, site, "git_ci_failed")) == 1


async def test_paused_integration_records_but_ignores(hooked):
    app, calls, site, made = hooked
    await calls.ok("patch", f"/integrations/git/{made['id']}", json={"status": "paused"})
    resp = await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request",
                             {"action": "opened", "pull_request": github_pull(9)})
    assert resp.json()["data"]["handled"] == "ignored"
    assert await calls.ok("get", f"/integrations/git/{made['id']}/pull-requests") == []


async def test_gitlab_token_header_merge_request_and_failed_job(svc_app, calls, site):
    app = svc_app
    made = await connect(calls, provider="gitlab", repo="group/sub/site", token=GL_TOKEN)
    secret = made["webhookSecret"]
    mr = {"object_kind": "merge_request", "user": {"username": "dev"},
          "object_attributes": {"iid": 12, "title": "MR", "state": "opened", "last_commit": {"id": "e" * 40},
                                "source_branch": "f", "target_branch": "main", "url": "https://gl/mr/12"}}
    for token in ("", "wrong", secret + "x", secret[:-1]):
        resp = await gitlab_hook(app.client, site, made["id"], token, "Merge Request Hook", mr)
        assert resp.status_code == 401, token
    ok = await gitlab_hook(app.client, site, made["id"], secret, "Merge Request Hook", mr, delivery="u-1")
    assert ok.status_code == 200 and ok.json()["data"]["handled"] == "pull_request"
    again = await gitlab_hook(app.client, site, made["id"], secret, "Merge Request Hook", mr, delivery="u-1")
    assert again.json()["data"]["duplicate"] is True
    pulls = await calls.ok("get", f"/integrations/git/{made['id']}/pull-requests")
    assert pulls[0]["number"] == 12 and pulls[0]["headSha"] == "e" * 40 and pulls[0]["author"] == "dev"
    job = {"object_kind": "build", "build_id": 55, "build_name": "lint", "build_status": "failed", "sha": "e" * 40}
    resp = await gitlab_hook(app.client, site, made["id"], secret, "Job Hook", job)
    assert resp.json()["data"]["handled"] == "ci_failed"
    assert [e["details"]["number"] for e in await audits(app, site, "git_ci_failed")] == [12]
    # a GitHub-style signature is no GitLab credential
    resp = await github_hook(app.client, site, made["id"], secret, "ping", {}, provider="gitlab")
    assert resp.status_code == 401


async def test_public_routes_are_rate_limited_per_ip(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver, SVC_RATE_LIMIT_GIT_PUBLIC="2")
    made = await connect(calls)
    statuses = [(await github_hook(app.client, site, made["id"], made["webhookSecret"], "ping", {})).status_code
                for _ in range(3)]
    assert statuses == [200, 200, 429]
    resp = await app.client.get("/api/v1/integrations/git/oauth/github/callback", params={"code": "c"})
    assert resp.status_code == 429 and resp.json()["errors"][0]["code"] == "RATE_LIMITED"


async def test_a_nul_in_a_signed_body_is_a_400_and_nothing_is_kept(hooked):
    """A NUL (\\u0000) in a webhook's JSON (PostgreSQL stores it in neither text nor JSONB) is
    400 VALIDATION_FAILED at its path, like read_json's answer on REST: never a 500, nothing kept."""
    app, calls, site, made = hooked
    pull = github_pull(5)
    pull["title"] = "evil\u0000title"
    resp = await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request",
                             {"action": "opened", "pull_request": pull}, delivery="nul-delivery")
    assert resp.status_code == 400, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "VALIDATION_FAILED" and error["path"] == ["body", "pull_request", "title"]
    key = await github_hook(app.client, site, made["id"], made["webhookSecret"], "ping", {"z\u0000en": "x"})
    assert key.status_code == 400 and key.json()["errors"][0]["path"] == ["body", "z\u0000en"]
    assert await calls.ok("get", f"/integrations/git/{made['id']}/pull-requests") == []
    assert await _deliveries_kept(app, site) == 0
    pull["title"] = "fine"  # the same delivery, clean, is taken: the refusal recorded nothing
    resp = await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request",
                             {"action": "opened", "pull_request": pull}, delivery="nul-delivery")
    assert resp.status_code == 200 and resp.json()["data"]["duplicate"] is False
