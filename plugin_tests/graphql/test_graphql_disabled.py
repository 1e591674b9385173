"""With SVC_PLUGINS_DISABLED=graphql, /graphql answers 404 NOT_FOUND and is not documented."""

import pytest

from kernel.testing import disabled_with_dependents


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("graphql"), "SVC_ENV": "development"})


async def test_graphql_routes_are_gone(app):
    token = await app.login()
    site = await app.create_site({"Authorization": f"Bearer {token}"})
    headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": site}
    for method, kw in (("post", {"json": {"query": "{ _collections }"}}), ("get", {})):
        resp = await app.client.request(method.upper(), "/api/v1/graphql", headers=headers, **kw)
        assert resp.status_code == 404 and resp.json()["errors"][0]["code"] == "NOT_FOUND"
    resp = await app.client.get("/api/v1/graphql", headers={**headers, "Accept": "text/event-stream"},
                                params={"query": "subscription { x_events { action } }"})
    assert resp.status_code == 404
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if "graphql" in p]
    assert "graphql_schemas" not in app.kernel.site_caches
