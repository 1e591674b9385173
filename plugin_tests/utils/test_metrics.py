"""GET /metrics and /api/v1/metrics: Prometheus text, labelled by route template; who may scrape it
(the token, an operator's explicit SVC_METRICS_PUBLIC, development, and nobody by default)."""

from __future__ import annotations

import pytest

from kernel import Route, hookimpl
from kernel.base.errors import SettingsError
from kernel.hooks.plugins import available_plugins
from kernel.http.media import send_data
from kernel.testing import METRICS_HEADERS

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
    resp = await app.client.get("/metrics", headers=METRICS_HEADERS)
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
    resp = await client.get("/api/v1/metrics", headers=METRICS_HEADERS)
    assert resp.status_code == 200
    assert "svc_http_requests_total" in resp.text
    # The room left where files go (local storage by default) and in the data dir, as statvfs says.
    room = {line.split()[0]: float(line.split()[1]) for line in resp.text.splitlines()
            if line.startswith(("svc_storage_free_bytes{", "svc_storage_size_bytes{"))}
    for volume in ("files", "data"):
        free, size = room[f'svc_storage_free_bytes{{volume="{volume}"}}'], room[f'svc_storage_size_bytes{{volume="{volume}"}}']
        assert 0 < free <= size


@pytest.mark.parametrize("public", ["false", "true"])
async def test_metrics_token_is_required_when_set(make_app, public):
    # With a token, SVC_METRICS_PUBLIC changes nothing: the token is always needed.
    app = await make_app(env={"SVC_METRICS_TOKEN": TOKEN, "SVC_METRICS_PUBLIC": public})
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


async def test_production_serves_no_one_by_default(make_app):
    """No token and no SVC_METRICS_PUBLIC (both unset, as a fresh production deployment has
    them): /metrics is off, for an anonymous caller and for the instance admin's login alike."""
    app = await make_app(env={"SVC_METRICS_TOKEN": ""})
    assert app.kernel.settings.env == "production" and app.kernel.settings.get("metrics_public") is False
    admin = {"Authorization": f"Bearer {await app.login()}"}
    for path in ("/metrics", "/api/v1/metrics"):
        for headers in ({}, admin, {"Authorization": "Bearer whatever"}):
            resp = await app.client.get(path, headers=headers)
            assert resp.status_code == 404, resp.text
            error = resp.json()["errors"][0]
            assert error["code"] == "NOT_FOUND"
            assert "SVC_METRICS_TOKEN" in error["message"] and "SVC_METRICS_PUBLIC" in error["message"]
            assert "svc_http_requests_total" not in resp.text and "WWW-Authenticate" not in resp.headers


@pytest.mark.parametrize("env", [{"SVC_METRICS_PUBLIC": "true"}, {"SVC_ENV": "development"}],
                         ids=["public", "development"])
async def test_anonymous_scrapes_where_turned_on_or_in_development(make_app, env):
    app = await make_app(env={"SVC_METRICS_TOKEN": "", **env})
    for path in ("/metrics", "/api/v1/metrics"):
        for headers in ({}, {"Authorization": "Bearer whatever"}):  # credentials are not read
            resp = await app.client.get(path, headers=headers)
            assert resp.status_code == 200, resp.text
            assert "svc_http_requests_total" in resp.text


async def test_development_with_a_token_still_needs_it(make_app):
    app = await make_app(env={"SVC_METRICS_TOKEN": TOKEN, "SVC_ENV": "development"})
    assert (await app.client.get("/metrics")).status_code == 401
    assert (await app.client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})).status_code == 200


@pytest.mark.parametrize("value", ["maybe", "2", "public"])
async def test_a_bad_public_value_fails_at_boot_naming_the_variable(make_app, value):
    with pytest.raises(SettingsError) as refused:
        await make_app(env={"SVC_METRICS_PUBLIC": value})
    assert f"SVC_METRICS_PUBLIC={value!r} is not valid" in str(refused.value)
