"""With SVC_PLUGINS_DISABLED=extensions every route of the plugin answers 404 NOT_FOUND and is not
documented; the extension sink serves nothing."""

import pytest

from kernel.testing import disabled_with_dependents

MISSING = "0190a0a0-0000-7000-8000-000000000000"
ROUTES = [("get", "/extensions"), ("post", "/extensions/upload"), ("get", "/extensions/ui/manifest"),
          ("get", "/extensions/publisher-keys"), ("post", "/extensions/publisher-keys"),
          ("get", f"/extensions/{MISSING}"), ("delete", f"/extensions/{MISSING}"),
          ("post", f"/extensions/{MISSING}/enable"), ("post", f"/extensions/{MISSING}/disable"),
          ("post", f"/extensions/{MISSING}/capabilities"), ("get", "/ext/word-count/articles/x"),
          ("get", "/extensions/ui/panels/default/word-count/panel")]  # -- ext_ui


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("extensions")})


async def test_extensions_routes_are_gone(app):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method == "post" else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if p.startswith(("/api/v1/extensions", "/api/v1/ext/"))]
    assert "extensions.runtime" not in app.kernel.state
