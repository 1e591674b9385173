"""The per-process cache of token identities (``kernel.auth.usercache``): a request with an
internal JWT reads the user once per TTL, and every change to the user's status, token version
or role is seen by the next request, on the same app and (with Redis) on every app."""

from __future__ import annotations

import asyncio

from kernel.auth.usercache import USER_CACHE

API = "/api/v1"


def user_cache(app):
    return app.kernel.site_caches[USER_CACHE.name]


async def test_a_token_reads_the_user_once(svc_app, site, make_member):
    member = await make_member(site, login=True)
    cache = user_cache(svc_app)
    assert (await svc_app.client.get(f"{API}/auth/me", headers=member.headers)).status_code == 200
    misses, hits = cache.misses, cache.hits
    for _ in range(3):
        assert (await svc_app.client.get(f"{API}/auth/me", headers=member.headers)).status_code == 200
    assert (cache.misses, cache.hits) == (misses, hits + 3)


async def test_a_suspended_users_token_is_refused_at_once(svc_app, site, site_headers, make_member):
    member = await make_member(site, login=True)
    client = svc_app.client
    assert (await client.get(f"{API}/auth/me", headers=member.headers)).status_code == 200  # cached now
    resp = await client.patch(f"{API}/users/{member.id}", json={"status": "suspended"}, headers=site_headers)
    assert resp.status_code == 200, resp.text
    resp = await client.get(f"{API}/auth/me", headers=member.headers)
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"


async def test_a_changed_passwords_old_token_is_refused(svc_app, site, make_member):
    member = await make_member(site, login=True)
    client = svc_app.client
    assert (await client.get(f"{API}/auth/me", headers=member.headers)).status_code == 200
    resp = await client.post(f"{API}/me/change-password", json={"currentPassword": member.password,
                                                                "newPassword": "brand-new-password-2"},
                             headers=member.headers)
    assert resp.status_code == 200, resp.text
    assert (await client.get(f"{API}/auth/me", headers=member.headers)).status_code == 401
    fresh = {"Authorization": f"Bearer {resp.json()['data']['token']}", "X-Svc-Site": site}
    assert (await client.get(f"{API}/auth/me", headers=fresh)).status_code == 200


async def test_a_role_change_applies_at_once(svc_app, site, site_headers, make_member):
    member = await make_member(site, login=True)
    client = svc_app.client
    assert (await client.get(f"{API}/users", headers=member.headers)).status_code == 403
    roles = (await client.get(f"{API}/roles", headers=site_headers)).json()["data"]
    admin_role = next(r["id"] for r in roles if r.get("systemKey") == "admin" or r["name"] == "Administrator")
    resp = await client.patch(f"{API}/users/{member.id}", json={"roleId": admin_role}, headers=site_headers)
    assert resp.status_code == 200, resp.text
    assert (await client.get(f"{API}/users", headers=member.headers)).status_code == 200


async def test_with_redis_another_app_sees_a_suspension_at_once(make_app, redis_url):
    env = {"SVC_REDIS_URL": redis_url}
    first = await make_app(env=env)
    second = await make_app(data_dir=make_app.base_dir / "app0", env=dict(env))
    admin = {"Authorization": f"Bearer {await first.login()}"}
    site_id = "s-usercache"
    assert (await first.client.post(f"{API}/sites", json={"id": site_id, "name": "C"},
                                    headers=admin)).status_code == 201
    resp = await first.client.post(f"{API}/users", json={"email": "c@example.com", "password": "member-password-1"},
                                   headers={**admin, "X-Svc-Site": site_id})
    assert resp.status_code == 201, resp.text
    user_id = resp.json()["data"]["id"]
    token = await second.login("c@example.com", "member-password-1", site=site_id)
    headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": site_id}
    assert (await second.client.get(f"{API}/auth/me", headers=headers)).status_code == 200  # cached in second
    assert user_cache(second).keys("")
    resp = await first.client.patch(f"{API}/users/{user_id}", json={"status": "suspended"},
                                    headers={**admin, "X-Svc-Site": site_id})
    assert resp.status_code == 200, resp.text
    for _ in range(100):  # the bus message crosses Redis: wait on it, not on a clock
        if not user_cache(second).keys(""):
            break
        await asyncio.sleep(0.02)
    assert (await second.client.get(f"{API}/auth/me", headers=headers)).status_code == 401
