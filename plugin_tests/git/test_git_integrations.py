"""Integrations: create (token sealed, never returned; webhook secret answered once), list, get,
patch, rotate-secret, delete (forgets everything), 409 duplicate, cross-tenant, who may call."""

from git_helpers import TOKEN, connect, git_app, github_hook, serve_github_pulls
from sqlalchemy import select

from kernel.testing import Calls
from plugins.git.tables import integrations, pull_requests


async def test_create_seals_the_token_and_answers_the_secret_once(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    assert made["provider"] == "github" and made["repoFullName"] == "acme/site" and made["status"] == "active"
    assert made["hasToken"] is True and made["hasSecret"] is True and made["syncConfig"] == {"preview": False}
    assert "token" not in made and TOKEN not in str(made)
    secret = made["webhookSecret"]
    assert len(secret) >= 32
    assert made["webhookPath"] == f"/api/v1/integrations/git/webhook/github/{site}/{made['id']}"
    got = await calls.ok("get", f"/integrations/git/{made['id']}")
    listed = await calls.ok("get", "/integrations/git")
    for answer in (got, listed[0]):
        assert "webhookSecret" not in answer and TOKEN not in str(answer) and secret not in str(answer)
    async with app.kernel.db.engine.connect() as conn:
        row = (await conn.execute(select(integrations))).mappings().one()
    assert TOKEN not in row["token"] and secret not in row["webhook_secret"]
    assert app.kernel.secrets.open(site, row["token"], purpose="git.token") == TOKEN
    # the secret answered once is the one that verifies webhooks
    resp = await github_hook(app.client, site, made["id"], secret, "ping", {"zen": "hi"})
    assert resp.status_code == 200, resp.text


async def test_duplicate_repo_is_409_per_provider(make_app, http_receiver):
    _, calls, _ = await git_app(make_app, http_receiver)
    await connect(calls)
    await calls.err("post", "/integrations/git", 409, "CONFLICT",
                    json={"provider": "github", "repoFullName": "acme/site", "displayName": "Again",
                          "authMethod": "pat"})
    other = await connect(calls, provider="gitlab", repo="acme/site", token=None)
    assert other["hasToken"] is False


async def test_app_auth_needs_an_installation_id(make_app, http_receiver):
    _, calls, _ = await git_app(make_app, http_receiver)
    made = await connect(calls, authMethod="app", installationId=12345)
    assert made["authMethod"] == "app" and made["installationId"] == "12345"


async def test_patch_changes_fields_and_rotates_the_token(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    changed = await calls.ok("patch", f"/integrations/git/{made['id']}",
                             json={"displayName": "Renamed", "status": "paused",
                                   "syncConfig": {"preview": True}, "token": "ghp_new"})
    assert changed["displayName"] == "Renamed" and changed["status"] == "paused"
    assert changed["syncConfig"] == {"preview": True} and "ghp_new" not in str(changed)
    serve_github_pulls(http_receiver, [], token="ghp_new")
    assert (await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/refresh")) == {"fetched": 0}
    cleared = await calls.ok("patch", f"/integrations/git/{made['id']}", json={"token": None})
    assert cleared["hasToken"] is False
    await calls.err("post", f"/integrations/git/{made['id']}/pull-requests/refresh", 409, "GIT_NOT_CONNECTED")
    same = await calls.ok("patch", f"/integrations/git/{made['id']}", json={"sync_config": {"preview": False}})
    assert same["syncConfig"] == {"preview": False}


async def test_rotate_secret_answers_once_and_the_old_secret_stops_working(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    old = made["webhookSecret"]
    rotated = await calls.ok("post", f"/integrations/git/{made['id']}/rotate-secret")
    assert set(rotated) == {"secret"} and rotated["secret"] != old
    assert (await github_hook(app.client, site, made["id"], old, "ping", {})).status_code == 401
    assert (await github_hook(app.client, site, made["id"], rotated["secret"], "ping", {})).status_code == 200
    assert "secret" not in await calls.ok("get", f"/integrations/git/{made['id']}")


async def test_delete_forgets_token_and_cache(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    serve_github_pulls(http_receiver, [{"number": 3, "title": "x", "state": "open", "head": {"sha": "b" * 40,
                                        "ref": "f"}, "base": {"ref": "main"}, "user": {"login": "o"}}])
    await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/refresh")
    await calls.ok("delete", f"/integrations/git/{made['id']}", status=204)
    await calls.err("get", f"/integrations/git/{made['id']}", 404, "RECORD_NOT_FOUND")
    async with app.kernel.db.engine.connect() as conn:
        assert (await conn.execute(select(integrations))).first() is None
        assert (await conn.execute(select(pull_requests))).first() is None
    assert (await github_hook(app.client, site, made["id"], made["webhookSecret"], "ping", {})).status_code == 401


async def test_cross_tenant_every_route(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    serve_github_pulls(http_receiver, [{"number": 1, "title": "x", "state": "open", "head": {"sha": "c" * 40,
                                        "ref": "f"}, "base": {"ref": "main"}, "user": {"login": "o"}}])
    await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/refresh")
    admin = {"Authorization": calls.headers["Authorization"]}
    site_b = await app.create_site(admin, prefix="b")
    calls_b = Calls(app.client, {**admin, "X-Svc-Site": site_b})
    one = f"/integrations/git/{made['id']}"
    assert await calls_b.ok("get", "/integrations/git") == []
    for method, path, body in [("get", one, None), ("patch", one, {"displayName": "mine"}), ("delete", one, None),
                               ("post", one + "/rotate-secret", None), ("get", one + "/oauth/authorize", None),
                               ("get", one + "/pull-requests", None), ("post", one + "/pull-requests/refresh", None),
                               ("get", one + "/pull-requests/1/ci", None),
                               ("post", one + "/pull-requests/1/validate", None),
                               ("get", one + "/ci-runs/1/logs", None)]:
        await calls_b.err(method, path, 404, "RECORD_NOT_FOUND", json=body)
    # B may connect the same repository: uniqueness is per site
    await connect(calls_b)
    assert (await calls.ok("get", one))["displayName"] == "Site repo"
    assert len(await calls.ok("get", f"{one}/pull-requests")) == 1


async def test_members_and_anonymous_are_refused(make_app, http_receiver):
    from kernel.testing import new_member

    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    member = await new_member(app, site, "subscriber")
    as_member = Calls(app.client, member.headers)
    await as_member.err("get", "/integrations/git", 403, "PERMISSION_DENIED")
    await as_member.err("post", f"/integrations/git/{made['id']}/rotate-secret", 403, "PERMISSION_DENIED")
    anon = Calls(app.client, {"X-Svc-Site": site})
    await anon.err("get", f"/integrations/git/{made['id']}", 401)


async def test_without_the_encryption_key_the_routes_answer_400(shared_site):
    await shared_site.calls.err("get", "/integrations/git", 400, "ENCRYPTION_KEY_REQUIRED")
    await shared_site.calls.err("post", "/integrations/git", 400, "ENCRYPTION_KEY_REQUIRED",
                                json={"provider": "github", "repoFullName": "a/b", "displayName": "x",
                                      "authMethod": "pat", "token": "t"})
