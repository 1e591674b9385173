"""With SVC_PLUGINS_DISABLED=files every files, assets, media, preset, folder and upload-policy route
answers 404 NOT_FOUND and is not documented."""

import pytest

from kernel.testing import disabled_with_dependents

ROUTES = [("get", "/files"), ("post", "/files"), ("get", "/files/x"), ("patch", "/files/x"), ("delete", "/files/x"),
          ("post", "/files/upload-url"), ("post", "/files/import"), ("put", "/files/upload/a.jpg"),
          ("get", "/assets/x"), ("post", "/media/a.jpg"), ("get", "/media/a.jpg"), ("delete", "/media/a.jpg"),
          ("get", "/transform-presets"), ("post", "/transform-presets"), ("patch", "/transform-presets/x"),
          ("delete", "/transform-presets/x"), ("get", "/uploads/config"), ("put", "/uploads/config"),
          ("get", "/folders"), ("post", "/folders"), ("get", "/folders/x"), ("patch", "/folders/x"),
          ("delete", "/folders/x")]


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("files")})


async def test_files_routes_are_gone(app):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method in ("post", "patch", "put") else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if p.startswith(("/api/v1/files", "/api/v1/assets", "/api/v1/media",
                                                  "/api/v1/transform-presets", "/api/v1/uploads", "/api/v1/folders"))]


async def test_ai_runs_without_it_and_lacks_its_skill(app):
    # files offers ai its skill through register_ai_skills; ai does not require files
    from plugins.ai.registry import skills

    assert app.kernel.enabled("ai") and not app.kernel.enabled("files")
    assert "import_file" not in skills(app.kernel) and "read_items" in skills(app.kernel)
