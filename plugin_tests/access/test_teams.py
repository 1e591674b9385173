"""/teams: CRUD, members, validation, audit."""

from __future__ import annotations

import pytest
from access_helpers import audit_actions

from plugins.access import api

MISSING = "0190a0a0-0000-7000-8000-000000000000"


async def test_crud_and_members(calls, svc_app, site, make_member):
    one = await make_member(site, "subscriber")
    two = await make_member(site, "subscriber")
    team = await calls.ok("post", "/teams", 201, json={"name": "Desk", "members": [one.id, one.id]})
    assert team == {"id": team["id"], "name": "Desk", "members": [one.id]}
    assert await calls.ok("get", f"/teams/{team['id']}") == team
    assert await calls.ok("get", "/teams") == [team]
    patched = await calls.ok("patch", f"/teams/{team['id']}", json={"members": [two.id], "name": "News desk"})
    assert patched == {"id": team["id"], "name": "News desk", "members": [two.id]}
    assert (await calls.ok("patch", f"/teams/{team['id']}", json={"members": []}))["members"] == []
    await calls.err("post", "/teams", 409, "CONFLICT", ["name"], json={"name": "News desk"})
    await calls.ok("delete", f"/teams/{team['id']}", 204)
    await calls.err("get", f"/teams/{team['id']}", 404, "RECORD_NOT_FOUND")
    actions = [a for a, t in await audit_actions(svc_app, site) if t == team["id"]]
    assert actions == ["team.create", "team.update", "team.update", "team.delete"]


async def test_members_must_belong_to_the_site(calls, site, site_b, make_member):
    outsider = await make_member(site_b, "admin")
    await calls.err("post", "/teams", 400, "VALIDATION_FAILED", ["members"],
                     json={"name": "T", "members": [outsider.id]})
    team = await calls.ok("post", "/teams", 201, json={"name": "T"})
    await calls.err("patch", f"/teams/{team['id']}", 400, "VALIDATION_FAILED", ["members"],
                     json={"members": [MISSING]})


async def test_leaving_the_site_leaves_its_teams(calls, svc_app, site, make_member):
    member = await make_member(site, "subscriber")
    team = await calls.ok("post", "/teams", 201, json={"name": "T", "members": [member.id]})
    policy = await calls.ok("post", "/policies", 201, json={"name": "P"})
    await calls.ok("post", f"/policies/{policy['id']}/attach", 201, json={"userId": member.id})
    async with svc_app.kernel.db.begin() as conn:
        assert await api.remove_membership(conn, site, member.id) == 1
    assert (await calls.ok("get", f"/teams/{team['id']}"))["members"] == []
    assert (await calls.ok("get", f"/policies/{policy['id']}"))["attachments"] == []


@pytest.mark.parametrize("body, path", [
    ({}, ["name"]),
    ({"name": "\x7f"}, ["name"]),
    ({"name": "T", "members": "u1"}, ["members"]),
    ({"name": "T", "members": [1]}, ["members", "0"]),
    ({"name": "T", "members": ["bad id!"]}, ["members", "0"]),
    ({"name": "T", "members": [MISSING] * 1001}, ["members"]),
    ({"name": "T", "owner": "x"}, ["owner"]),
])
async def test_create_validation(shared_site, body, path):
    await shared_site.calls.err("post", "/teams", 400, "VALIDATION_FAILED", path, json=body)


async def test_patch_validation(calls):
    team = await calls.ok("post", "/teams", 201, json={"name": "T"})
    await calls.err("patch", f"/teams/{team['id']}", 400, "VALIDATION_FAILED", ["members"], json={"members": None})
    await calls.err("patch", f"/teams/{team['id']}", 400, "VALIDATION_FAILED", ["name"], json={"name": None})
    await calls.err("patch", f"/teams/{MISSING}", 404, "RECORD_NOT_FOUND", json={"name": "x"})


async def test_deleting_a_team_removes_its_attachments(calls):
    team = await calls.ok("post", "/teams", 201, json={"name": "T"})
    policy = await calls.ok("post", "/policies", 201, json={"name": "P"})
    await calls.ok("post", f"/policies/{policy['id']}/attach", 201, json={"teamId": team["id"]})
    await calls.ok("delete", "/teams", 204, json=[team["id"]])
    assert (await calls.ok("get", f"/policies/{policy['id']}"))["attachments"] == []


async def test_admin_members_are_found_through_roles_policies_and_teams(calls, svc_app, site, site_b, make_member):
    """``admin_members`` (who a notification for the site's admins reaches) follows the loader's
    rules: a role with the flag or under one, an admin policy on a role, on a user, on a team."""
    admin_role = next(r for r in await calls.ok("get", "/roles") if r["systemKey"] == "admin")
    under = await calls.ok("post", "/roles", 201, json={"name": "Under admin", "parentId": admin_role["id"]})
    lead, plain = [await calls.ok("post", "/roles", 201, json={"name": n}) for n in ("Lead", "Plain")]
    boss = await calls.ok("post", "/policies", 201, json={"name": "Boss", "adminAccess": True})
    members = {name: await make_member(site, role, login=False) for name, role in (
        ("admin", "admin"), ("under", under["id"]), ("lead", lead["id"]), ("direct", plain["id"]),
        ("teamed", plain["id"]), ("plain", plain["id"]), ("subscriber", "subscriber"))}
    team = await calls.ok("post", "/teams", 201, json={"name": "Bosses", "members": [members["teamed"].id]})
    for body in ({"roleId": lead["id"]}, {"userId": members["direct"].id}, {"teamId": team["id"]}):
        await calls.ok("post", f"/policies/{boss['id']}/attach", 201, json=body)
    await make_member(site_b, "admin", login=False)
    async with svc_app.kernel.db.connect() as conn:
        found = await api.admin_members(conn, site)
    assert found == sorted(members[n].id for n in ("admin", "under", "lead", "direct", "teamed"))
