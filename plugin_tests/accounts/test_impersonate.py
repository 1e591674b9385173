"""``POST /users/{user_id}/impersonate``: admin only, members of the site only, audited.

The tests share the module's app (kernel/testing/shared.py, the auth rate limit off), each in new
sites; an audit check reads the records its test added (``before``: the app's earlier ones)."""

from __future__ import annotations

import uuid

import jwt
from sqlalchemy import select

from kernel.policy.audit import audit_log
from kernel.testing import shared as testing_shared

svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, shared_site = testing_shared.site, testing_shared.login_shared_site


def bearer(token: str, site: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **({"X-Svc-Site": site} if site else {})}


def url(user_id: str) -> str:
    return f"/api/v1/users/{user_id}/impersonate"


async def audit_of(svc_app, action: str, before: frozenset = frozenset()) -> list:
    """The app's ``action`` records (each site's), but those whose ids are in ``before``."""
    async with svc_app.kernel.db.connect() as conn:
        rows = (await conn.execute(select(audit_log).where(audit_log.c.action == action))).mappings().all()
    return [r for r in rows if r["id"] not in before]


async def audit_ids(svc_app) -> frozenset:
    """The ids of every audit record of the app so far."""
    async with svc_app.kernel.db.connect() as conn:
        return frozenset(r[0] for r in await conn.execute(select(audit_log.c.id)))


async def test_instance_admin_impersonates_a_member(svc_app, site, site_headers, make_member):
    client = svc_app.client
    before = await audit_ids(svc_app)
    member = await make_member(site)
    resp = await client.post(url(member.id), headers=site_headers)
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert set(data) == {"token", "expiresIn", "user"} and data["user"]["id"] == member.id
    assert 0 < data["expiresIn"] <= 900
    claims = jwt.decode(data["token"], options={"verify_signature": False})
    admin_id = (await client.get("/api/v1/auth/me", headers=site_headers)).json()["data"]["id"]
    assert claims["imp"] == admin_id and claims["sub"] == member.id and claims["site"] == site
    assert claims["exp"] - claims["iat"] == data["expiresIn"]
    me = await client.get("/api/v1/auth/me", headers=bearer(data["token"], site))
    assert me.status_code == 200 and me.json()["data"]["id"] == member.id
    records = await audit_of(svc_app, "user.impersonate", before)
    assert [(r["site_id"], r["actor_id"], r["target_id"]) for r in records] == [(site, admin_id, member.id)]
    # What the impersonation session does is recorded with both names.
    assert (await client.delete("/api/v1/me/sessions", headers=bearer(data["token"], site))).status_code == 204
    revoked = await audit_of(svc_app, "session.revoked", before)
    assert [(r["actor_id"], r["impersonator_id"]) for r in revoked] == [(member.id, admin_id)]


async def test_site_admin_impersonates_and_the_token_is_bound_to_the_site(client, admin_headers, site, make_member,
                                                                           login_as):
    admin = await make_member(site, role="admin")
    member = await make_member(site)
    token = (await login_as(admin.email, site=site))["token"]
    resp = await client.post(url(member.id), headers=bearer(token, site))
    assert resp.status_code == 200, resp.text
    site_b = f"s-{uuid.uuid4().hex[:10]}"
    assert (await client.post("/api/v1/sites", json={"id": site_b, "name": "B"}, headers=admin_headers)).status_code == 201
    other_site = await client.get("/api/v1/auth/me", headers=bearer(resp.json()["data"]["token"], site_b))
    assert other_site.status_code == 401


async def test_non_admin_is_refused(client, site, make_member, login_as):
    member, other = await make_member(site), await make_member(site)
    token = (await login_as(member.email, site=site))["token"]
    resp = await client.post(url(other.id), headers=bearer(token, site))
    assert resp.status_code == 403
    assert (await client.post(url(other.id), headers={"X-Svc-Site": site})).status_code == 401


async def test_target_must_be_a_member_of_the_site(client, admin_headers, site, site_headers, make_member):
    outsider = await make_member(None)
    assert (await client.post(url(outsider.id), headers=site_headers)).status_code == 404
    missing = await client.post(url("no-such-user"), headers=site_headers)
    assert missing.status_code == 404 and missing.json()["errors"][0]["code"] == "RECORD_NOT_FOUND"
    assert (await client.post(url(outsider.id), headers=admin_headers)).status_code == 400  # no site named


async def test_cross_site_target_is_not_found(svc_app, admin_headers, site, make_member, login_as):
    client = svc_app.client
    before = await audit_ids(svc_app)
    site_b = f"s-{uuid.uuid4().hex[:10]}"
    assert (await client.post("/api/v1/sites", json={"id": site_b, "name": "B"}, headers=admin_headers)).status_code == 201
    admin_b = await make_member(site_b, role="admin")
    token_b = (await login_as(admin_b.email, site=site_b))["token"]
    member_a = await make_member(site)
    assert (await client.post(url(member_a.id), headers=bearer(token_b, site_b))).status_code == 404
    # The site A header does not help: admin B is nobody's admin there.
    assert (await client.post(url(member_a.id), headers=bearer(token_b, site))).status_code == 401
    assert await audit_of(svc_app, "user.impersonate", before) == []


async def test_nobody_impersonates_the_instance_admin(client, site, site_headers, make_member, login_as):
    admin = await make_member(site, role="admin")
    token = (await login_as(admin.email, site=site))["token"]
    instance_admin = (await client.get("/api/v1/auth/me", headers=site_headers)).json()["data"]["id"]
    resp = await client.post(url(instance_admin), headers=bearer(token, site))
    assert resp.status_code == 403
    # The instance admin itself: yourself, before being the instance admin.
    resp = await client.post(url(instance_admin), headers=site_headers)
    assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["user_id"], resp.text


async def test_impersonation_session_limits(client, site, site_headers, make_member):
    member, other = await make_member(site, role="admin"), await make_member(site)
    imp = (await client.post(url(member.id), headers=site_headers)).json()["data"]["token"]
    again = await client.post(url(other.id), headers=bearer(imp, site))
    assert again.status_code == 403
    change = await client.post("/api/v1/me/change-password",
                               json={"currentPassword": member.password, "newPassword": "another-password-9"},
                               headers=bearer(imp, site))
    assert change.status_code == 403


async def test_bad_input(client, site_headers, site, make_member):
    member = await make_member(site)
    assert (await client.post(url(member.id), json={"x": 1}, headers=site_headers)).status_code == 400
    assert (await client.post(url(member.id), content=b"[", headers={**site_headers, "Content-Type":
                                                                         "application/json"})).status_code == 400
    assert (await client.post(url("x" * 500), headers=site_headers)).status_code == 404
