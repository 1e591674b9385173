"""With SVC_PLUGINS_DISABLED=flows every flows route answers 404 NOT_FOUND and is not documented."""

import pytest

from kernel.testing import disabled_with_dependents

ROUTES = [("get", "/flows"), ("post", "/flows"), ("get", "/flows/operations"), ("get", "/flows/x"),
          ("patch", "/flows/x"), ("delete", "/flows/x"), ("post", "/flows/x/run"), ("post", "/flows/x/trigger"),
          ("get", "/flows/x/runs"), ("get", "/flows/x/runs/y")]


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("flows")})


async def test_flows_routes_are_gone(app):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method in ("post", "patch") else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if p.startswith("/api/v1/flows") or p.startswith("/flows")]
