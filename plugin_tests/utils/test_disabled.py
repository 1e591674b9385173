"""With SVC_PLUGINS_DISABLED=utils every utils route answers 404 NOT_FOUND."""

import pytest

from kernel.testing import disabled_with_dependents

ROUTES = [
    ("GET", "/api/v1/utils/health"),
    ("GET", "/api/v1/utils/version"),
    ("GET", "/api/v1/metrics"),
    ("GET", "/metrics"),
    ("POST", "/api/v1/utils/render-template"),
    ("POST", "/api/v1/utils/jsonata/test"),
]


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("utils")})


@pytest.mark.parametrize("method, path", ROUTES)
async def test_utils_routes_are_gone(app, method, path):
    token = await app.login()
    body = {"template": "x", "data": {}} if "render" in path else {"expression": "1"}
    resp = await app.client.request(method, path, headers={"Authorization": f"Bearer {token}"},
                                    json=body if method == "POST" else None)
    assert resp.status_code == 404
    assert resp.json()["errors"][0]["code"] == "NOT_FOUND"


async def test_nothing_of_utils_in_the_document(app):
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if "/utils/" in p or p.endswith("/metrics")]
