"""Published advisories of other headless CMSs, replayed against svc (each passes when svc is not
vulnerable): Directus GHSA-56p6-qw3c-fq2g (a suspended user's session token still worked), Strapi
CVE-2026-22706 / GHSA-hvp3-26wx-g2w4 (a password change or reset without a ``deviceId`` revoked no
refresh session), and two classes the task names without one advisory of their own here: password
reset poisoning through the Host header (CWE-640) and JWT algorithm confusion (CWE-347)."""

from __future__ import annotations

import base64
import json

from kernel.testing import MEMBER_PASSWORD
from kernel.testing import shared as testing_shared

# Every test but the reset link's (an app with a public URL and mail of its own) writes and
# reads in a site of its own: they share the module's app (the auth rate limit off: its tests
# log in many times), each in a new site of it (kernel/testing/shared.py).
shared_site = testing_shared.login_shared_site
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

API = "/api/v1"


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


async def test_directus_ghsa_56p6_qw3c_fq2g_suspending_ends_every_token(client, site, site_headers, make_member,
                                                                        login_as):
    """Directus checked no user status when it verified a session token. Here suspending a member
    ends its access token and its refresh token at once."""
    member = await make_member(site)
    session = await login_as(member.email, site=site)
    me = {"Authorization": f"Bearer {session['token']}", "X-Svc-Site": site}
    assert (await client.get(f"{API}/auth/me", headers=me)).status_code == 200
    resp = await client.patch(f"{API}/users/{member.id}", json={"status": "suspended"}, headers=site_headers)
    assert resp.status_code == 200, resp.text
    assert (await client.get(f"{API}/auth/me", headers=me)).status_code == 401
    refreshed = await client.post(f"{API}/auth/refresh", json={"refreshToken": session["refreshToken"]},
                                  headers={"X-Svc-Site": site})
    assert refreshed.status_code == 401


async def test_strapi_cve_2026_22706_a_password_change_revokes_every_refresh_session(client, site, make_member,
                                                                                     login_as):
    """Strapi revoked refresh tokens only for a caller-supplied ``deviceId``. Here a password change
    ends every session of the user (the caller's and every other device's), and nothing in the
    body can narrow that."""
    member = await make_member(site, login=False)
    here = await login_as(member.email, site=site)
    elsewhere = await login_as(member.email, site=site)
    resp = await client.post(f"{API}/me/change-password", headers={"Authorization": f"Bearer {here['token']}",
                                                                    "X-Svc-Site": site},
                             json={"currentPassword": MEMBER_PASSWORD, "newPassword": "a-new-password-22"})
    assert resp.status_code == 200, resp.text
    for old in (here["refreshToken"], elsewhere["refreshToken"]):
        again = await client.post(f"{API}/auth/refresh", json={"refreshToken": old}, headers={"X-Svc-Site": site})
        assert again.status_code == 401
    old_access = {"Authorization": f"Bearer {elsewhere['token']}", "X-Svc-Site": site}
    assert (await client.get(f"{API}/auth/me", headers=old_access)).status_code == 401


async def test_reset_links_never_come_from_the_request_host(make_app, mailbox):
    """Password reset poisoning (CWE-640): a reset link built from ``Host`` or ``X-Forwarded-Host``
    sends the victim's token to the attacker. Here the link is ``SVC_PUBLIC_URL``'s, whatever the
    request says."""
    from kernel.testing import new_member, run_due_jobs

    app = await make_app(smtp_host="127.0.0.1", smtp_port=mailbox.port,
                         env={"SVC_PUBLIC_URL": "https://cms.example.org"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    member = await new_member(app, site, login=False)
    resp = await app.client.post(f"{API}/auth/forgot-password", json={"email": member.email},
                                 headers={"X-Svc-Site": site, "Host": "evil.example",
                                          "X-Forwarded-Host": "evil.example", "Forwarded": "host=evil.example"})
    assert resp.status_code == 202, resp.text
    await run_due_jobs(app, periodic=False)
    [message] = await mailbox.wait_for(1, to=member.email)
    body = message.get_content()
    assert "https://cms.example.org/reset-password?token=" in body and "evil.example" not in body


async def test_jwt_algorithm_confusion_is_refused(svc_app, site, make_member, login_as):
    """JWT algorithm confusion (CWE-347): a token whose header names ``none`` (no signature) or
    another algorithm than the server's is refused, whatever its claims."""
    member = await make_member(site, login=False)
    session = await login_as(member.email, site=site)
    header, claims, _signature = session["token"].split(".")
    for alg in ("none", "None", "HS512", "RS256"):
        forged = f"{_b64({'alg': alg, 'typ': 'JWT'})}.{claims}."
        resp = await svc_app.client.get(f"{API}/auth/me", headers={"Authorization": f"Bearer {forged}",
                                                                   "X-Svc-Site": site})
        assert resp.status_code == 401, (alg, resp.text)
    assert json.loads(base64.urlsafe_b64decode(header + "==")).get("alg") not in (None, "none")
