"""With SVC_PLUGINS_DISABLED=agents every /agent route answers 404 NOT_FOUND and is not documented."""

import pytest

from kernel.testing import disabled_with_dependents

ROUTES = [("get", "/agent/goals"), ("post", "/agent/goals"), ("get", "/agent/goals/x"),
          ("post", "/agent/goals/x/decompose"), ("post", "/agent/goals/x/settle"), ("get", "/agent/roles"),
          ("post", "/agent/roles"), ("get", "/agent/roles/x"), ("patch", "/agent/roles/x"),
          ("delete", "/agent/roles/x"), ("get", "/agent/autonomy"), ("get", "/agent/autonomy/promotions"),
          ("post", "/agent/autonomy/promotions"), ("post", "/agent/autonomy/promotions/x/decide"),
          ("get", "/agent/staged"), ("get", "/agent/staged/x"), ("post", "/agent/staged/x/veto"),
          ("post", "/agent/approvals/x/agent-decide"), ("get", "/agent/constitution"),
          ("post", "/agent/constitution"), ("post", "/agent/constitution/compile"),
          ("post", "/agent/constitution/x/compile"), ("post", "/agent/constitution/x/dry-run"), ("post", "/agent/constitution/x/activate"),
          ("get", "/agent/kill-switch"), ("post", "/agent/kill-switch"), ("post", "/agent/kill-switch/lift"),
          ("get", "/agent/intents"), ("post", "/agent/intents"), ("get", "/agent/intents/x"),
          ("patch", "/agent/intents/x"), ("delete", "/agent/intents/x"), ("post", "/agent/intents/x/pause"),
          ("post", "/agent/intents/x/resume")]


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("agents")})


async def test_agent_routes_are_gone(app):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method in ("post", "patch") else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if p.startswith("/agent")]
    assert "agents.run" not in app.kernel.jobs.names()
