"""``POST /auth/switch-site`` (docs/accounts.md#switching-sites): a member of two sites moves its
session from one to the other without its password; the old session ends; a site it is not a
member of is refused and spends nothing; the cookie path needs ``X-Svc-Refresh``; a spent token
used again revokes the moved session too (reuse); the switch is audited."""

from __future__ import annotations

import jwt
import pytest_asyncio
from sqlalchemy import select

from kernel.policy.audit import audit_log
from kernel.testing import API
from kernel.testing import shared as testing_shared

svc_app, admin_headers, site, site_b = (testing_shared.svc_app, testing_shared.admin_headers,
                                        testing_shared.site, testing_shared.site_b)
SWITCH = f"{API}/auth/switch-site"
REFRESH = f"{API}/auth/refresh"


def sid(token: str) -> str:
    return jwt.decode(token, options={"verify_signature": False})["sid"]


def code(resp) -> str:
    return resp.json()["errors"][0]["code"]


@pytest_asyncio.fixture(loop_scope="module")
async def member_of_two(svc_app, client, site, site_b, make_member):
    """A subscriber of ``site`` and an editor-less member of ``site_b``, signed in to ``site``."""
    member = await make_member([site, site_b], "subscriber", login=False)
    resp = await client.post(f"{API}/auth/login", json={"email": member.email, "password": member.password},
                             headers={"X-Svc-Site": site})
    assert resp.status_code == 200, resp.text
    return member, resp.json()["data"]


async def test_a_member_moves_its_session_to_its_other_site(svc_app, client, site, site_b, member_of_two):
    member, first = member_of_two
    resp = await client.post(SWITCH, headers={"X-Svc-Site": site_b, "Cookie": f"svc_refresh={first['refreshToken']}",
                                              "X-Svc-Refresh": "1"})
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert set(data) == {"token", "refreshToken", "expiresIn", "user"} and data["user"]["id"] == member.id
    claims = jwt.decode(data["token"], options={"verify_signature": False})
    assert claims["site"] == site_b and claims["realm"] == "frontend" and claims["sid"] == sid(first["token"])
    assert any(v.startswith(f"svc_refresh={data['refreshToken']}") for v in resp.headers.get_list("set-cookie"))
    # The new token works in B, and is refused in A (bound to B).
    bearer = {"Authorization": f"Bearer {data['token']}"}
    me = await client.get(f"{API}/auth/me", headers={**bearer, "X-Svc-Site": site_b})
    assert me.status_code == 200 and me.json()["data"]["id"] == member.id
    other = await client.get(f"{API}/auth/me", headers={**bearer, "X-Svc-Site": site})
    assert other.status_code == 401 and code(other) == "UNAUTHENTICATED"
    # A's session ended: its refresh token is spent (reused: refused), its sessions list is B's only.
    sessions = await client.get(f"{API}/me/sessions", headers={**bearer, "X-Svc-Site": site_b})
    assert [s["siteId"] for s in sessions.json()["data"]] == [site_b]
    # The new family refreshes in B as a login's would.
    again = await client.post(REFRESH, json={"refreshToken": data["refreshToken"]}, headers={"X-Svc-Site": site_b})
    assert again.status_code == 200, again.text
    async with svc_app.kernel.db.connect() as conn:
        rows = (await conn.execute(select(audit_log).where(audit_log.c.action == "auth.site_switch",
                                                           audit_log.c.site_id == site_b))).mappings().all()
    assert [(r["actor_id"], r["target_id"], r["details"]["fromSite"]) for r in rows] == \
        [(member.id, claims["sid"], site)]


async def test_a_spent_token_used_again_revokes_the_new_session(client, site, site_b, member_of_two):
    _member, first = member_of_two
    resp = await client.post(SWITCH, json={"refreshToken": first["refreshToken"]}, headers={"X-Svc-Site": site_b})
    assert resp.status_code == 200, resp.text
    new = resp.json()["data"]
    # Someone replays A's token (a stolen copy): refused, and the session that moved to B ends too.
    replay = await client.post(SWITCH, json={"refreshToken": first["refreshToken"]}, headers={"X-Svc-Site": site_b})
    assert replay.status_code == 401 and code(replay) == "UNAUTHENTICATED"
    moved = await client.post(REFRESH, json={"refreshToken": new["refreshToken"]}, headers={"X-Svc-Site": site_b})
    assert moved.status_code == 401 and code(moved) == "UNAUTHENTICATED"


async def test_a_site_it_does_not_belong_to_is_refused_and_spends_nothing(svc_app, admin_headers, client, site,
                                                                          member_of_two):
    _member, first = member_of_two
    foreign = await svc_app.create_site(admin_headers, prefix="foreign")
    resp = await client.post(SWITCH, json={"refreshToken": first["refreshToken"]}, headers={"X-Svc-Site": foreign})
    assert resp.status_code == 403 and code(resp) == "PERMISSION_DENIED"
    unknown = await client.post(SWITCH, json={"refreshToken": first["refreshToken"]}, headers={"X-Svc-Site": "no-such"})
    assert unknown.status_code == 404 and code(unknown) == "SITE_NOT_FOUND"
    # Nothing was spent: the session still refreshes in A.
    still = await client.post(REFRESH, json={"refreshToken": first["refreshToken"]}, headers={"X-Svc-Site": site})
    assert still.status_code == 200, still.text


async def test_bad_requests_get_the_envelope(client, site, site_b, member_of_two):
    _member, first = member_of_two
    cookie_only = await client.post(SWITCH, headers={"X-Svc-Site": site_b,
                                                     "Cookie": f"svc_refresh={first['refreshToken']}"})
    assert cookie_only.status_code == 403 and code(cookie_only) == "PERMISSION_DENIED"  # CSRF: no X-Svc-Refresh
    none = await client.post(SWITCH, headers={"X-Svc-Site": site_b})
    assert none.status_code == 401 and code(none) == "UNAUTHENTICATED"
    wrong = await client.post(SWITCH, json={"refreshToken": "x" * 43}, headers={"X-Svc-Site": site_b})
    assert wrong.status_code == 401 and code(wrong) == "UNAUTHENTICATED"
    odd = await client.post(SWITCH, json={"refreshToken": first["refreshToken"], "site": site_b},
                            headers={"X-Svc-Site": site_b})
    assert odd.status_code == 400 and code(odd) == "VALIDATION_FAILED"
    typed = await client.post(SWITCH, json={"refreshToken": 5}, headers={"X-Svc-Site": site_b})
    assert typed.status_code == 400 and code(typed) == "VALIDATION_FAILED"
    nosite = await client.post(SWITCH, json={"refreshToken": first["refreshToken"]})
    assert nosite.status_code == 400 and code(nosite) == "VALIDATION_FAILED"
