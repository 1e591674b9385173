"""With SVC_PLUGINS_DISABLED=dashboards every dashboards route answers 404 NOT_FOUND."""

import pytest

from kernel.testing import disabled_with_dependents

ROUTES = [("get", "/dashboards"), ("post", "/dashboards"), ("get", "/dashboards/x"), ("patch", "/dashboards/x"),
          ("delete", "/dashboards/x"), ("get", "/dashboards/x/panels"), ("post", "/dashboards/x/panels"),
          ("patch", "/dashboards/x/panels/y"), ("delete", "/dashboards/x/panels/y"),
          ("post", "/dashboards/x/panels/y/data"), ("post", "/dashboards/x/panels/preview")]


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("dashboards")})


async def test_dashboard_routes_are_gone(app):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method in ("post", "patch") else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if "/dashboards" in p]
    assert "INVALID_FIELD" not in app.kernel.error_codes
