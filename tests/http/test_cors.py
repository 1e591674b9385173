"""CORS for HTTP from the site's allowed origins plus SVC_CORS_ORIGINS (docs/architecture.md, CORS)."""

from __future__ import annotations

import pytest

from kernel.base.settings import normalize_origin
from tests.http.live_plugin import LivePlugin

STUDIO = "https://studio.example.org"
BLOG = "https://blog.example.com"


@pytest.fixture
async def cors(make_app):
    plugin = LivePlugin()
    app = await make_app(plugins=[plugin], env={"SVC_CORS_ORIGINS": f"{STUDIO}/, https://Other.example.org:8443",
                                                "SVC_BASE_DOMAIN": "api.test"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    sites = [await app.create_site(admin, name="S") for _ in range(2)]
    plugin.origins[sites[0]] = [f"{BLOG}/path?q=1"]
    return app, admin, sites


def preflight(origin: str, **extra: str) -> dict[str, str]:
    return {"Origin": origin, "Access-Control-Request-Method": "DELETE",
            "Access-Control-Request-Headers": "authorization, x-svc-site", **extra}


async def test_preflight_from_an_allowed_origin(cors):
    app, _admin, _sites = cors
    resp = await app.client.options("/api/v1/collections", headers=preflight(STUDIO))
    assert resp.status_code == 204, resp.text  # answered before auth: no 401 for a preflight
    assert resp.headers["access-control-allow-origin"] == STUDIO
    assert resp.headers["access-control-allow-credentials"] == "true"
    assert "DELETE" in resp.headers["access-control-allow-methods"]
    assert resp.headers["access-control-allow-headers"] == "authorization, x-svc-site"
    assert resp.headers["access-control-max-age"] == "600"
    assert "Origin" in resp.headers["vary"]
    assert resp.headers["x-request-id"]
    resp = await app.client.options("/api/v1/collections", headers=preflight("https://other.example.org:8443"))
    assert resp.headers["access-control-allow-origin"] == "https://other.example.org:8443"


# http://localhost:3000: allowed only under SVC_ENV=development (tests/test_cli.py, svc serve --dev).
@pytest.mark.parametrize("origin", ["https://evil.example.net", "http://studio.example.org", "null",
                                    "https://studio.example.org.evil.net", BLOG, "http://localhost:3000"])
async def test_preflight_from_another_origin_grants_nothing(cors, origin):
    app, _admin, _sites = cors
    resp = await app.client.options("/api/v1/collections", headers=preflight(origin))
    assert resp.status_code == 204
    assert not any(h.startswith("access-control-") for h in resp.headers)


async def test_preflight_on_a_site_subdomain_uses_the_sites_origins(cors):
    app, _admin, (site, site_b) = cors
    resp = await app.client.options("/api/v1/collections", headers=preflight(BLOG, Host=f"{site}.api.test"))
    assert resp.headers["access-control-allow-origin"] == BLOG
    resp = await app.client.options("/api/v1/collections", headers=preflight(BLOG, Host=f"{site_b}.api.test"))
    assert "access-control-allow-origin" not in resp.headers  # cross-tenant: B does not allow A's origin


async def test_answers_echo_an_allowed_origin_with_exposed_headers(cors):
    app, admin, (site, site_b) = cors
    resp = await app.client.get("/api/v1/collections", headers={**admin, "X-Svc-Site": site, "Origin": BLOG})
    assert resp.status_code == 200
    assert resp.headers["access-control-allow-origin"] == BLOG
    assert resp.headers["access-control-allow-credentials"] == "true"
    exposed = resp.headers["access-control-expose-headers"]
    assert "X-Request-Id" in exposed and "X-RateLimit-Remaining" in exposed and "Retry-After" in exposed
    assert "Origin" in resp.headers["vary"]
    # Site B does not list the blog: no echo there, whatever the request's credentials.
    resp = await app.client.get("/api/v1/collections", headers={**admin, "X-Svc-Site": site_b, "Origin": BLOG})
    assert resp.status_code == 200 and "access-control-allow-origin" not in resp.headers
    # An error answer carries the headers too, so the browser app can read the envelope.
    resp = await app.client.get("/api/v1/collections", headers={"X-Svc-Site": site, "Origin": STUDIO})
    assert resp.status_code == 401
    assert resp.headers["access-control-allow-origin"] == STUDIO


async def test_no_origin_no_cors_headers_but_vary(cors):
    app, admin, (site, _b) = cors
    resp = await app.client.get("/api/v1/collections", headers={**admin, "X-Svc-Site": site})
    assert "access-control-allow-origin" not in resp.headers
    assert "Origin" in resp.headers["vary"]
    resp = await app.client.get("/api/v1/collections", headers={**admin, "X-Svc-Site": site,
                                                                "Origin": "https://evil.example.net"})
    assert resp.status_code == 200 and "access-control-allow-origin" not in resp.headers


@pytest.mark.parametrize(("value", "expected"), [
    ("https://Example.com", "https://example.com"),
    ("https://example.com:443/a/b?c", "https://example.com"),
    ("http://example.com:80", "http://example.com"),
    ("http://example.com:8080", "http://example.com:8080"),
    ("example.com", "https://example.com"),
    ("https://[::1]:8443", "https://[::1]:8443"),
    ("ftp://example.com", None),
    ("https://user@example.com", None),
    ("https://example.com:99999", None),
    ("null", None),
    ("", None),
    (None, None),
])
def test_normalize_origin(value, expected):
    assert normalize_origin(value) == expected


async def test_websocket_only_routes_stay_out_of_openapi(cors):
    app, _admin, _sites = cors
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert "/api/v1/live-test/news" in paths  # an SSE route is a GET
    assert "/api/v1/live-test/echo" not in paths


@pytest.mark.parametrize("value", ["*", "app.example.com", "ftp://files.example.com", "https://a.example.com, *"])
def test_a_bad_cors_origin_stops_the_start(value):
    from kernel.base.settings import Settings, SettingsError

    with pytest.raises(SettingsError, match="SVC_CORS_ORIGINS"):
        Settings.from_env(environ={"SVC_CORS_ORIGINS": value})
