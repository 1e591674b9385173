"""With SVC_PLUGINS_DISABLED=cdc the change feed answers 404 NOT_FOUND and is not documented."""

import pytest


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": "cdc"})


async def test_cdc_routes_are_gone(app):
    token = await app.login()
    resp = await app.client.get("/api/v1/cdc/events", headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 404
    assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if "/cdc/" in p]
