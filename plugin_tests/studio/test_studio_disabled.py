"""With SVC_PLUGINS_DISABLED=studio the studio's page and assets answer 404 NOT_FOUND, and the
API document names none of them; the API the studio uses stays."""

from kernel.testing import disabled_with_dependents
from plugins.studio.assets import load_bundle


async def test_the_studio_is_gone(make_app):
    app = await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("studio")})
    asset = next(iter(load_bundle().assets))
    for path in ("/studio", "/studio/", f"/studio/assets/{asset}"):
        resp = await app.client.get(path)
        assert resp.status_code == 404, path
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if p.startswith("/studio")]
    assert "/api/v1/me/sites" in paths
