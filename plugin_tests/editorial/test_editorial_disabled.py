"""With SVC_PLUGINS_DISABLED=editorial its routes answer 404 NOT_FOUND, and no gate holds."""

import pytest

from kernel.testing import Calls, disabled_with_dependents

ROUTES = [("get", "/editorial/reviews"), ("get", "/editorial/states"), ("get", "/editorial/reviewers"),
          ("get", "/editorial/posts/1"), ("post", "/editorial/posts/1/submit-review"),
          ("post", "/editorial/posts/1/approve"), ("post", "/editorial/posts/1/reject")]


@pytest.fixture
async def app(make_app):
    return await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("editorial")})


async def test_editorial_routes_are_gone(app):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method == "post" else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if "/editorial/" in p]
    calls = Calls(app.client, headers)
    await calls.collection("articles", {"title": "string"}, editorialWorkflow=True)
    made = await calls.create("articles", {"title": "a"})
    assert (await calls.ok("patch", f"/items/articles/{made['id']}", json={"status": "published"}))["status"] \
        == "published"
