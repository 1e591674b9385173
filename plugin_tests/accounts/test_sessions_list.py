"""``/me/sessions`` and the admin's ``/users/{id}/sessions`` and ``/sessions/{id}``.

The tests share the module's app (kernel/testing/shared.py, the auth rate limit off), each in new
sites of its own."""

from __future__ import annotations

from collections import Counter

import jwt
from sqlalchemy import select

from kernel.policy.audit import audit_log
from kernel.testing import shared as testing_shared

REFRESH = "/api/v1/auth/refresh"
MINE = "/api/v1/me/sessions"
SESSION_KEYS = {"id", "userId", "siteId", "createdAt", "lastUsedAt", "expiresAt", "userAgent", "ip", "current"}

svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b, shared_site = testing_shared.site, testing_shared.site_b, testing_shared.login_shared_site


def sid(token: str) -> str:
    return jwt.decode(token, options={"verify_signature": False})["sid"]


def bearer(token: str, site: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **({"X-Svc-Site": site} if site else {})}


async def refresh_status(client, refresh_token: str) -> int:
    return (await client.post(REFRESH, json={"refreshToken": refresh_token})).status_code


async def test_my_sessions_are_listed_redacted(client, site, make_member, login_as):
    member = await make_member(site)
    first = await login_as(member.email, site=site)
    second = await login_as(member.email, site=site)
    resp = await client.get(MINE, headers={**bearer(second["token"], site), "User-Agent": "pytest-agent"})
    assert resp.status_code == 200, resp.text
    sessions = resp.json()["data"]
    assert {s["id"] for s in sessions} == {sid(first["token"]), sid(second["token"])}
    assert all(set(s) == SESSION_KEYS and s["siteId"] == site and s["userId"] == member.id for s in sessions)
    assert [s["current"] for s in sessions if s["id"] == sid(second["token"])] == [True]
    assert [s["current"] for s in sessions if s["id"] == sid(first["token"])] == [False]
    body = resp.text
    assert first["refreshToken"] not in body and second["refreshToken"] not in body and "hash" not in body.lower()


async def test_rotation_keeps_one_session_per_family(client, site, make_member, login_as):
    member = await make_member(site)
    data = await login_as(member.email, site=site)
    rotated = (await client.post(REFRESH, json={"refreshToken": data["refreshToken"]})).json()["data"]
    sessions = (await client.get(MINE, headers=bearer(rotated["token"]))).json()["data"]
    assert [s["id"] for s in sessions] == [sid(data["token"])] and sessions[0]["current"]


async def revocations(svc_app) -> list:
    """Every ``session.revoked`` record of the app (each site's)."""
    async with svc_app.kernel.db.connect() as conn:
        rows = (await conn.execute(select(audit_log).where(audit_log.c.action == "session.revoked"))).mappings().all()
    return [(r["target_id"], r["site_id"], r["actor_id"]) for r in rows]


async def test_revoke_one_of_my_sessions(svc_app, site, make_member, login_as):
    client = svc_app.client
    earlier = await revocations(svc_app)  # the module's other tests' (the app is shared)
    member = await make_member(site)
    keep = await login_as(member.email, site=site)
    drop = await login_as(member.email, site=site)
    resp = await client.delete(f"{MINE}/{sid(drop['token'])}", headers=bearer(keep["token"]))
    assert resp.status_code == 204 and resp.content == b""
    assert await refresh_status(client, drop["refreshToken"]) == 401
    assert await refresh_status(client, keep["refreshToken"]) == 200
    again = await client.delete(f"{MINE}/{sid(drop['token'])}", headers=bearer(keep["token"]))
    assert again.status_code == 404 and again.json()["errors"][0]["code"] == "RECORD_NOT_FOUND"
    assert (await client.delete(f"{MINE}/nope", headers=bearer(keep["token"]))).status_code == 404
    now = await revocations(svc_app)
    assert Counter(now) == Counter(earlier) + Counter([(sid(drop["token"]), site, member.id)])


async def test_user_cannot_revoke_another_users_session(client, site, make_member, login_as):
    alice, bob = await make_member(site), await make_member(site)
    a = await login_as(alice.email, site=site)
    b = await login_as(bob.email, site=site)
    resp = await client.delete(f"{MINE}/{sid(b['token'])}", headers=bearer(a["token"], site))
    assert resp.status_code == 404
    assert await refresh_status(client, b["refreshToken"]) == 200
    listed = (await client.get(MINE, headers=bearer(a["token"]))).json()["data"]
    assert sid(b["token"]) not in [s["id"] for s in listed]


async def test_revoke_all_my_sessions(client, site, make_member, login_as):
    member = await make_member(site)
    one = await login_as(member.email, site=site)
    two = await login_as(member.email, site=site)
    other = await make_member(site)
    theirs = await login_as(other.email, site=site)
    assert (await client.delete(MINE, headers=bearer(one["token"]))).status_code == 204
    assert await refresh_status(client, one["refreshToken"]) == 401
    assert await refresh_status(client, two["refreshToken"]) == 401
    assert await refresh_status(client, theirs["refreshToken"]) == 200
    # Their access tokens ended with them (session_live.py), the one that asked too.
    assert (await client.get(MINE, headers=bearer(one["token"]))).status_code == 401
    assert (await client.get(MINE, headers=bearer(theirs["token"]))).status_code == 200


async def test_my_sessions_need_a_user(client, admin_headers, site):
    assert (await client.get(MINE)).status_code == 401
    assert (await client.delete(MINE)).status_code == 401
    assert (await client.get(MINE, headers={"Authorization": "Bearer nope"})).status_code == 401


