"""With SVC_PLUGINS_DISABLED=privacy every privacy route answers 404 NOT_FOUND and is not
documented; pageviews and email keep working on the kernel's defaults (test_privacy_wiring)."""

from kernel.testing import disabled_with_dependents

ROUTES = [("get", "/me/consents"), ("put", "/me/consents/analytics"), ("get", "/me/restriction"),
          ("put", "/me/restriction"), ("get", "/me/data-export"), ("get", "/me/automated-decisions"),
          ("get", "/retention"), ("post", "/retention/run"), ("get", "/admin/erasure"), ("post", "/admin/erasure"),
          ("get", "/admin/erasure/x"), ("post", "/admin/erasure/x/confirm"), ("post", "/admin/erasure/x/execute")]


async def test_privacy_routes_are_gone(make_app):
    app = await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("privacy")})
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method in ("post", "put") else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if p.startswith(("/me/consents", "/me/restriction", "/me/data-export",
                                                  "/me/automated-decisions", "/retention", "/admin/erasure"))]
