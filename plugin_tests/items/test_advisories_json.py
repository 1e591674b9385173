"""Classes of advisories the task names, replayed against svc (each passes when svc is not
vulnerable), where no single advisory of Directus, Strapi or Payload was found to cite:
prototype-pollution-like keys (CWE-1321: ``__proto__``, ``constructor``, ``prototype``) in stored
JSON are plain data, kept and answered as written, never merged into anything; and mass
assignment of role or admin fields (CWE-915) through a member's own record."""

from __future__ import annotations

import json

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

POLLUTING = {"__proto__": {"isAdmin": True}, "constructor": {"prototype": {"polluted": 1}},
             "nested": {"__proto__": {"x": 1}}}


async def test_prototype_keys_in_json_are_plain_data(calls: Calls, make_member, site, svc_app):
    await calls.collection("docs", {"title": "string", "meta": "json"})
    raw = '{"title": "t", "meta": ' + json.dumps(POLLUTING) + "}"
    created = await calls.ok("post", "/items/docs", 201, content=raw, headers={"Content-Type": "application/json"})
    assert created["meta"] == POLLUTING
    again = await calls.ok("get", f"/items/docs/{created['id']}")
    assert again["meta"] == POLLUTING and "isAdmin" not in again and "polluted" not in again
    # A filter through such a key reads the stored key, nothing else.
    contains = {"meta": {"_json_contains": {"nested": {"__proto__": {"x": 1}}}}}
    found = await calls.ok("get", "/items/docs", params={"filter": json.dumps(contains)})
    assert [d["id"] for d in found] == [created["id"]]
    # A top-level __proto__ in an item body is an unknown field, not a way into the record.
    await calls.err("post", "/items/docs", 400, "VALIDATION_FAILED",
                    content='{"title": "x", "__proto__": {"status": "published"}}',
                    headers={"Content-Type": "application/json"})


async def test_a_member_cannot_assign_itself_a_role_or_admin(svc_app, calls: Calls, site, make_member):
    roles = await calls.ok("get", "/roles")
    admin_role = next(r["id"] for r in roles if r.get("systemKey") == "admin")
    member = await make_member(site)
    me = Calls(svc_app.client, member.headers)
    for body in ({"roleId": admin_role}, {"isInstanceAdmin": True}, {"adminAccess": True},
                 {"__proto__": {"roleId": admin_role}}):
        resp = await me.call("patch", f"/users/{member.id}", json=body)
        assert (resp.status_code, resp.json()["errors"][0]["code"]) == (403, "PERMISSION_DENIED"), (body, resp.text)
    record = await calls.ok("get", f"/users/{member.id}")
    assert record["roleId"] != admin_role
    assert (await me.call("get", "/roles")).status_code == 403
    # Self-registration takes no role either.
    resp = await svc_app.client.post("/api/v1/auth/register", headers={"X-Svc-Site": site}, json={
        "email": "climber@example.com", "password": "sign-up-pass-1", "roleId": admin_role})
    assert resp.status_code == 400, resp.text