async def test_admin_lists_and_revokes_member_sessions(client, site, make_member, login_as):
    admin = await make_member(site, role="admin")
    member = await make_member(site)
    admin_token = (await login_as(admin.email, site=site))["token"]
    data = await login_as(member.email, site=site)
    url = f"/api/v1/users/{member.id}/sessions"
    listed = await client.get(url, headers=bearer(admin_token, site))
    assert listed.status_code == 200, listed.text
    assert [s["id"] for s in listed.json()["data"]] == [sid(data["token"])]
    resp = await client.delete(f"/api/v1/sessions/{sid(data['token'])}", headers=bearer(admin_token, site))
    assert resp.status_code == 204
    assert await refresh_status(client, data["refreshToken"]) == 401
    assert (await client.delete(f"/api/v1/sessions/{sid(data['token'])}",
                                headers=bearer(admin_token, site))).status_code == 404


async def test_instance_admin_sees_and_revokes_the_sessions_of_the_site_it_names(client, site_headers, site,
                                                                                  make_member, login_as):
    member = await make_member(site)
    first = await login_as(member.email, site=site)
    await login_as(member.email, site=site)
    resp = await client.get(f"/api/v1/users/{member.id}/sessions", headers=site_headers)
    assert resp.status_code == 200 and len(resp.json()["data"]) == 2
    assert (await client.get("/api/v1/users/nobody/sessions", headers=site_headers)).status_code == 404
    assert (await client.delete(f"/api/v1/sessions/{sid(first['token'])}", headers=site_headers)).status_code == 204
    assert await refresh_status(client, first["refreshToken"]) == 401


async def test_instance_admin_cannot_reach_another_sites_sessions_under_a_sites_header(
        client, admin_headers, site, site_b, make_member, login_as):
    """The spec lists ``/users/{id}/sessions`` and ``DELETE /sessions/{id}`` among the site-admin
    routes, and the instance admin is an admin of each site through that site's routes: under
    B's ``X-Svc-Site``, a session bound to A is 404 ``RECORD_NOT_FOUND`` and stays live (it was
    listed and revoked before, on purpose)."""
    in_b = {**admin_headers, "X-Svc-Site": site_b}
    member_a = await make_member(site)
    data = await login_as(member_a.email, site=site)
    listed = await client.get(f"/api/v1/users/{member_a.id}/sessions", headers=in_b)
    assert listed.status_code == 404 and listed.json()["errors"][0]["code"] == "RECORD_NOT_FOUND"
    revoked = await client.delete(f"/api/v1/sessions/{sid(data['token'])}", headers=in_b)
    assert revoked.status_code == 404 and revoked.json()["errors"][0] == {
        "code": "RECORD_NOT_FOUND", "message": "No such session", "extensions": {"code": "RECORD_NOT_FOUND"}}
    assert await refresh_status(client, data["refreshToken"]) == 200
    # A member of both sites: under B's header, only the session bound to B.
    both = await make_member([site, site_b])
    a_session = await login_as(both.email, site=site)
    b_session = await login_as(both.email, site=site_b)
    seen = (await client.get(f"/api/v1/users/{both.id}/sessions", headers=in_b)).json()["data"]
    assert [s["id"] for s in seen] == [sid(b_session["token"])]
    assert (await client.delete(f"/api/v1/sessions/{sid(a_session['token'])}", headers=in_b)).status_code == 404
    assert await refresh_status(client, a_session["refreshToken"]) == 200
    # Under A's header, A's session is the instance admin's to end.
    in_a = {**admin_headers, "X-Svc-Site": site}
    assert (await client.delete(f"/api/v1/sessions/{sid(a_session['token'])}", headers=in_a)).status_code == 204
    assert await refresh_status(client, a_session["refreshToken"]) == 401


async def test_admin_routes_refuse_non_admins(client, site, make_member, login_as):
    member = await make_member(site)
    data = await login_as(member.email, site=site)
    headers = bearer(data["token"], site)
    assert (await client.get(f"/api/v1/users/{member.id}/sessions", headers=headers)).status_code == 403
    assert (await client.delete(f"/api/v1/sessions/{sid(data['token'])}", headers=headers)).status_code == 403
    no_site = await client.get(f"/api/v1/users/{member.id}/sessions", headers=bearer(data["token"]))
    assert no_site.status_code == 400


async def test_site_admin_cannot_reach_another_sites_sessions(client, site, site_b, make_member, login_as):
    admin_b = await make_member(site_b, role="admin")
    token_b = (await login_as(admin_b.email, site=site_b))["token"]
    member_a = await make_member(site)
    data = await login_as(member_a.email, site=site)
    listed = await client.get(f"/api/v1/users/{member_a.id}/sessions", headers=bearer(token_b, site_b))
    assert listed.status_code == 404
    revoked = await client.delete(f"/api/v1/sessions/{sid(data['token'])}", headers=bearer(token_b, site_b))
    assert revoked.status_code == 404
    assert await refresh_status(client, data["refreshToken"]) == 200
    # A member of both sites: site B's admin sees only the session bound to site B.
    both = await make_member([site, site_b])
    in_a = await login_as(both.email, site=site)
    in_b = await login_as(both.email, site=site_b)
    seen = (await client.get(f"/api/v1/users/{both.id}/sessions", headers=bearer(token_b, site_b))).json()["data"]
    assert [s["id"] for s in seen] == [sid(in_b["token"])]
    assert (await client.delete(f"/api/v1/sessions/{sid(in_a['token'])}",
                                headers=bearer(token_b, site_b))).status_code == 404
