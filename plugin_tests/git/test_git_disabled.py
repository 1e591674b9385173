"""With SVC_PLUGINS_DISABLED=git every git route answers 404 NOT_FOUND and is not documented."""

import pytest

from kernel.testing import disabled_with_dependents

ROUTES = [("get", "/integrations/git"), ("post", "/integrations/git"), ("get", "/integrations/git/x"),
          ("patch", "/integrations/git/x"), ("delete", "/integrations/git/x"),
          ("post", "/integrations/git/x/rotate-secret"), ("get", "/integrations/git/x/oauth/authorize"),
          ("get", "/integrations/git/x/pull-requests"), ("post", "/integrations/git/x/pull-requests/refresh"),
          ("get", "/integrations/git/x/pull-requests/1/ci"), ("post", "/integrations/git/x/pull-requests/1/validate"),
          ("get", "/integrations/git/x/ci-runs/1/logs"), ("post", "/integrations/git/x/gitops/sync"),
          ("get", "/integrations/git/x/provenance"), ("get", "/integrations/git/oauth/github/callback"),
          ("post", "/integrations/git/webhook/github/default/x")]


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("git")})


async def test_git_routes_are_gone(app):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method in ("post", "patch") else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if "/integrations/git" in p]
