"""``GET /me/data-export`` and ``GET /me/automated-decisions``: what the document holds, the
personalData collection marker, redaction, rate limit, audit, and cross-tenant isolation."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugins.items import api as items

# Every test but the rate limit's writes and reads in sites of its own: they share the module's
# app, each in new sites of it (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

GRANT = {"granted": True, "source": "form", "version": "3"}


async def _setup(calls: Calls) -> None:
    await calls.collection("patients", {"name": "string", "owner": "string", "carer": "string"},
                           meta={"personalData": True})
    await calls.collection("posts", {"title": "string"})


async def test_the_export_holds_the_users_data(svc_app, site, calls, make_member):
    await _setup(calls)
    member = await make_member(site)
    me = Calls(svc_app.client, member.headers)
    await calls.grant([{"collection": "patients", "action": "create", "fields": ["*"]},
                       {"collection": "posts", "action": "create", "fields": ["*"]}], {"userId": member.id})
    svc_app.kernel.access.invalidate(site)
    own = await me.create("patients", {"name": "Ann Example", "owner": "x"})
    await me.create("posts", {"title": "not personal data"})
    pointing = await calls.create("patients", {"name": "Ward record", "carer": member.id})
    await calls.create("patients", {"name": "Someone else"})
    await me.ok("put", "/me/consents/personalization", json=GRANT)
    await me.ok("patch", "/me/preferences", json={"language": "de"})

    resp = await me.call("get", "/me/data-export")
    assert resp.status_code == 200
    assert resp.headers["content-disposition"] == 'attachment; filename="data-export.json"'
    assert resp.headers["cache-control"] == "no-store"
    doc = resp.json()["data"]
    assert doc["format"] == "svc.data-export/1" and doc["siteId"] == site
    assert doc["profile"]["id"] == member.id and doc["profile"]["email"] == member.email
    assert "password" not in str(doc["profile"]).lower()
    assert doc["memberships"] == [{"siteId": site, "roleId": doc["memberships"][0]["roleId"],
                                   "createdAt": doc["memberships"][0]["createdAt"]}]
    assert len(doc["sessions"]) == 1
    assert not {"token", "tokenHash", "token_hash", "refreshToken"} & set(doc["sessions"][0])
    assert {c["consentType"]: c["granted"] for c in doc["consents"]}["personalization"] is True
    assert doc["preferences"]["language"] == "de"
    assert doc["restriction"] == {"restricted": False}
    found = {(i["collection"], i["id"]): i for i in doc["items"]}
    assert set(found) == {("patients", own["id"]), ("patients", pointing["id"])}
    assert found[("patients", own["id"])]["authored"] is True
    assert found[("patients", own["id"])]["item"]["name"] == "Ann Example"
    assert found[("patients", pointing["id"])]["authored"] is False
    assert found[("patients", pointing["id"])]["referencedBy"] == ["carer"]
    assert doc["pageviews"] == []

    audit = [a for a in await calls.ok("get", "/audit", params={"action": "data_exported"})]
    assert len(audit) == 1 and audit[0]["actor"]["id"] == member.id and audit[0]["details"]["items"] == 2


async def test_the_export_is_rate_limited(make_app):
    app = await make_app(env={"SVC_RATE_LIMIT_DATA_EXPORT": "2"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    from kernel.testing import new_member

    member = await new_member(app, site)
    me = Calls(app.client, member.headers)
    await me.ok("get", "/me/data-export")
    await me.ok("get", "/me/data-export")
    await me.err("get", "/me/data-export", 429, "RATE_LIMITED")


async def test_the_export_never_crosses_sites(svc_app, site, site_b, calls, calls_b, make_member):
    await _setup(calls)
    await _setup(calls_b)
    member = await make_member([site, site_b])
    await calls_b.create("patients", {"name": "B's record", "carer": member.id})
    await calls.create("patients", {"name": "A's record", "carer": member.id})
    await Calls(svc_app.client, member.headers).ok("put", "/me/consents/analytics", json=GRANT)
    token_b = await svc_app.login(member.email, member.password, site=site_b)
    doc_b = await Calls(svc_app.client, {"Authorization": f"Bearer {token_b}", "X-Svc-Site": site_b}).ok(
        "get", "/me/data-export")
    assert [i["item"]["name"] for i in doc_b["items"]] == ["B's record"]
    assert doc_b["siteId"] == site_b and [m["siteId"] for m in doc_b["memberships"]] == [site_b]
    assert {c["consentType"]: c["granted"] for c in doc_b["consents"]}["analytics"] is False
    # A's admin audit sees no export made in B.
    assert await calls.ok("get", "/audit", params={"action": "data_exported"}) == []


async def test_automated_decisions_list_agent_revisions_of_the_users_items(svc_app, site, site_b, calls, make_member):
    await calls.collection("notes", {"body": "string"})
    member = await make_member(site)
    me = Calls(svc_app.client, member.headers)
    await calls.grant([{"collection": "notes", "action": "create", "fields": ["*"]}], {"userId": member.id})
    svc_app.kernel.access.invalidate(site)
    mine = await me.create("notes", {"body": "first"})
    other = await calls.create("notes", {"body": "admin's"})
    admin_principal = await _admin_principal(svc_app, site)
    ctx = items.context(svc_app.kernel, site, admin_principal)
    await items.update(ctx, "notes", mine["id"], {"body": "rewritten by an agent"}, cause="agent:summariser")
    await items.update(ctx, "notes", mine["id"], {"body": "edited by a flow"}, cause="flow-run:7")
    await items.update(ctx, "notes", other["id"], {"body": "agent on someone else's"}, cause="agent:x")
    page = await me.ok("get", "/me/automated-decisions", full=True)
    assert page["meta"]["total"] == 1
    [decision] = page["data"]
    assert decision["item"] == mine["id"] and decision["collection"] == "notes"
    assert decision["causedBy"] == "agent:summariser" and decision["fields"] == ["body"]
    assert "rewritten" not in str(decision)
    # Another member, and the same user in another site, see none of it.
    stranger = await make_member(site)
    assert await Calls(svc_app.client, stranger.headers).ok("get", "/me/automated-decisions") == []
    both = await make_member([site_b])
    assert await Calls(svc_app.client, both.headers).ok("get", "/me/automated-decisions") == []
    await me.err("get", "/me/automated-decisions?limit=0", 400, "VALIDATION_FAILED")


async def _admin_principal(app, site):
    from kernel.auth.principal import Principal

    return Principal(kind="user", user_id="instance-admin", site_id=site, is_instance_admin=True)
