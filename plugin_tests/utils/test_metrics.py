"""GET /metrics and /api/v1/metrics: Prometheus text, labelled by route template; optional token."""

from __future__ import annotations

from kernel import Route, hookimpl
from kernel.http.media import send_data
from kernel.plugins import available_plugins

TOKEN = "scrape-token-0123456789"


class Probe:
    async def on_get(self, req, resp, thing_id):
        send_data(resp, {"id": thing_id})


class ProbePlugin:
    """A route with an id in its path, to see what label the metrics give it."""

    name = "probe"

    @hookimpl
    def register_routes(self, kernel):
        return [Route("/probe/{thing_id}", Probe(), site="none", auth="public")]


async def test_metrics_label_by_route_template_not_raw_path(make_app):
    app = await make_app(plugins=[*sorted(available_plugins()), ProbePlugin()])
    assert (await app.client.get("/api/v1/probe/id-7f3a91")).status_code == 200
    assert (await app.client.get("/api/v1/utils/version")).status_code == 200
    assert (await app.client.get("/api/v1/no/such/route-55e1")).status_code == 404
    resp = await app.client.get("/metrics")
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/plain")
    assert resp.headers["Cache-Control"] == "no-store"
    text = resp.text
    assert 'svc_http_requests_total{method="GET",route="/api/v1/probe/{thing_id}",status="200"} 1.0' in text
    assert 'svc_http_requests_total{method="GET",route="/api/v1/utils/version",status="200"} 1.0' in text
    assert 'route="unmatched",status="404"' in text
    assert "id-7f3a91" not in text and "route-55e1" not in text
    assert "svc_http_request_duration_seconds_bucket" in text


async def test_metrics_under_api_prefix_too(client):
    await client.get("/api/v1/utils/version")
    resp = await client.get("/api/v1/metrics")
    assert resp.status_code == 200
    assert "svc_http_requests_total" in resp.text
    # The room left where files go (local storage by default) and in the data dir, as statvfs says.
    room = {line.split()[0]: float(line.split()[1]) for line in resp.text.splitlines()
            if line.startswith(("svc_storage_free_bytes{", "svc_storage_size_bytes{"))}
    for volume in ("files", "data"):
        free, size = room[f'svc_storage_free_bytes{{volume="{volume}"}}'], room[f'svc_storage_size_bytes{{volume="{volume}"}}']
        assert 0 < free <= size


async def test_metrics_token_is_required_when_set(make_app):
    app = await make_app(env={"SVC_METRICS_TOKEN": TOKEN})
    for path in ("/metrics", "/api/v1/metrics"):
        missing = await app.client.get(path)
        assert missing.status_code == 401
        assert missing.json()["errors"][0]["code"] == "UNAUTHENTICATED"
        assert missing.headers["WWW-Authenticate"].startswith("Bearer")
        wrong = await app.client.get(path, headers={"Authorization": "Bearer not-the-token"})
        assert wrong.status_code == 401
        # The scrape token is not a JWT; the route reads it itself, the auth chain never sees it.
        right = await app.client.get(path, headers={"Authorization": f"Bearer {TOKEN}"})
        assert right.status_code == 200, right.text
        assert "svc_http_requests_total" in right.text


async def test_a_login_token_is_not_a_metrics_token(make_app):
    app = await make_app(env={"SVC_METRICS_TOKEN": TOKEN})
    token = await app.login()
    resp = await app.client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 401


async def test_metrics_ignore_credentials_when_public(client):
    resp = await client.get("/metrics", headers={"Authorization": "Bearer whatever"})
    assert resp.status_code == 200
