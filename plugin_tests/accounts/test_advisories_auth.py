"""Published advisories of other headless CMSs, replayed against svc (each passes when svc is not
vulnerable): Payload CVE-2025-4643 (an access token still good after logout) and Strapi
CVE-2025-64526 (the auth rate limit keyed partly on a body field the caller chooses)."""

from __future__ import annotations

from kernel.testing import MEMBER_PASSWORD


async def test_payload_cve_2025_4643_logout_ends_the_access_token(svc_app, site, make_member, login_as):
    """Payload kept a JWT valid after logout until it expired. Here the logout of a session ends the
    access tokens issued to that session, on this worker and every other (no wait for expiry)."""
    member = await make_member(site, login=False)
    session = await login_as(member.email, site=site)
    other = await login_as(member.email, site=site)  # a second device: left alone
    headers = {"Authorization": f"Bearer {session['token']}", "X-Svc-Site": site}
    assert (await svc_app.client.get("/api/v1/auth/me", headers=headers)).status_code == 200
    out = await svc_app.client.post("/api/v1/auth/logout", json={"refreshToken": session["refreshToken"]})
    assert out.status_code == 204
    resp = await svc_app.client.get("/api/v1/auth/me", headers=headers)
    assert resp.status_code == 401, resp.text
    assert resp.json()["errors"][0]["code"] in ("UNAUTHENTICATED", "TOKEN_EXPIRED")
    still = await svc_app.client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {other['token']}",
                                                                 "X-Svc-Site": site})
    assert still.status_code == 200


async def test_strapi_cve_2025_64526_a_body_field_does_not_reset_the_auth_limit(make_app):
    """Strapi keyed its auth rate limit on ``body.email`` too, so a new value per request was a new
    bucket. Here the auth bucket is the client's address alone: changing the email (or adding one
    where the route takes none) does not buy another try."""
    app = await make_app(env={"SVC_RATE_LIMIT_AUTH": "3"})
    statuses = []
    for i in range(5):
        resp = await app.client.post("/api/v1/auth/login", json={"email": f"nobody{i}@example.com",
                                                                 "password": MEMBER_PASSWORD})
        statuses.append(resp.status_code)
    assert statuses[:3] == [401, 401, 401] and statuses[3:] == [429, 429]
    resp = await app.client.post("/api/v1/auth/refresh", json={"refreshToken": "x", "email": "fresh@example.com"})
    assert resp.status_code == 429 and resp.json()["errors"][0]["code"] == "RATE_LIMITED"
