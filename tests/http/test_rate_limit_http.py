"""Rate limits through HTTP: headers on limited routes, 429 RATE_LIMITED, 0 disables."""

from __future__ import annotations

import time

BODY = {"email": "admin@example.com", "password": "wrong-password"}


async def test_auth_limit_headers_and_429(make_app):
    app = await make_app(rate_limit_auth=3)
    remaining = []
    for _ in range(3):
        resp = await app.client.post("/api/v1/auth/login", json=BODY)
        assert resp.status_code == 401
        assert resp.headers["X-RateLimit-Limit"] == "3"
        remaining.append(int(resp.headers["X-RateLimit-Remaining"]))
        reset, now = int(resp.headers["X-RateLimit-Reset"]), time.time()
        # The epoch second at which the window next admits a request: now while slots remain,
        # and never more than the window (a minute) ahead.
        assert now - 1 <= reset <= now + 61
        if remaining[-1]:
            assert reset <= now + 1
    assert remaining == [2, 1, 0]
    resp = await app.client.post("/api/v1/auth/login", json=BODY)
    assert resp.status_code == 429
    assert int(resp.headers["X-RateLimit-Reset"]) <= time.time() + 61
    err = resp.json()["errors"][0]
    assert err["code"] == "RATE_LIMITED" and err["extensions"]["limit"] == 3
    assert int(resp.headers["Retry-After"]) >= 1
    assert resp.headers["X-RateLimit-Remaining"] == "0"


async def test_per_ip_limit_spans_sites(make_app):
    app = await make_app(rate_limit_auth=2)
    await app.client.post("/api/v1/auth/login", json=BODY, headers={"X-Svc-Site": "default"})
    await app.client.post("/api/v1/auth/login", json=BODY)
    resp = await app.client.post("/api/v1/auth/login", json=BODY, headers={"X-Svc-Site": "default"})
    assert resp.status_code == 429


async def test_zero_disables_a_limit(make_app):
    app = await make_app(rate_limit_auth=0)
    for _ in range(40):
        resp = await app.client.post("/api/v1/auth/login", json=BODY)
        assert resp.status_code == 401
        assert "X-RateLimit-Limit" not in resp.headers


async def test_unlimited_routes_carry_no_headers(client):
    resp = await client.get("/api/v1/openapi.json")
    assert "X-RateLimit-Limit" not in resp.headers
