"""Minimal auth of the kernel issue: the instance admin, login, bearer verification.

The tests share the module's app (kernel/testing/shared.py, the auth rate limit off); the members
they make have addresses of their own. The first start (bootstrap) takes an app of its own."""

from __future__ import annotations

import base64
import json
import time
import uuid

import jwt
import pytest

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, JWT_SECRET
from kernel.testing import shared as testing_shared
from plugins.accounts import service

svc_app, admin_headers, admin_token = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.admin_token
site, shared_site = testing_shared.site, testing_shared.login_shared_site


async def test_login_returns_token_and_profile(client):
    resp = await client.post("/api/v1/auth/login", json={"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD})
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert set(data["user"]) == {"id", "email", "firstName", "lastName", "avatar"}
    assert data["user"]["email"] == ADMIN_EMAIL
    assert data["expiresIn"] > 0
    assert "hash" not in resp.text and "argon2" not in resp.text


async def test_login_email_is_case_insensitive(client):
    resp = await client.post("/api/v1/auth/login", json={"email": ADMIN_EMAIL.upper(), "password": ADMIN_PASSWORD})
    assert resp.status_code == 200


@pytest.mark.parametrize("body", [
    {"email": ADMIN_EMAIL, "password": "wrong"},
    {"email": "nobody@example.com", "password": ADMIN_PASSWORD},
])
async def test_wrong_credentials_are_invalid_credentials(client, body):
    resp = await client.post("/api/v1/auth/login", json=body)
    assert resp.status_code == 401
    assert resp.json()["errors"][0]["code"] == "INVALID_CREDENTIALS"
    assert resp.json()["errors"][0]["message"] == "Wrong email or password"


@pytest.mark.parametrize("body", [{}, {"email": ADMIN_EMAIL}, {"email": 5, "password": "x"},
                                  {"email": ADMIN_EMAIL, "password": ["x"]},
                                  {"email": ADMIN_EMAIL, "password": "x" * 5000}])
async def test_malformed_login_is_validation_failed(client, body):
    resp = await client.post("/api/v1/auth/login", json=body)
    assert resp.status_code == 400
    assert resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"


async def test_me_with_token(client, admin_headers):
    resp = await client.get("/api/v1/auth/me", headers=admin_headers)
    assert resp.status_code == 200 and resp.json()["data"]["email"] == ADMIN_EMAIL


def _claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


async def test_expired_token_is_token_expired(client, admin_token):
    claims = {**_claims(admin_token), "exp": int(time.time()) - 10, "iat": int(time.time()) - 100}
    token = jwt.encode(claims, JWT_SECRET, algorithm="HS256")
    resp = await client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "TOKEN_EXPIRED"


async def test_tampered_token_is_unauthenticated(client, admin_token):
    head, payload, sig = admin_token.split(".")
    claims = _claims(admin_token)
    claims["sub"] = "someone-else"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    for token in (f"{head}.{forged}.{sig}", f"{head}.{payload}.{sig[:-4]}AAAA", "garbage", "a.b.c"):
        resp = await client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
        assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "UNAUTHENTICATED", token


async def test_alg_none_and_wrong_secret_are_rejected(client, admin_token):
    claims = _claims(admin_token)
    none_token = jwt.encode(claims, None, algorithm="none")
    other = jwt.encode(claims, "another-secret-another-secret-another-secret", algorithm="HS256")
    for token in (none_token, other):
        resp = await client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
        assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"


async def test_token_of_unknown_issuer_is_rejected(client, admin_token):
    claims = {**_claims(admin_token), "iss": "https://idp.example.com"}
    token = jwt.encode(claims, JWT_SECRET, algorithm="HS256")
    resp = await client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 401


async def make_member(svc_app, email, password, site, role="subscriber"):
    from plugins.access import api as access_api

    async with svc_app.kernel.db.begin() as conn:
        user_id = await service.create_user(svc_app.kernel, conn, email=email, password=password)
        role_row = await access_api.role_by_system_key(conn, site, role)
        await access_api.set_membership(conn, site, user_id, role_row["id"])
    return user_id


async def test_user_token_is_bound_to_its_site(svc_app, admin_headers, site):
    email = f"ed-{uuid.uuid4().hex[:8]}@example.com"
    await make_member(svc_app, email, "editor-pass-1", site)
    token = await svc_app.login(email, "editor-pass-1", site=site)
    assert _claims(token)["site"] == site
    headers = {"Authorization": f"Bearer {token}"}
    assert (await svc_app.client.get("/api/v1/auth/me", headers={**headers, "X-Svc-Site": site})).status_code == 200
    resp = await svc_app.client.get("/api/v1/auth/me", headers={**headers, "X-Svc-Site": "default"})
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"
    # and a non-admin can never reach the instance-admin routes
    resp = await svc_app.client.get("/api/v1/sites", headers=headers)
    assert resp.status_code == 403 and resp.json()["errors"][0]["code"] == "PERMISSION_DENIED"


async def test_suspended_user_cannot_log_in_and_token_stops_working(svc_app):
    from sqlalchemy import update

    from plugins.accounts.tables import users

    email = f"s-{uuid.uuid4().hex[:8]}@example.com"
    user_id = await make_member(svc_app, email, "pass-12345", "default")
    token = await svc_app.login(email, "pass-12345", site="default")
    async with svc_app.kernel.db.begin() as conn:
        await conn.execute(update(users).where(users.c.id == user_id).values(status="suspended"))
    resp = await svc_app.client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 401
    resp = await svc_app.client.post("/api/v1/auth/login", json={"email": email, "password": "pass-12345"},
                                     headers={"X-Svc-Site": "default"})
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "INVALID_CREDENTIALS"


async def test_bootstrap_with_generated_password_prints_it_once(make_app, capsys):
    app = await make_app(bare=True, admin_password="", env={"SVC_ADMIN_EMAIL": "boss@example.com"})
    out = capsys.readouterr().out
    assert "boss@example.com" in out
    password = out.strip().rsplit(" ", 1)[-1]
    assert len(password) >= 16
    await app.login("boss@example.com", password)
