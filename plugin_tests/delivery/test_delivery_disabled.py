"""With SVC_PLUGINS_DISABLED=delivery every /deliver route answers 404 NOT_FOUND and is not
documented."""

import pytest

from kernel.testing import disabled_with_dependents

ROUTES = ["/deliver/page/home", "/deliver/page/default/home", "/deliver/items/pages", "/deliver/menu/main",
          "/deliver/llms.txt/default"]


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("delivery")})


async def test_delivery_routes_are_gone(app):
    for path in ROUTES:
        resp = await app.client.get(f"/api/v1{path}", headers={"X-Svc-Site": "default"})
        assert resp.status_code == 404, path
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if "/deliver/" in p]
