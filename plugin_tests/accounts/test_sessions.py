"""Login, refresh rotation, reuse detection, logout, the refresh cookie and site binding.

The tests share the module's app (kernel/testing/shared.py, the auth rate limit off), each in new
sites; the three that read the whole audit log for their records keep an app of their own (``own``)."""

from __future__ import annotations

import hashlib

import jwt
import pytest
import pytest_asyncio
from sqlalchemy import select, update

from kernel.policy.audit import audit_log
from kernel.testing import MEMBER_PASSWORD, new_member
from kernel.testing import shared as testing_shared
from plugins.accounts.tables import refresh_tokens

LOGIN = "/api/v1/auth/login"
REFRESH = "/api/v1/auth/refresh"
LOGOUT = "/api/v1/auth/logout"
ME = "/api/v1/auth/me"

svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b, shared_site = testing_shared.site, testing_shared.site_b, testing_shared.login_shared_site
admin_token = testing_shared.admin_token


@pytest_asyncio.fixture
async def own(make_app):
    """An app of the test's own and a new site of it: ``(app, site)``."""
    app, site_id, _ = await testing_shared.app_with_site(make_app)
    return app, site_id


async def log_in(app, email: str, site: str) -> dict:
    """A member's login to ``site`` on ``app``: the answer's ``data``."""
    resp = await app.client.post(LOGIN, json={"email": email, "password": MEMBER_PASSWORD}, headers={"X-Svc-Site": site})
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


def claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def bearer(token: str, site: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}"}
    if site:
        headers["X-Svc-Site"] = site
    return headers


def cookie(token: str, header: bool = True) -> dict[str, str]:
    headers = {"Cookie": f"svc_refresh={token}"}
    if header:
        headers["X-Svc-Refresh"] = "1"
    return headers


def set_cookie_header(resp) -> str:
    values = [v for v in resp.headers.get_list("set-cookie") if v.startswith("svc_refresh=")]
    assert len(values) == 1, resp.headers
    return values[0]


async def audit_actions(svc_app, action: str) -> list:
    async with svc_app.kernel.db.connect() as conn:
        return (await conn.execute(select(audit_log).where(audit_log.c.action == action))).mappings().all()


async def test_login_answers_refresh_token_and_cookie(client, site, make_member):
    member = await make_member(site)
    resp = await client.post(LOGIN, json={"email": member.email, "password": member.password},
                             headers={"X-Svc-Site": site})
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert set(data) == {"token", "refreshToken", "expiresIn", "user"}
    assert data["user"]["id"] == member.id and len(data["refreshToken"]) >= 43
    header = set_cookie_header(resp)
    lowered = header.lower()
    assert f"svc_refresh={data['refreshToken']}" in header
    assert "httponly" in lowered and "path=/api/v1/auth" in lowered and "samesite=lax" in lowered
    assert "secure" in lowered and "max-age=2592000" in lowered
    assert claims(data["token"])["site"] == site and claims(data["token"])["sid"]


async def test_cookie_settings_are_honoured(make_app):
    app = await make_app(refresh_cookie_samesite="strict", refresh_cookie_domain="cms.example.test",
                         refresh_cookie_secure=False, env={"SVC_REFRESH_TOKEN_TTL": "3600"})
    resp = await app.client.post(LOGIN, json={"email": "admin@example.com", "password": "admin-password-1"})
    lowered = set_cookie_header(resp).lower()
    assert "samesite=strict" in lowered and "domain=cms.example.test" in lowered
    assert "secure" not in lowered and "max-age=3600" in lowered


async def test_refresh_tokens_are_stored_hashed(svc_app, admin_token):
    data = (await svc_app.client.post(LOGIN, json={"email": "admin@example.com",
                                                   "password": "admin-password-1"})).json()["data"]
    async with svc_app.kernel.db.connect() as conn:
        rows = (await conn.execute(select(refresh_tokens))).mappings().all()
    assert rows
    for row in rows:
        assert data["refreshToken"] not in [str(v) for v in row.values()]
    wanted = hashlib.sha256(data["refreshToken"].encode()).hexdigest()
    assert wanted in [r["token_hash"] for r in rows]


