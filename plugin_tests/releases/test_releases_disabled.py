"""With SVC_PLUGINS_DISABLED=releases every release route answers 404 NOT_FOUND."""

import pytest

from kernel.testing import disabled_with_dependents

ROUTES = [("get", "/releases"), ("post", "/releases"), ("get", "/releases/x"), ("patch", "/releases/x"),
          ("delete", "/releases/x"), ("post", "/releases/x/publish")]


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("releases")})


async def test_release_routes_are_gone(app):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method in ("post", "patch") else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if p.startswith("/releases") or "/releases" in p]
    assert "releases.publish" not in app.kernel.jobs.names()


async def test_ai_runs_without_it_and_lacks_its_skill(app):
    # releases offers ai its skill through register_ai_skills; ai does not require releases
    from plugins.ai.registry import skills

    assert app.kernel.enabled("ai") and not app.kernel.enabled("releases")
    assert "publish_release" not in skills(app.kernel) and "read_items" in skills(app.kernel)
