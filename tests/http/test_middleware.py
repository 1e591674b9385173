"""Request id, site resolution and principal resolution."""

from __future__ import annotations

import re

from kernel.testing import shared as testing_shared

# Every test but the subdomain's (a setting of its own) writes nothing: they share the module's
# app (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def test_request_id_generated_and_echoed(client):
    resp = await client.get("/api/v1/openapi.json")
    assert re.fullmatch(r"[0-9a-f]{32}", resp.headers["X-Request-Id"])
    resp = await client.get("/api/v1/openapi.json", headers={"X-Request-Id": "abc-123"})
    assert resp.headers["X-Request-Id"] == "abc-123"


async def test_malformed_request_id_is_replaced(client):
    resp = await client.get("/api/v1/openapi.json", headers={"X-Request-Id": "bad id\twith spaces"})
    assert resp.headers["X-Request-Id"] != "bad id\twith spaces"


async def test_request_id_on_errors(client):
    resp = await client.get("/api/v1/nowhere", headers={"X-Request-Id": "r-1"})
    assert resp.status_code == 404
    assert resp.headers["X-Request-Id"] == "r-1"


async def test_unknown_site_is_site_not_found(client, admin_headers):
    resp = await client.get("/api/v1/auth/me", headers={**admin_headers, "X-Svc-Site": "no-such-site"})
    assert resp.status_code == 404
    assert resp.json()["errors"][0]["code"] == "SITE_NOT_FOUND"


async def test_site_with_bad_characters_is_site_not_found(client, admin_headers):
    resp = await client.get("/api/v1/auth/me", headers={**admin_headers, "X-Svc-Site": "../etc"})
    assert resp.json()["errors"][0]["code"] == "SITE_NOT_FOUND"


async def test_site_by_subdomain(make_app):
    app = await make_app(base_domain="example.com")
    token = await app.login()
    resp = await app.client.post("/api/v1/sites", json={"id": "blog", "name": "Blog"},
                                 headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 201
    login = await app.client.post("/api/v1/auth/login", json={"email": "admin@example.com",
                                                              "password": "admin-password-1"},
                                  headers={"Host": "nosuch.example.com"})
    assert login.status_code == 404
    assert login.json()["errors"][0]["code"] == "SITE_NOT_FOUND"
    login = await app.client.post("/api/v1/auth/login", json={"email": "admin@example.com",
                                                              "password": "admin-password-1"},
                                  headers={"Host": "blog.example.com"})
    assert login.status_code == 200


async def test_bearer_route_without_token_is_unauthenticated(client):
    resp = await client.get("/api/v1/auth/me")
    assert resp.status_code == 401
    assert resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"


async def test_non_bearer_scheme_is_unauthenticated(client):
    resp = await client.get("/api/v1/auth/me", headers={"Authorization": "Basic Zm9vOmJhcg=="})
    assert resp.status_code == 401