async def test_login_needs_membership_of_the_site(own):
    svc_app, site = own
    outsider = await new_member(svc_app, None, login=False)
    wrong = await svc_app.client.post(LOGIN, json={"email": outsider.email, "password": "nope-nope-nope"},
                                      headers={"X-Svc-Site": site})
    not_member = await svc_app.client.post(LOGIN, json={"email": outsider.email, "password": outsider.password},
                                           headers={"X-Svc-Site": site})
    unknown = await svc_app.client.post(LOGIN, json={"email": "ghost@example.com", "password": "whatever-1"},
                                        headers={"X-Svc-Site": site})
    for resp in (wrong, not_member, unknown):
        assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "INVALID_CREDENTIALS"
    assert wrong.json()["errors"][0]["message"] == not_member.json()["errors"][0]["message"]
    failures = await audit_actions(svc_app, "auth.login_failed")
    by_reason = {f["details"]["reason"]: f for f in failures}
    assert by_reason["not_member"]["target_id"] == outsider.id and by_reason["not_member"]["site_id"] == site
    assert by_reason["unknown_email"]["target_type"] == "email" and by_reason["unknown_email"]["target_id"] is None
    assert set(by_reason) == {"wrong_password", "not_member", "unknown_email"}
    for secret in ("nope-nope-nope", "whatever-1", outsider.password):
        assert all(secret not in str(dict(f)) for f in failures)
    siteless = await svc_app.client.post(LOGIN, json={"email": outsider.email, "password": outsider.password})
    # Only the instance admin logs in without a site; a member's token is always site-bound.
    assert siteless.status_code == 400 and siteless.json()["errors"][0]["path"] == ["headers", "X-Svc-Site"]
    assert not [r for r in await audit_actions(svc_app, "auth.login") if r["target_id"] == outsider.id]


async def test_refresh_with_body_rotates(client, site, make_member, login_as):
    member = await make_member(site)
    first = await login_as(member.email, site=site)
    resp = await client.post(REFRESH, json={"refreshToken": first["refreshToken"]}, headers={"X-Svc-Site": site})
    assert resp.status_code == 200, resp.text
    second = resp.json()["data"]
    assert second["refreshToken"] != first["refreshToken"] and set_cookie_header(resp)
    assert claims(second["token"])["sid"] == claims(first["token"])["sid"]
    assert claims(second["token"])["site"] == site
    me = await client.get(ME, headers=bearer(second["token"], site))
    assert me.status_code == 200 and me.json()["data"]["id"] == member.id
    third = await client.post(REFRESH, json={"refreshToken": second["refreshToken"]})
    assert third.status_code == 200


async def test_reuse_of_a_rotated_token_revokes_the_family(own):
    svc_app, site = own
    client = svc_app.client
    member = await new_member(svc_app, site, login=False)
    first = await log_in(svc_app, member.email, site)
    other = await log_in(svc_app, member.email, site)  # another family: must survive
    second = (await client.post(REFRESH, json={"refreshToken": first["refreshToken"]})).json()["data"]
    reuse = await client.post(REFRESH, json={"refreshToken": first["refreshToken"]})
    assert reuse.status_code == 401 and reuse.json()["errors"][0]["code"] == "UNAUTHENTICATED"
    newest = await client.post(REFRESH, json={"refreshToken": second["refreshToken"]})
    assert newest.status_code == 401
    assert (await client.post(REFRESH, json={"refreshToken": other["refreshToken"]})).status_code == 200
    records = await audit_actions(svc_app, "auth.refresh_reuse")
    assert [(r["site_id"], r["target_id"]) for r in records] == [(site, claims(first["token"])["sid"])]


async def test_refresh_with_cookie_needs_the_header(client, admin_token):
    data = (await client.post(LOGIN, json={"email": "admin@example.com",
                                           "password": "admin-password-1"})).json()["data"]
    refused = await client.post(REFRESH, headers=cookie(data["refreshToken"], header=False))
    assert refused.status_code == 403 and "X-Svc-Refresh" in refused.json()["errors"][0]["message"]
    wrong_value = await client.post(REFRESH, headers={**cookie(data["refreshToken"]), "X-Svc-Refresh": "yes"})
    assert wrong_value.status_code == 403
    resp = await client.post(REFRESH, headers=cookie(data["refreshToken"]))
    assert resp.status_code == 200, resp.text
    assert set_cookie_header(resp).startswith(f"svc_refresh={resp.json()['data']['refreshToken']}")


@pytest.mark.parametrize("body, status", [
    ({"refreshToken": 5}, 400), ({"refreshToken": "x" * 600}, 400), ({"other": "x"}, 400),
    ([1, 2], 400), ("text", 400), ({}, 401), ({"refreshToken": "not-a-token"}, 401), ({"refreshToken": ""}, 401),
])
async def test_refresh_bad_input(client, body, status):
    resp = await client.post(REFRESH, json=body)
    assert resp.status_code == status, resp.text
    assert "errors" in resp.json()


