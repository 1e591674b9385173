"""With SVC_PLUGINS_DISABLED=settings every route of the plugin answers 404 NOT_FOUND and is not
documented; the manifest has no settings provider then. The plugins requiring settings (files,
delivery, pageviews, releases...) are disabled with it."""

import pytest

from kernel.testing import disabled_with_dependents

ROUTES = [("get", "/settings"), ("patch", "/settings"), ("get", "/settings/k"), ("put", "/settings/k"),
          ("post", "/settings/export"), ("post", "/settings/apply"), ("get", "/site"), ("patch", "/site"),
          ("get", "/me/preferences"), ("patch", "/me/preferences"), ("get", "/presets"), ("post", "/presets"),
          ("get", "/presets/effective"), ("get", "/presets/bookmarks"), ("get", "/presets/x"),
          ("patch", "/presets/x"), ("delete", "/presets/x"), ("get", "/tm"), ("post", "/tm"),
          ("patch", "/tm/x"), ("delete", "/tm/x"), ("post", "/tm/lookup"), ("post", "/tm/translate"),
          ("get", "/tm/glossary"), ("post", "/tm/glossary"), ("delete", "/tm/glossary/x")]


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("settings")})


async def test_settings_routes_are_gone(app):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method in ("post", "patch", "put") else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    ours = ("/api/v1/settings", "/api/v1/presets", "/api/v1/tm", "/api/v1/me/preferences")
    assert not [p for p in paths if p.startswith(ours) or p == "/api/v1/site"]
    manifest = (await app.client.get("/api/v1/config/export", headers=headers)).json()["data"]
    assert "settings" not in manifest["managedScopes"] and manifest["settings"] == []
    # A manifest's settings have nobody to take them: refused, an empty section accepted.
    body = {"version": "svc.config@v1", "settings": [{"key": "menu.main", "value": []}]}
    resp = await app.client.post("/api/v1/config/import?dryRun=true&mode=merge", headers=headers, json=body)
    errors = resp.json()["data"]["errors"]
    assert [(e["code"], e["path"]) for e in errors] == [("VALIDATION_FAILED", ["settings"])]
    body["settings"] = []
    resp = await app.client.post("/api/v1/config/import?dryRun=true&mode=merge", headers=headers, json=body)
    assert resp.json()["data"]["valid"] is True

