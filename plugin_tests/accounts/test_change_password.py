"""``POST /me/change-password``: verify, policy, new hash, every old token stops working."""

from __future__ import annotations

import jwt
import pytest
from sqlalchemy import select

from kernel.policy.audit import audit_log
from plugins.accounts.tables import users

URL = "/api/v1/me/change-password"
NEW = "brand-new-password-2"


def bearer(token: str, site: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **({"X-Svc-Site": site} if site else {})}


async def test_change_password_ends_old_tokens_and_keeps_this_device(svc_app, site, make_member, login_as):
    client = svc_app.client
    member = await make_member(site)
    here = await login_as(member.email, site=site)
    elsewhere = await login_as(member.email, site=site)
    async with svc_app.kernel.db.connect() as conn:
        old_hash = (await conn.execute(select(users.c.password_hash).where(users.c.id == member.id))).scalar_one()
    resp = await client.post(URL, json={"currentPassword": member.password, "newPassword": NEW},
                             headers=bearer(here["token"], site))
    assert resp.status_code == 200, resp.text
    fresh = resp.json()["data"]
    assert set(fresh) == {"token", "refreshToken", "expiresIn", "user"}
    assert "svc_refresh=" in resp.headers["set-cookie"]
    for old in (here["token"], elsewhere["token"]):
        assert (await client.get("/api/v1/auth/me", headers=bearer(old, site))).status_code == 401
    for old in (here["refreshToken"], elsewhere["refreshToken"]):
        assert (await client.post("/api/v1/auth/refresh", json={"refreshToken": old})).status_code == 401
    assert (await client.get("/api/v1/auth/me", headers=bearer(fresh["token"], site))).status_code == 200
    assert jwt.decode(fresh["token"], options={"verify_signature": False})["site"] == site
    assert (await client.post("/api/v1/auth/refresh", json={"refreshToken": fresh["refreshToken"]})).status_code == 200
    await login_as(member.email, NEW, site=site)
    old_login = await client.post("/api/v1/auth/login", json={"email": member.email, "password": member.password})
    assert old_login.status_code == 401
    async with svc_app.kernel.db.connect() as conn:
        new_hash = (await conn.execute(select(users.c.password_hash).where(users.c.id == member.id))).scalar_one()
        audit = (await conn.execute(select(audit_log).where(audit_log.c.action == "user.password_changed"))
                 ).mappings().all()
    assert new_hash != old_hash and new_hash.startswith("$argon2id$") and NEW not in new_hash
    assert [(a["target_id"], a["site_id"]) for a in audit] == [(member.id, site)]
    assert NEW not in str(dict(audit[0])) and member.password not in str(dict(audit[0]))


async def test_wrong_current_password(client, site, make_member, login_as):
    member = await make_member(site)
    data = await login_as(member.email, site=site)
    resp = await client.post(URL, json={"currentPassword": "not-it-at-all", "newPassword": NEW},
                             headers=bearer(data["token"], site))
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "INVALID_CREDENTIALS"
    assert (await client.get("/api/v1/auth/me", headers=bearer(data["token"], site))).status_code == 200


@pytest.mark.parametrize("body, path", [
    ({"currentPassword": "member-password-1", "newPassword": "short"}, "newPassword"),
    ({"currentPassword": "member-password-1", "newPassword": "x" * 1025}, "newPassword"),
    ({"currentPassword": "member-password-1", "newPassword": 12345678}, "newPassword"),
    ({"currentPassword": "member-password-1"}, "newPassword"),
    ({"newPassword": NEW}, "currentPassword"),
    ({"currentPassword": ["x"], "newPassword": NEW}, "currentPassword"),
    ({"currentPassword": "member-password-1", "newPassword": NEW, "extra": 1}, "extra"),
    ([], "body"),
])
async def test_bad_input(client, site, make_member, login_as, body, path):
    member = await make_member(site)
    data = await login_as(member.email, site=site)
    resp = await client.post(URL, json=body, headers=bearer(data["token"], site))
    assert resp.status_code == 400, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "VALIDATION_FAILED" and error["path"] == [path]


async def test_needs_a_logged_in_user(client):
    assert (await client.post(URL, json={"currentPassword": "a", "newPassword": NEW})).status_code == 401


async def test_the_instance_admin_can_change_its_password(client, admin_headers):
    resp = await client.post(URL, json={"currentPassword": "admin-password-1", "newPassword": NEW},
                             headers=admin_headers)
    assert resp.status_code == 200
    assert (await client.get("/api/v1/auth/me", headers=admin_headers)).status_code == 401