async def test_refresh_malformed_json_and_no_body(client):
    garbage = await client.post(REFRESH, content=b"{nope", headers={"Content-Type": "application/json"})
    assert garbage.status_code == 400
    empty = await client.post(REFRESH)
    assert empty.status_code == 401


async def test_refresh_is_bound_to_the_login_site(client, site, site_b, make_member, login_as):
    member = await make_member([site, site_b])
    data = await login_as(member.email, site=site)
    wrong = await client.post(REFRESH, json={"refreshToken": data["refreshToken"]}, headers={"X-Svc-Site": site_b})
    assert wrong.status_code == 401 and "another site" in wrong.json()["errors"][0]["message"]
    logout_b = await client.post(LOGOUT, json={"refreshToken": data["refreshToken"]}, headers={"X-Svc-Site": site_b})
    assert logout_b.status_code == 401
    right = await client.post(REFRESH, json={"refreshToken": data["refreshToken"]}, headers={"X-Svc-Site": site})
    assert right.status_code == 200
    token = right.json()["data"]["token"]
    assert (await client.get(ME, headers=bearer(token, site_b))).status_code == 401


async def test_refresh_fails_when_membership_ends_or_token_expires(svc_app, site, make_member, login_as):
    from plugins.access.api import remove_membership

    member = await make_member(site)
    data = await login_as(member.email, site=site)
    async with svc_app.kernel.db.begin() as conn:
        await remove_membership(conn, site, member.id)
    assert (await svc_app.client.post(REFRESH, json={"refreshToken": data["refreshToken"]})).status_code == 401
    admin = (await svc_app.client.post(LOGIN, json={"email": "admin@example.com",
                                                    "password": "admin-password-1"})).json()["data"]
    digest = hashlib.sha256(admin["refreshToken"].encode()).hexdigest()
    async with svc_app.kernel.db.begin() as conn:
        await conn.execute(update(refresh_tokens).where(refresh_tokens.c.token_hash == digest)
                           .values(expires_at=refresh_tokens.c.created_at))
    expired = await svc_app.client.post(REFRESH, json={"refreshToken": admin["refreshToken"]})
    assert expired.status_code == 401 and "expired" in expired.json()["errors"][0]["message"]


async def test_logout_revokes_and_clears_the_cookie(own):
    svc_app, site = own
    client = svc_app.client
    member = await new_member(svc_app, site, login=False)
    data = await log_in(svc_app, member.email, site)
    resp = await client.post(LOGOUT, json={"refreshToken": data["refreshToken"]}, headers={"X-Svc-Site": site})
    assert resp.status_code == 204 and resp.content == b""
    header = set_cookie_header(resp).lower()
    assert header.startswith("svc_refresh=;") or header.startswith('svc_refresh="";')
    # Expired in the past (Falcon omits a zero Max-Age): the browser drops its copy.
    assert "expires=thu, 01 jan 1970" in header and "path=/api/v1/auth" in header and "httponly" in header
    assert (await client.post(REFRESH, json={"refreshToken": data["refreshToken"]})).status_code == 401
    assert [r["target_id"] for r in await audit_actions(svc_app, "auth.logout")] == [claims(data["token"])["sid"]]
    again = await client.post(LOGOUT, json={"refreshToken": data["refreshToken"]})
    assert again.status_code == 204  # already logged out: still clears the cookie
    assert len(await audit_actions(svc_app, "auth.logout")) == 1


async def test_logout_with_cookie(client, admin_token):
    data = (await client.post(LOGIN, json={"email": "admin@example.com",
                                           "password": "admin-password-1"})).json()["data"]
    assert (await client.post(LOGOUT, headers=cookie(data["refreshToken"], header=False))).status_code == 403
    assert (await client.post(LOGOUT, headers=cookie(data["refreshToken"]))).status_code == 204
    assert (await client.post(REFRESH, headers=cookie(data["refreshToken"]))).status_code == 401
    assert (await client.post(LOGOUT)).status_code == 204
    assert (await client.post(LOGOUT, json={"refreshToken": 3})).status_code == 400


async def test_site_deletion_removes_its_refresh_tokens(svc_app, admin_headers, site, make_member, login_as):
    member = await make_member(site)
    await login_as(member.email, site=site)
    resp = await svc_app.client.delete(f"/api/v1/sites/{site}", headers=admin_headers)
    assert resp.status_code == 204, resp.text
    async with svc_app.kernel.db.connect() as conn:
        left = (await conn.execute(select(refresh_tokens).where(refresh_tokens.c.site_id == site))).all()
    assert left == []
