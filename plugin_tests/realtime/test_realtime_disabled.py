"""With SVC_PLUGINS_DISABLED=realtime the realtime, push and notification routes answer 404."""

import pytest

from kernel.testing import Calls, disabled_with_dependents, new_member
from plugin_tests.realtime.helpers import closed


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("realtime")})


async def test_realtime_routes_are_gone(app, live_server):
    token = await app.login()
    headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": "default"}
    for method, path in (("post", "/realtime/ticket"), ("post", "/realtime/audience-ticket"),
                         ("get", "/push/vapid-public-key"), ("get", "/push/status"), ("post", "/push/test"),
                         ("post", "/push/subscriptions"), ("delete", "/push/subscriptions"),
                         ("get", "/notifications"), ("patch", "/notifications/x")):
        resp = await app.client.request(method.upper(), f"/api/v1{path}", headers=headers)
        assert resp.status_code == 404, path
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    server = await live_server(app)
    close = await closed(server.ws("/api/v1/realtime", params={"ticket": "rt1.default." + "A" * 43},
                                   headers=headers))
    assert close.code == 4404
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if "/realtime" in p or "/push/" in p or "/notifications" in p]


async def test_a_review_request_needs_no_realtime(app):
    """Editorial notifies a reviewer only when realtime is enabled; without it the request goes on."""
    calls = Calls(app.client, {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"})
    await calls.collection("articles", {"title": "string"}, editorialWorkflow=True)
    reviewer = await new_member(app, "default", "admin")
    art = (await calls.create("articles", {"title": "a"}))["id"]
    review = await calls.ok("post", f"/editorial/articles/{art}/submit-review", json={"reviewerId": reviewer.id})
    assert review["state"] == "in_review" and review["reviewerId"] == reviewer.id
