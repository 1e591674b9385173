"""With SVC_PLUGINS_DISABLED=email every email route answers 404 NOT_FOUND and is not documented."""

from kernel.testing import disabled_with_dependents

ROUTES = [("get", "/email/capabilities"), ("get", "/email/layouts"), ("post", "/email/layouts"),
          ("patch", "/email/layouts/x"), ("delete", "/email/layouts/x"), ("get", "/email/templates"),
          ("post", "/email/templates"), ("patch", "/email/templates/x"), ("delete", "/email/templates/x"),
          ("post", "/email/templates/x/preview"), ("post", "/email/templates/preview"), ("post", "/email/send"), ("post", "/email/test"),
          ("get", "/email/suppressions"), ("post", "/email/suppressions"), ("delete", "/email/suppressions/a@b.co"),
          ("get", "/email/unsubscribe?token=x"), ("post", "/email/unsubscribe"), ("post", "/email/unsubscribe/undo"),
          ("post", "/email/batches/x/cancel")]  # -- more43


async def test_email_routes_are_gone(make_app):
    app = await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("email")})
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method in ("post", "patch") else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if p.startswith("/email/") or "/email/" in p]
