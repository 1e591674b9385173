"""Holes found in the security review of the privacy plugin (each test failed before its fix)."""

from __future__ import annotations

import asyncio

from kernel.testing import shared as testing_shared

# Every test writes and reads in sites of its own: they share the module's app, each in new sites
# of it (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def test_concurrent_executions_erase_and_audit_once(calls):
    await calls.collection("people", {"name": "string"}, meta={"personalData": True})
    for _ in range(3):
        await calls.create("people", {"name": "Ymir Qalbrecht"})
    made = await calls.ok("post", "/admin/erasure", 201, json={
        "collection": "people", "filter": {"name": {"_eq": "Ymir Qalbrecht"}}, "reason": "art. 17"})
    assert made["status"] == "confirmed" and made["matched"] == 3
    path = f"/admin/erasure/{made['id']}/execute"
    answers = await asyncio.gather(*(calls.call("post", path) for _ in range(4)))
    assert sorted(a.status_code for a in answers) == [200, 409, 409, 409], [a.text for a in answers]
    done = next(a.json()["data"] for a in answers if a.status_code == 200)
    assert done["recordCount"] == 3
    audit = await calls.ok("get", "/audit", params={"limit": 100})
    assert sum(1 for a in audit if a["action"] == "data_erased") == 1
    assert (await calls.ok("get", f"/admin/erasure/{made['id']}"))["recordCount"] == 3


async def test_an_impersonating_admin_cannot_decide_consent_or_restriction(svc_app, site, calls, make_member):
    """Consent and restriction are the data subject's own decisions: an admin acting as the user
    (``POST /users/:id/impersonate``) may read them, never record them in the user's name."""
    from kernel.testing import Calls

    member = await make_member(site)
    token = (await calls.ok("post", f"/users/{member.id}/impersonate"))["token"]
    posing = Calls(svc_app.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": site})
    grant = {"granted": True, "source": "banner", "version": "2026-01"}
    error = await posing.err("put", "/me/consents/marketing", 403, "PERMISSION_DENIED", json=grant)
    assert error["extensions"]["reason"] == "impersonation"
    error = await posing.err("put", "/me/restriction", 403, "PERMISSION_DENIED", json={"restricted": True})
    assert error["extensions"]["reason"] == "impersonation"
    me = Calls(svc_app.client, member.headers)
    assert all(c["granted"] is False for c in await me.ok("get", "/me/consents"))
    assert (await me.ok("get", "/me/restriction"))["restricted"] is False
    assert [c["consentType"] for c in await posing.ok("get", "/me/consents")][0] == "marketing"
    assert (await me.ok("put", "/me/consents/marketing", json=grant))["granted"] is True


async def test_dual_control_is_not_met_by_impersonating_a_second_admin(svc_app, site, calls, make_member):
    from kernel.testing import Calls

    await calls.collection("people", {"name": "string"}, meta={"personalData": True})
    await calls.create("people", {"name": "Ymir Qalbrecht"})
    await calls.ok("put", "/settings/erasureDualControl", json={"value": True})
    second = await make_member(site, role="admin")
    token = (await calls.ok("post", f"/users/{second.id}/impersonate"))["token"]
    posing = Calls(svc_app.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": site})
    body = {"collection": "people", "filter": {"name": {"_eq": "Ymir Qalbrecht"}}, "reason": "art. 17"}
    made = await calls.ok("post", "/admin/erasure", 201, json=body)
    # the requester, acting as the second admin, is still the requester
    error = await posing.err("post", f"/admin/erasure/{made['id']}/confirm", 403, "PERMISSION_DENIED")
    assert error["extensions"]["reason"] == "dual_control"
    # nor does a request made while impersonating count as the other admin's
    error = await posing.err("post", "/admin/erasure", 403, "PERMISSION_DENIED", json=body)
    assert error["extensions"]["reason"] == "dual_control"
    assert (await calls.ok("get", f"/admin/erasure/{made['id']}"))["status"] == "awaiting_confirmation"
    # the second admin in person confirms
    confirmed = await Calls(svc_app.client, second.headers).ok("post", f"/admin/erasure/{made['id']}/confirm")
    assert confirmed["status"] == "confirmed" and confirmed["confirmedBy"] == second.id


async def test_an_impersonating_site_admin_sees_nothing_of_the_users_other_sites(svc_app, site, site_b, make_member):
    """A site admin sees a member's sessions bound to the site (``GET /users/:id/sessions``);
    impersonating the member must not widen that to the member's sessions in other sites
    (``siteId``, ``ip``, ``userAgent``) through the data export or ``GET /me/sessions``."""
    from kernel.testing import Calls

    member = await make_member([site, site_b])
    await svc_app.login(member.email, member.password, site=site_b)
    admin_a = Calls(svc_app.client, (await make_member(site, role="admin")).headers)
    token = (await admin_a.ok("post", f"/users/{member.id}/impersonate"))["token"]
    posing = Calls(svc_app.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": site})
    error = await posing.err("get", "/me/data-export", 403, "PERMISSION_DENIED")
    assert error["extensions"]["reason"] == "impersonation"
    assert {s["siteId"] for s in await posing.ok("get", "/me/sessions")} == {site}
    # the member in person gets all of it
    me = Calls(svc_app.client, member.headers)
    assert {s["siteId"] for s in (await me.ok("get", "/me/data-export"))["sessions"]} == {site, site_b}
    assert {s["siteId"] for s in await me.ok("get", "/me/sessions")} == {site, site_b}


async def test_a_nul_in_an_erasure_id_is_not_found_not_a_500(calls):
    """PostgreSQL refuses NUL in text: such an id names nothing (was 500 INTERNAL on PostgreSQL)."""
    for method, path in (("get", "/admin/erasure/a%00b"), ("post", "/admin/erasure/a%00b/confirm"),
                         ("post", "/admin/erasure/a%00b/execute")):
        await calls.err(method, path, 404, "NOT_FOUND")
