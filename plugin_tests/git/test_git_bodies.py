"""Bad bodies, headers and ids on every git route: 400 VALIDATION_FAILED with the path (or the
route's refusal), never 500. One app for the module (the cases change nothing)."""

import uuid

import pytest
import pytest_asyncio
from git_helpers import KEY

from kernel.testing import AppFactory, Calls

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(svc_shared_db, svc_template_db, tmp_path_factory):
    from kernel.testing import svc_test_database_url

    url = svc_test_database_url() and svc_shared_db
    factory = AppFactory(svc_template_db, tmp_path_factory.mktemp("git"), f"svctest:{uuid.uuid4().hex[:12]}",
                         database_url=url)
    try:
        app = await factory(env={"SVC_ENCRYPTION_KEY": KEY})
        admin = {"Authorization": f"Bearer {await app.login()}"}
        site = await app.create_site(admin)
        calls = Calls(app.client, {**admin, "X-Svc-Site": site})
        made = await calls.ok("post", "/integrations/git", status=201, json={
            "provider": "github", "repoFullName": "acme/body", "displayName": "x", "authMethod": "pat"})
        yield app, calls, site, made
    finally:
        await factory.close()


GOOD = {"provider": "github", "repoFullName": "acme/new", "displayName": "New", "authMethod": "pat"}
BAD_CREATE = [
    ([], ["body"]), ("x", ["body"]), (5, ["body"]),
    ({**GOOD, "provider": "bitbucket"}, ["provider"]), ({**GOOD, "provider": None}, ["provider"]),
    ({**GOOD, "provider": ["github"]}, ["provider"]),
    ({**GOOD, "repoFullName": ""}, ["repoFullName"]), ({**GOOD, "repoFullName": "noslash"}, ["repoFullName"]),
    ({**GOOD, "repoFullName": "a/b/c"}, ["repoFullName"]), ({**GOOD, "repoFullName": "../etc"}, ["repoFullName"]),
    ({**GOOD, "repoFullName": "a/.."}, ["repoFullName"]), ({**GOOD, "repoFullName": "a/b?x=1"}, ["repoFullName"]),
    ({**GOOD, "repoFullName": "a/b\n"}, ["repoFullName"]), ({**GOOD, "repoFullName": 7}, ["repoFullName"]),
    ({**GOOD, "repoFullName": "a/" + "b" * 300}, ["repoFullName"]),
    ({**GOOD, "provider": "gitlab", "repoFullName": "g/" * 11 + "r"}, ["repoFullName"]),
    ({**GOOD, "displayName": ""}, ["displayName"]), ({**GOOD, "displayName": "x" * 101}, ["displayName"]),
    ({**GOOD, "displayName": "a\x00b"}, ["displayName"]), ({**GOOD, "displayName": None}, ["displayName"]),
    ({**GOOD, "authMethod": "oauth"}, ["authMethod"]), ({**GOOD, "authMethod": "app"}, ["installationId"]),
    ({**GOOD, "installationId": -1}, ["installationId"]), ({**GOOD, "installationId": True}, ["installationId"]),
    ({**GOOD, "installationId": "12a"}, ["installationId"]),
    ({**GOOD, "token": ""}, ["token"]), ({**GOOD, "token": "has space"}, ["token"]),
    ({**GOOD, "token": "a\r\nX-Evil: 1"}, ["token"]), ({**GOOD, "token": "t" * 1001}, ["token"]),
    ({**GOOD, "token": 5}, ["token"]), ({**GOOD, "token": "ünicode"}, ["token"]),
    ({**GOOD, "syncConfig": []}, ["syncConfig"]), ({**GOOD, "syncConfig": {"preview": "yes"}}, ["syncConfig", "preview"]),
    ({**GOOD, "syncConfig": {"other": 1}}, ["syncConfig", "other"]),
    ({**GOOD, "sync_config": {"preview": 1}}, ["sync_config", "preview"]),
    ({**GOOD, "status": "active"}, ["status"]), ({**GOOD, "id": "mine"}, ["id"]),
    ({**GOOD, "webhookSecret": "chosen"}, ["webhookSecret"]),
]


@pytest.mark.parametrize(("body", "path"), BAD_CREATE)
async def test_bad_create_bodies(shared, body, path):
    _, calls, _, _ = shared
    await calls.err("post", "/integrations/git", 400, "VALIDATION_FAILED", path_is=path, json=body)


BAD_PATCH = [
    ([], ["body"]), ({"provider": "gitlab"}, ["provider"]), ({"repoFullName": "a/c"}, ["repoFullName"]),
    ({"authMethod": "app"}, ["authMethod"]), ({"displayName": ""}, ["displayName"]),
    ({"status": "deleted"}, ["status"]), ({"status": None}, ["status"]), ({"token": "a b"}, ["token"]),
    ({"syncConfig": {"preview": None}}, ["syncConfig", "preview"]), ({"installationId": 0}, ["installationId"]),
]


@pytest.mark.parametrize(("body", "path"), BAD_PATCH)
async def test_bad_patch_bodies(shared, body, path):
    _, calls, _, made = shared
    await calls.err("patch", f"/integrations/git/{made['id']}", 400, "VALIDATION_FAILED", path_is=path, json=body)


async def test_malformed_json_and_unknown_ids(shared):
    app, calls, _, made = shared
    resp = await calls.call("post", "/integrations/git", content=b"{bad", headers={"Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"
    for raw in (str(uuid.uuid4()), "x" * 37, "%00", "%01x", "' or 1=1 --"):
        await calls.err("get", f"/integrations/git/{raw}", 404, "RECORD_NOT_FOUND")
        await calls.err("post", f"/integrations/git/{raw}/rotate-secret", 404, "RECORD_NOT_FOUND")
        await calls.err("get", f"/integrations/git/{made['id']}/ci-runs/{raw}/logs", 404, "RECORD_NOT_FOUND")
        resp = await app.client.post(f"/api/v1/integrations/git/webhook/github/{calls.headers['X-Svc-Site']}/{raw}",
                                     content=b"{}", headers={"X-Hub-Signature-256": "sha256=00"})
        assert resp.status_code == 401
    for params in ({"collection": "a\x00", "itemId": "x"}, {"collection": "a", "itemId": "\x00"}):
        await calls.err("get", f"/integrations/git/{made['id']}/provenance", 400, "VALIDATION_FAILED", params=params)
    assert (await calls.ok("get", f"/integrations/git/{made['id']}"))["displayName"] == "x"


@pytest.mark.parametrize("headers", [
    {}, {"X-Hub-Signature-256": "sha256=zz"}, {"X-Hub-Signature-256": "sha256=" + "0" * 64},
    {"X-Hub-Signature-256": "x" * 5000}, {"X-Gitlab-Token": "x"},
])
async def test_unsigned_webhooks_are_401(shared, headers):
    app, _, site, made = shared
    resp = await app.client.post(f"/api/v1/integrations/git/webhook/github/{site}/{made['id']}", content=b"{}",
                                 headers={"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d", **headers})
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"


async def test_oauth_callback_is_public_and_authorize_is_not(shared):
    app, _, site, made = shared
    resp = await app.client.get("/api/v1/integrations/git/oauth/github/callback", params={"code": "c"})
    assert resp.status_code == 400
    resp = await app.client.get(f"/api/v1/integrations/git/{made['id']}/oauth/authorize", headers={"X-Svc-Site": site})
    assert resp.status_code == 401
