"""With SVC_PLUGINS_DISABLED=cdc every change-feed route answers 404 NOT_FOUND and is not
documented; the manifest has no webhooks provider then."""

import pytest

from kernel.testing import disabled_with_dependents

ROUTES = [("get", "/cdc/events"), ("get", "/cdc/subscriptions"), ("post", "/cdc/subscriptions"),
          ("get", "/cdc/subscriptions/x"), ("patch", "/cdc/subscriptions/x"), ("delete", "/cdc/subscriptions/x"),
          ("post", "/cdc/subscriptions/x/ack"), ("post", "/cdc/subscriptions/x/replay"),
          ("post", "/cdc/subscriptions/x/dispatch"), ("get", "/cdc/subscriptions/x/deliveries")]


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("cdc")})


async def test_cdc_routes_are_gone(app):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method in ("post", "patch") else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if "/cdc/" in p]
    manifest = (await app.client.get("/api/v1/config/export", headers=headers)).json()["data"]
    assert "webhooks" not in manifest["managedScopes"] and manifest["webhooks"] == []
