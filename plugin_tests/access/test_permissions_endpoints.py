"""GET /permissions/me and POST /permissions/check."""

from __future__ import annotations

import pytest
from access_helpers import role_id_of

from kernel.testing import Calls


async def test_me_for_a_member(svc_app, site, calls, make_member):
    parent = await calls.ok("post", "/roles", 201, json={"name": "Readers"})
    role = await calls.ok("post", "/roles", 201, json={"name": "Writers", "parentId": parent["id"]})
    policy = await calls.ok("post", "/policies", 201, json={"name": "Read articles"})
    await calls.ok("post", f"/policies/{policy['id']}/permissions", 201,
                   json={"collection": "articles", "action": "read", "fields": ["title"]})
    await calls.ok("post", f"/policies/{policy['id']}/attach", 201, json={"roleId": parent["id"]})
    member = await make_member(site, role["id"])
    team = await calls.ok("post", "/teams", 201, json={"name": "Desk", "members": [member.id]})
    me = await Calls(svc_app.client, member.headers).ok("get", "/permissions/me")
    assert me == {
        "admin": False, "roleId": role["id"], "roles": [role["id"], parent["id"]], "teams": [team["id"]],
        "policies": [policy["id"]],
        "permissions": {"articles": {"read": {"allowed": True, "fields": ["title"], "conditions": None}}},
    }


async def test_me_for_admins(svc_app, site, calls, make_member):
    me = await calls.ok("get", "/permissions/me")  # the instance admin
    assert me["admin"] is True and me["permissions"]["*"]["delete"]["allowed"] is True
    admin = await make_member(site, "admin")
    me = await Calls(svc_app.client, admin.headers).ok("get", "/permissions/me")
    assert me["admin"] is True and me["roleId"] == await role_id_of(svc_app, site, "admin")


async def test_me_default_deny(svc_app, site, make_member):
    member = await make_member(site, "subscriber")
    me = await Calls(svc_app.client, member.headers).ok("get", "/permissions/me")
    assert me["admin"] is False and me["permissions"] == {} and me["policies"] == []


async def test_check_for_self_and_for_another_user(svc_app, site, calls, make_member):
    policy = await calls.ok("post", "/policies", 201, json={"name": "Own drafts"})
    await calls.ok("post", f"/policies/{policy['id']}/permissions", 201, json={
        "collection": "drafts", "action": "update", "fields": ["body"],
        "conditions": {"owner": {"_eq": "$CURRENT_USER"}}})
    alice = await make_member(site, "subscriber")
    bob = await make_member(site, "subscriber")
    await calls.ok("post", f"/policies/{policy['id']}/attach", 201, json={"userId": alice.id})
    body = {"collection": "drafts", "action": "update"}
    as_alice = Calls(svc_app.client, alice.headers)
    assert await as_alice.ok("post", "/permissions/check", json=body) == {
        "allowed": True, "fields": ["body"], "conditions": {"owner": {"_eq": alice.id}}}
    assert (await as_alice.ok("post", "/permissions/check", json={**body, "userId": alice.id}))["allowed"]
    as_bob = Calls(svc_app.client, bob.headers)
    assert (await as_bob.ok("post", "/permissions/check", json=body))["allowed"] is False
    await as_bob.err("post", "/permissions/check", 403, "PERMISSION_DENIED", json={**body, "userId": alice.id})
    # The admin debugging a user sees exactly what that user's requests get.
    assert await calls.ok("post", "/permissions/check", json={**body, "userId": alice.id}) == {
        "allowed": True, "fields": ["body"], "conditions": {"owner": {"_eq": alice.id}}}
    assert (await calls.ok("post", "/permissions/check", json={**body, "userId": bob.id}))["allowed"] is False
    assert (await calls.ok("post", "/permissions/check", json=body))["allowed"] is True  # the admin itself


async def test_check_user_must_be_a_member(calls, site_b, make_member):
    outsider = await make_member(site_b, "subscriber")
    await calls.err("post", "/permissions/check", 400, "VALIDATION_FAILED", ["userId"],
                     json={"collection": "a", "action": "read", "userId": outsider.id})


