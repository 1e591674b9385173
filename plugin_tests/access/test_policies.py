"""/policies: CRUD, attach and detach, built-in policies, audit."""

from __future__ import annotations

import pytest
import pytest_asyncio
from access_helpers import audit_actions, role_id_of

MISSING = "0190a0a0-0000-7000-8000-000000000000"


async def test_crud(calls, svc_app, site):
    policy = await calls.ok("post", "/policies", 201, json={"name": "Editors"})
    assert policy == {"id": policy["id"], "name": "Editors", "adminAccess": False, "systemKey": None,
                      "attachments": []}
    assert await calls.ok("get", f"/policies/{policy['id']}") == policy
    listed = await calls.ok("get", "/policies")
    assert [p["id"] for p in listed] == [policy["id"]]
    patched = await calls.ok("patch", f"/policies/{policy['id']}", json={"name": "Chief editors", "adminAccess": True})
    assert patched["name"] == "Chief editors" and patched["adminAccess"] is True
    await calls.err("post", "/policies", 409, "CONFLICT", ["name"], json={"name": "Chief editors"})
    await calls.ok("delete", f"/policies/{policy['id']}", 204)
    await calls.err("get", f"/policies/{policy['id']}", 404, "RECORD_NOT_FOUND")
    actions = [a for a, _ in await audit_actions(svc_app, site) if a.startswith("policy.")]
    assert actions == ["policy.create", "policy.update", "policy.delete"]


@pytest.mark.parametrize("body, path", [
    ({}, ["name"]),
    ({"name": ""}, ["name"]),
    ({"name": "x" * 201}, ["name"]),
    ({"name": "ok", "adminAccess": 1}, ["adminAccess"]),
    ({"name": "ok", "permissions": []}, ["permissions"]),
])
async def test_create_validation(calls, body, path):
    await calls.err("post", "/policies", 400, "VALIDATION_FAILED", path, json=body)


async def test_patch_validation(calls):
    policy = await calls.ok("post", "/policies", 201, json={"name": "P"})
    for body, path in (({"adminAccess": None}, ["adminAccess"]), ({"name": None}, ["name"]),
                       ({"systemKey": "x"}, ["systemKey"])):
        await calls.err("patch", f"/policies/{policy['id']}", 400, "VALIDATION_FAILED", path, json=body)
    await calls.err("patch", f"/policies/{MISSING}", 404, "RECORD_NOT_FOUND", json={"name": "x"})


