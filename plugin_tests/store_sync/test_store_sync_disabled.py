"""With SVC_PLUGINS_DISABLED=store_sync every store-sync route answers 404 NOT_FOUND and is not
documented."""

import pytest

from kernel.testing import disabled_with_dependents

ROUTES = [("get", "/store-sync/pipelines"), ("post", "/store-sync/pipelines"), ("get", "/store-sync/pipelines/x"),
          ("patch", "/store-sync/pipelines/x"), ("delete", "/store-sync/pipelines/x"),
          ("get", "/store-sync/pipelines/x/log"), ("post", "/store-sync/pipelines/x/backfill")]


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("store_sync")})


async def test_store_sync_routes_are_gone(app):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method in ("post", "patch") else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if "/store-sync/" in p]
    assert "store_sync" not in app.kernel.events.groups
