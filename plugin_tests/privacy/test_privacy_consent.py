"""Consent and restriction: records per (site, user, type), timestamps, audit, user principals
only, bad bodies, and cross-tenant isolation."""

from __future__ import annotations

import pytest

from kernel.testing import Calls

TYPES = ["marketing", "analytics", "personalization", "functional", "sale_share"]
GRANT = {"granted": True, "source": "banner", "version": "2026-01"}


async def test_consents_list_every_type_undecided_first(shared_site):
    member = await shared_site.member()
    listed = await member.ok("get", "/me/consents")
    assert [c["consentType"] for c in listed] == TYPES
    assert all(c["granted"] is False and c["grantedAt"] is None and c["withdrawnAt"] is None for c in listed)


async def test_grant_then_withdraw_keeps_both_timestamps_and_is_audited(svc_app, site, calls, make_member):
    member = await make_member(site)
    me = Calls(svc_app.client, member.headers)
    granted = await me.ok("put", "/me/consents/marketing", json=GRANT)
    assert granted["consentType"] == "marketing" and granted["granted"] is True
    assert granted["grantedAt"] and granted["withdrawnAt"] is None and granted["updatedAt"]
    assert granted["source"] == "banner" and granted["version"] == "2026-01"
    withdrawn = await me.ok("put", "/me/consents/marketing", json={**GRANT, "granted": False, "source": "settings"})
    assert withdrawn["granted"] is False and withdrawn["grantedAt"] == granted["grantedAt"]
    assert withdrawn["withdrawnAt"] and withdrawn["source"] == "settings"
    again = await me.ok("put", "/me/consents/marketing", json=GRANT)
    assert again["grantedAt"] >= withdrawn["withdrawnAt"] and again["withdrawnAt"] == withdrawn["withdrawnAt"]
    listed = {c["consentType"]: c for c in await me.ok("get", "/me/consents")}
    assert listed["marketing"]["granted"] is True and listed["analytics"]["granted"] is False

    audit = await calls.ok("get", "/audit", params={"targetType": "consent"})
    actions = sorted(a["action"] for a in audit)
    assert actions == ["consent_granted", "consent_granted", "consent_withdrawn"]
    assert all(a["actor"]["id"] == member.id and a["details"]["consentType"] == "marketing" for a in audit)


async def test_an_api_key_cannot_manage_consent(shared_site):
    key = await shared_site.calls.ok("post", "/api-keys", 201, json={"name": "server"})
    as_key = Calls(shared_site.app.client, {"Authorization": f"Bearer {key['key']}", "X-Svc-Site": shared_site.site})
    for method, path, body in [("get", "/me/consents", None), ("put", "/me/consents/analytics", GRANT),
                               ("get", "/me/restriction", None), ("put", "/me/restriction", {"restricted": True}),
                               ("get", "/me/data-export", None), ("get", "/me/automated-decisions", None)]:
        await as_key.err(method, path, 403, "PERMISSION_DENIED", json=body)


async def test_anonymous_is_401(shared_site):
    anon = Calls(shared_site.app.client, {"X-Svc-Site": shared_site.site})
    await anon.err("get", "/me/consents", 401, "UNAUTHENTICATED")
    await anon.err("put", "/me/restriction", 401, "UNAUTHENTICATED", json={"restricted": True})


async def test_unknown_consent_type_is_404(shared_site):
    member = await shared_site.member()
    await member.err("put", "/me/consents/telemetry", 404, "NOT_FOUND", json=GRANT)


@pytest.mark.parametrize("body,path", [
    ({}, ["granted"]),
    ({"granted": "yes", "source": "s", "version": "v"}, ["granted"]),
    ({"granted": True, "version": "v"}, ["source"]),
    ({"granted": True, "source": "", "version": "v"}, ["source"]),
    ({"granted": True, "source": "s" * 201, "version": "v"}, ["source"]),
    ({"granted": True, "source": 3, "version": "v"}, ["source"]),
    ({"granted": True, "source": "s"}, ["version"]),
    ({"granted": True, "source": "s", "version": "   "}, ["version"]),
    ({"granted": True, "source": "s", "version": "v", "grantedAt": "2020-01-01T00:00:00Z"}, ["grantedAt"]),
    ([], ["body"]),
    ("granted", ["body"]),
])
async def test_bad_consent_bodies_are_400(shared_site, body, path):
    member = await shared_site.member()
    await member.err("put", "/me/consents/analytics", 400, "VALIDATION_FAILED", path_is=path, json=body)


@pytest.mark.parametrize("body,path", [
    ({}, ["restricted"]),
    ({"restricted": "true"}, ["restricted"]),
    ({"restricted": True, "reason": 5}, ["reason"]),
    ({"restricted": True, "reason": "r" * 501}, ["reason"]),
    ({"restricted": True, "userId": "someone-else"}, ["userId"]),
    ([True], ["body"]),
])
async def test_bad_restriction_bodies_are_400(shared_site, body, path):
    member = await shared_site.member()
    await member.err("put", "/me/restriction", 400, "VALIDATION_FAILED", path_is=path, json=body)


async def test_malformed_json_is_400(shared_site):
    member = await shared_site.member()
    resp = await member.call("put", "/me/consents/analytics", content=b"{nope",
                             headers={"Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"


async def test_restriction_set_and_lifted(svc_app, site, calls, make_member):
    member = await make_member(site)
    me = Calls(svc_app.client, member.headers)
    assert await me.ok("get", "/me/restriction") == {"restricted": False}
    assert await me.ok("put", "/me/restriction", json={"restricted": True, "reason": "accuracy contested"}) == {
        "restricted": True, "reason": "accuracy contested"}
    assert await me.ok("get", "/me/restriction") == {"restricted": True, "reason": "accuracy contested"}
    assert await me.ok("put", "/me/restriction", json={"restricted": False, "reason": "kept?"}) == {"restricted": False}
    audit = [a for a in await calls.ok("get", "/audit", params={"targetId": member.id})
             if a["action"].startswith("processing_")]
    assert sorted(a["action"] for a in audit) == ["processing_restricted", "processing_unrestricted"]
    # The user's reason is theirs: it is not copied into the audit trail.
    assert all("reason" not in a["details"] for a in audit)


async def test_consent_and_restriction_are_per_site(svc_app, site, site_b, make_member):
    member = await make_member([site, site_b])
    in_a = Calls(svc_app.client, member.headers)
    token_b = await svc_app.login(member.email, member.password, site=site_b)
    in_b = Calls(svc_app.client, {"Authorization": f"Bearer {token_b}", "X-Svc-Site": site_b})
    await in_a.ok("put", "/me/consents/analytics", json=GRANT)
    await in_a.ok("put", "/me/restriction", json={"restricted": True})
    assert {c["consentType"]: c["granted"] for c in await in_b.ok("get", "/me/consents")}["analytics"] is False
    assert await in_b.ok("get", "/me/restriction") == {"restricted": False}
    # B's decisions do not reach A either.
    await in_b.ok("put", "/me/consents/marketing", json=GRANT)
    assert {c["consentType"]: c["granted"] for c in await in_a.ok("get", "/me/consents")}["marketing"] is False
    # And A's audit is not visible from B.
    admin_b = Calls(svc_app.client, {"Authorization": f"Bearer {await svc_app.login()}", "X-Svc-Site": site_b})
    assert [a["action"] for a in await admin_b.ok("get", "/audit", params={"targetType": "consent"})] == [
        "consent_granted"]