async def test_attach_and_detach_each_target(calls, svc_app, site, make_member):
    policy = await calls.ok("post", "/policies", 201, json={"name": "P"})
    role = await calls.ok("post", "/roles", 201, json={"name": "R"})
    team = await calls.ok("post", "/teams", 201, json={"name": "T"})
    member = await make_member(site, "subscriber")
    pid = policy["id"]
    made = []
    for body in ({"roleId": role["id"]}, {"userId": member.id}, {"teamId": team["id"]}):
        made.append(await calls.ok("post", f"/policies/{pid}/attach", 201, json=body))
        await calls.err("post", f"/policies/{pid}/attach", 409, "CONFLICT", json=body)
    assert made[0]["roleId"] == role["id"] and made[0]["userId"] is None and made[0]["policyId"] == pid
    attached = (await calls.ok("get", f"/policies/{pid}"))["attachments"]
    assert attached == made
    assert (await calls.ok("get", "/policies"))[0]["attachments"] == made
    await calls.ok("post", f"/policies/{pid}/detach", 204, json={"userId": member.id})
    await calls.err("post", f"/policies/{pid}/detach", 404, "RECORD_NOT_FOUND", json={"userId": member.id})
    assert len((await calls.ok("get", f"/policies/{pid}"))["attachments"]) == 2
    # Deleting a policy takes its attachments and rules with it.
    await calls.ok("post", f"/policies/{pid}/permissions", 201, json={"collection": "a", "action": "read"})
    await calls.ok("delete", f"/policies/{pid}", 204)
    actions = [a for a, t in await audit_actions(svc_app, site) if t == pid]
    assert actions == ["policy.create", "policy.attach", "policy.attach", "policy.attach", "policy.detach",
                       "policy.delete"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_policy(shared_site):
    """A policy of the shared site that the refused attach and detach cases name."""
    return await shared_site.calls.ok("post", "/policies", 201, json={"name": "P"})


@pytest.mark.parametrize("body, path", [
    ({}, ["body"]),
    ({"roleId": "a", "teamId": "b"}, ["teamId"]),
    ({"roleId": "a", "userId": None}, ["userId"]),
    ({"roleId": None}, ["roleId"]),
    ({"roleId": 5}, ["roleId"]),
    ({"roleId": MISSING}, ["roleId"]),
    ({"userId": MISSING}, ["userId"]),
    ({"teamId": MISSING}, ["teamId"]),
    ({"groupId": MISSING}, ["groupId"]),
])
async def test_attach_validation(shared_site, shared_policy, body, path):
    calls, policy = shared_site.calls, shared_policy
    await calls.err("post", f"/policies/{policy['id']}/attach", 400, "VALIDATION_FAILED", path, json=body)
    # Detach takes the same body; a well-formed id that is not attached is simply not found.
    well_formed = list(body.values()) == [MISSING] and "groupId" not in body
    await calls.err("post", f"/policies/{policy['id']}/detach", 404 if well_formed else 400, json=body)


async def test_attach_to_a_user_who_is_not_a_member(calls, site, site_b, make_member):
    policy = await calls.ok("post", "/policies", 201, json={"name": "P"})
    outsider = await make_member(site_b, "admin")
    await calls.err("post", f"/policies/{policy['id']}/attach", 400, "VALIDATION_FAILED", ["userId"],
                     json={"userId": outsider.id})


async def test_open_roles_never_get_an_admin_policy(calls, svc_app, site):
    admin_policy = await calls.ok("post", "/policies", 201, json={"name": "Admins", "adminAccess": True})
    plain = await calls.ok("post", "/policies", 201, json={"name": "Plain"})
    for key in ("public", "subscriber"):
        role_id = await role_id_of(svc_app, site, key)
        await calls.err("post", f"/policies/{admin_policy['id']}/attach", 409, "CONFLICT", json={"roleId": role_id})
        await calls.ok("post", f"/policies/{plain['id']}/attach", 201, json={"roleId": role_id})
    await calls.err("patch", f"/policies/{plain['id']}", 409, "CONFLICT", json={"adminAccess": True})
    assert (await calls.ok("get", f"/policies/{plain['id']}"))["adminAccess"] is False
    # An ancestor of the public role with an admin policy is refused as well.
    base = await calls.ok("post", "/roles", 201, json={"name": "Base"})
    await calls.ok("post", f"/policies/{admin_policy['id']}/attach", 201, json={"roleId": base["id"]})
    public_id = await role_id_of(svc_app, site, "public")
    await calls.err("patch", f"/roles/{public_id}", 409, "CONFLICT", json={"parentId": base["id"]})


async def test_builtin_policy_is_protected(calls):
    await calls.ok("post", "/users/subscriber-access", 201, json={"collection": "articles"})
    builtin = next(p for p in await calls.ok("get", "/policies") if p["systemKey"] == "subscriber_access")
    await calls.err("delete", f"/policies/{builtin['id']}", 409, "CONFLICT")
    await calls.err("patch", f"/policies/{builtin['id']}", 409, "CONFLICT", ["adminAccess"],
                     json={"adminAccess": True})
    assert (await calls.ok("patch", f"/policies/{builtin['id']}", json={"name": "Readers"}))["name"] == "Readers"
    await calls.err("delete", "/policies", 409, "CONFLICT", json=[builtin["id"]])


async def test_directus_bulk_forms(calls):
    a = await calls.ok("post", "/policies", 201, json={"name": "A"})
    b = await calls.ok("post", "/policies", 201, json={"name": "B"})
    data = await calls.ok("patch", "/policies", json={"keys": [a["id"], b["id"]], "data": {"adminAccess": True}})
    assert all(p["adminAccess"] for p in data)
    await calls.ok("delete", "/policies", 204, json={"keys": [a["id"], b["id"]]})
    assert await calls.ok("get", "/policies") == []