@pytest.mark.parametrize("body, path", [
    ({}, ["collection"]),
    ({"action": "read"}, ["collection"]),
    ({"collection": "a"}, ["action"]),
    ({"collection": "a", "action": "READ"}, ["action"]),
    ({"collection": "*", "action": "read"}, ["collection"]),
    ({"collection": "a/b", "action": "read"}, ["collection"]),
    ({"collection": "a", "action": "read", "userId": 1}, ["userId"]),
    ({"collection": "a", "action": "read", "userId": "x" * 40}, ["userId"]),
    ({"collection": "a", "action": "read", "fields": ["x"]}, ["fields"]),
])
async def test_check_validation(shared_site, body, path):
    calls = shared_site.calls
    await calls.err("post", "/permissions/check", 400, "VALIDATION_FAILED", path, json=body)
    await calls.err("post", "/permissions/check", 400, "VALIDATION_FAILED", content=b"[]")


# -- people: `explain` names what decided (the studio's effective-access view)
async def test_check_explains_which_rules_decided(svc_app, site, calls, make_member):
    parent = await calls.ok("post", "/roles", 201, json={"name": "Base"})
    role = await calls.ok("post", "/roles", 201, json={"name": "Desk", "parentId": parent["id"]})
    by_role = await calls.ok("post", "/policies", 201, json={"name": "Inherited"})
    own = await calls.ok("post", "/policies", 201, json={"name": "Own"})
    wide = await calls.ok("post", f"/policies/{by_role['id']}/permissions", 201,
                          json={"collection": "*", "action": "read", "fields": ["title"]})
    mine = await calls.ok("post", f"/policies/{own['id']}/permissions", 201, json={
        "collection": "notes", "action": "read", "fields": ["body"],
        "conditions": {"owner": {"_eq": "$CURRENT_USER"}}})
    await calls.ok("post", f"/policies/{own['id']}/permissions", 201, json={"collection": "notes", "action": "delete"})
    await calls.ok("post", f"/policies/{own['id']}/permissions", 201, json={"collection": "other", "action": "read"})
    await calls.ok("post", f"/policies/{by_role['id']}/attach", 201, json={"roleId": parent["id"]})
    member = await make_member(site, role["id"])
    team = await calls.ok("post", "/teams", 201, json={"name": "Night", "members": [member.id]})
    await calls.ok("post", f"/policies/{own['id']}/attach", 201, json={"teamId": team["id"]})
    body = {"collection": "notes", "action": "read", "userId": member.id, "explain": True}
    answer = await calls.ok("post", "/permissions/check", json=body)
    assert answer["allowed"] is True and answer["fields"] == ["body", "title"]
    assert answer["conditions"] is None  # the `*` rule has none: every row
    explain = answer["explain"]
    assert (explain["admin"], explain["roleId"], explain["roles"], explain["teams"]) == (
        False, role["id"], [role["id"], parent["id"]], [team["id"]])
    assert sorted(explain["policies"]) == sorted([by_role["id"], own["id"]])
    # The rules of this action on this collection or `*`, as stored (variables unbound).
    assert sorted((r["id"], r["policyId"], r["collection"], r["fields"], r["conditions"]) for r in explain["rules"]) == sorted([
        (wide["id"], by_role["id"], "*", ["title"], None),
        (mine["id"], own["id"], "notes", ["body"], {"owner": {"_eq": "$CURRENT_USER"}})])
    # Without `explain` the answer is the plain decision; a denial lists no rule.
    plain = await calls.ok("post", "/permissions/check", json={**body, "explain": False})
    assert "explain" not in plain
    denied = await calls.ok("post", "/permissions/check", json={**body, "action": "update"})
    assert denied["allowed"] is False and denied["explain"]["rules"] == []
    # The member may ask about itself; an admin's answer says admin access decided.
    as_member = Calls(svc_app.client, member.headers)
    assert len((await as_member.ok("post", "/permissions/check", json={**body, "userId": None}))["explain"]["rules"]) == 2
    admin = await make_member(site, "admin")
    assert (await calls.ok("post", "/permissions/check", json={**body, "userId": admin.id}))["explain"]["admin"] is True
    await calls.err("post", "/permissions/check", 400, "VALIDATION_FAILED", ["explain"], json={**body, "explain": "yes"})
    await as_member.err("post", "/permissions/check", 403, "PERMISSION_DENIED", json={**body, "userId": admin.id})
