"""``POST /me/change-password``: verify, policy, new hash, every old token stops working.

The tests share the module's app (kernel/testing/shared.py, the auth rate limit off), each in a
new site; the instance admin changes its password on an app of its own."""

from __future__ import annotations

import jwt
import pytest
from sqlalchemy import select

from kernel.policy.audit import audit_log
from kernel.testing import shared as testing_shared
from plugins.accounts.tables import users

svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, shared_site = testing_shared.site, testing_shared.login_shared_site

URL = "/api/v1/me/change-password"
NEW = "brand-new-password-2"


def bearer(token: str, site: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **({"X-Svc-Site": site} if site else {})}


async def password_changes(svc_app) -> list:
    """Every ``user.password_changed`` record of the app (each site's)."""
    async with svc_app.kernel.db.connect() as conn:
        return (await conn.execute(select(audit_log).where(audit_log.c.action == "user.password_changed"))
                ).mappings().all()


async def test_change_password_ends_old_tokens_and_keeps_this_device(svc_app, site, make_member, login_as):
    client = svc_app.client
    earlier = {a["id"] for a in await password_changes(svc_app)}  # the module's other tests'
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
    audit = [a for a in await password_changes(svc_app) if a["id"] not in earlier]
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


async def test_the_instance_admin_can_change_its_password(make_app):
    app = await make_app()  # its own: the instance admin's password is the instance's
    client, admin_headers = app.client, {"Authorization": f"Bearer {await app.login()}"}
    resp = await client.post(URL, json={"currentPassword": "admin-password-1", "newPassword": NEW},
                             headers=admin_headers)
    assert resp.status_code == 200
    assert (await client.get("/api/v1/auth/me", headers=admin_headers)).status_code == 401
