"""With SVC_PLUGINS_DISABLED=ai every /ai route and /mcp answer 404 NOT_FOUND and are not
documented; with SVC_MCP_ENABLED=false only /mcp is gone."""

from kernel.testing import disabled_with_dependents

AI_ROUTES = [("post", "/ai/chat"), ("get", "/ai/skills"), ("get", "/ai/approvals"),
             ("post", "/ai/approvals/x/decide"), ("get", "/ai/conversations"), ("get", "/ai/conversations/x/messages"),
             ("delete", "/ai/conversations/x")]
MCP_ROUTES = [("post", "/mcp"), ("delete", "/mcp"), ("get", "/mcp")]


async def _gone(app, routes):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in routes:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method == "post" else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    return (await app.client.get("/api/v1/openapi.json")).json()["paths"]


async def test_ai_routes_are_gone(make_app):
    app = await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("ai")})
    paths = await _gone(app, AI_ROUTES + MCP_ROUTES)
    assert not [p for p in paths if "/ai/" in p or p.endswith("/mcp")]


async def test_mcp_can_be_switched_off(make_app):
    app = await make_app(env={"SVC_MCP_ENABLED": "false"})
    paths = await _gone(app, MCP_ROUTES)
    assert not [p for p in paths if p.endswith("/mcp")]
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    resp = await app.client.get("/api/v1/ai/skills", headers=headers)
    assert resp.status_code == 200
