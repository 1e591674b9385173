"""With SVC_PLUGINS_DISABLED=pageviews both routes answer 404 NOT_FOUND and are not documented."""

import pytest

from kernel.testing import disabled_with_dependents


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("pageviews")})


async def test_pageviews_routes_are_gone(app):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    resp = await app.client.post("/api/v1/pageviews/default/hit", json={"path": "/"})
    assert resp.status_code == 404 and resp.json()["errors"][0]["code"] == "NOT_FOUND"
    resp = await app.client.get("/api/v1/pageviews/stats", headers=headers)
    assert resp.status_code == 404 and resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if "/pageviews" in p]
