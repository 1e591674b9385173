"""/roles: CRUD, validation, built-in roles, the role tree, bulk forms, audit. Roles are a site's
own: the tests share the module's app, each in a new site (kernel/testing/shared.py)."""

from __future__ import annotations

import pytest
from access_helpers import audit_actions, role_id_of

from kernel.testing import shared as testing_shared

svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


async def test_builtin_roles_are_listed(calls):
    data = await calls.ok("get", "/roles")
    assert sorted(r["systemKey"] for r in data) == ["admin", "public", "subscriber"]
    admin = next(r for r in data if r["systemKey"] == "admin")
    assert admin["adminAccess"] is True and admin["parentId"] is None
    assert set(admin) == {"id", "name", "parentId", "adminAccess", "systemKey"}


async def test_crud(calls, svc_app, site):
    parent = await calls.ok("post", "/roles", 201, json={"name": "Authors"})
    assert parent == {"id": parent["id"], "name": "Authors", "parentId": None, "adminAccess": False,
                      "systemKey": None}
    child = await calls.ok("post", "/roles", 201, json={"name": " Editors ", "parentId": parent["id"]})
    assert child["name"] == "Editors" and child["parentId"] == parent["id"]
    assert await calls.ok("get", f"/roles/{child['id']}") == child
    patched = await calls.ok("patch", f"/roles/{child['id']}", json={"name": "Senior editors", "adminAccess": True})
    assert patched["name"] == "Senior editors" and patched["adminAccess"] is True
    cleared = await calls.ok("patch", f"/roles/{child['id']}", json={"parentId": None})
    assert cleared["parentId"] is None
    assert await calls.ok("patch", f"/roles/{child['id']}", json={}) == cleared
    await calls.ok("delete", f"/roles/{child['id']}", 204)
    await calls.err("get", f"/roles/{child['id']}", 404, "RECORD_NOT_FOUND")
    await calls.err("delete", f"/roles/{child['id']}", 404, "RECORD_NOT_FOUND")
    actions = [a for a in await audit_actions(svc_app, site) if a[0].startswith("role.")]
    assert actions == [("role.create", parent["id"]), ("role.create", child["id"]), ("role.update", child["id"]),
                       ("role.update", child["id"]), ("role.delete", child["id"])]


async def test_pagination(calls):
    for i in range(5):
        await calls.ok("post", "/roles", 201, json={"name": f"Role {i}"})
    resp = await calls.call("get", "/roles?limit=3&page=2")
    body = resp.json()
    assert resp.status_code == 200 and len(body["data"]) == 3
    assert body["meta"]["total"] == 8 and body["meta"]["offset"] == 3
    await calls.err("get", "/roles?limit=0", 400, "VALIDATION_FAILED", ["query", "limit"])
    await calls.err("get", "/roles?limit=abc", 400, "VALIDATION_FAILED", ["query", "limit"])
    await calls.err("get", "/roles?limit=201", 400, "VALIDATION_FAILED", ["query", "limit"])


async def test_unique_name_is_a_conflict(calls):
    role = await calls.ok("post", "/roles", 201, json={"name": "Writers"})
    await calls.err("post", "/roles", 409, "CONFLICT", ["name"], json={"name": "Writers"})
    other = await calls.ok("post", "/roles", 201, json={"name": "Other"})
    await calls.err("patch", f"/roles/{other['id']}", 409, "CONFLICT", ["name"], json={"name": "Writers"})
    # Renaming to its own name is not a conflict.
    assert (await calls.ok("patch", f"/roles/{role['id']}", json={"name": "Writers"}))["name"] == "Writers"


@pytest.mark.parametrize("body, path", [
    ({}, ["name"]),
    ({"name": None}, ["name"]),
    ({"name": ""}, ["name"]),
    ({"name": "   "}, ["name"]),
    ({"name": 12}, ["name"]),
    ({"name": ["a"]}, ["name"]),
    ({"name": "x" * 201}, ["name"]),
    ({"name": "tab\there"}, ["name"]),
    ({"name": "nul\x00byte"}, ["name"]),
    ({"name": "ok", "adminAccess": "yes"}, ["adminAccess"]),
    ({"name": "ok", "parentId": 5}, ["parentId"]),
    ({"name": "ok", "parentId": "../../etc/passwd"}, ["parentId"]),
    ({"name": "ok", "parentId": "0190a0a0-0000-7000-8000-000000000000"}, ["parentId"]),
    ({"name": "ok", "systemKey": "admin"}, ["systemKey"]),
    ({"name": "ok", "id": "mine"}, ["id"]),
])
async def test_create_validation(shared_site, body, path):
    await shared_site.calls.err("post", "/roles", 400, "VALIDATION_FAILED", path, json=body)


async def test_bad_bodies(calls):
    for content in (b"", b"not json", b"[1, 2]", b'"name"', b"null", b'{"name": NaN}'):
        resp = await calls.call("post", "/roles", content=content, headers={**calls.headers,
                                                                            "Content-Type": "application/json"})
        assert resp.status_code == 400, (content, resp.text)
    resp = await calls.call("post", "/roles", content=b'{"name": "' + b"x" * 20_000_000 + b'"}')
    assert resp.status_code == 413


async def test_names_with_sql_and_path_characters_are_plain_data(calls):
    for name in ("'; DROP TABLE svc_roles; --", "../../etc/passwd", "a/b\\c%00", "Ünïcødé 编辑 🚀", "x" * 200):
        role = await calls.ok("post", "/roles", 201, json={"name": name})
        assert (await calls.ok("get", f"/roles/{role['id']}"))["name"] == name
    assert len(await calls.ok("get", "/roles")) == 8


@pytest.mark.parametrize("role_id", ["nope", "..%2F..%2Fsites", "%00", "x" * 37, "' OR 1=1 --"])
async def test_odd_ids_are_not_found(calls, role_id):
    for method in ("get", "patch", "delete"):
        kw = {"json": {"name": "x"}} if method == "patch" else {}
        resp = await calls.call(method, f"/roles/{role_id}", **kw)
        assert resp.status_code == 404, resp.text


async def test_builtin_roles_are_protected(calls):
    data = {r["systemKey"]: r for r in await calls.ok("get", "/roles")}
    for key in ("admin", "public", "subscriber"):
        error = await calls.err("delete", f"/roles/{data[key]['id']}", 409, "CONFLICT")
        assert "built-in" in error["message"]
    await calls.err("patch", f"/roles/{data['admin']['id']}", 409, "CONFLICT", ["adminAccess"],
                     json={"adminAccess": False})
    renamed = await calls.ok("patch", f"/roles/{data['admin']['id']}", json={"name": "Site admins"})
    assert renamed["systemKey"] == "admin" and renamed["adminAccess"] is True


async def test_open_roles_never_get_admin_access(calls):
    data = {r["systemKey"]: r for r in await calls.ok("get", "/roles")}
    for key in ("public", "subscriber"):
        error = await calls.err("patch", f"/roles/{data[key]['id']}", 409, "CONFLICT", json={"adminAccess": True})
        assert key in error["message"]
        await calls.err("patch", f"/roles/{data[key]['id']}", 409, "CONFLICT",
                         json={"parentId": data["admin"]["id"]})
    # Nor through an ancestor that gains admin access later.
    base = await calls.ok("post", "/roles", 201, json={"name": "Base"})
    await calls.ok("patch", f"/roles/{data['public']['id']}", json={"parentId": base["id"]})
    await calls.err("patch", f"/roles/{base['id']}", 409, "CONFLICT", json={"adminAccess": True})
    assert (await calls.ok("get", f"/roles/{base['id']}"))["adminAccess"] is False


async def test_cycles_and_depth_are_refused(calls):
    a = await calls.ok("post", "/roles", 201, json={"name": "A"})
    b = await calls.ok("post", "/roles", 201, json={"name": "B", "parentId": a["id"]})
    c = await calls.ok("post", "/roles", 201, json={"name": "C", "parentId": b["id"]})
    await calls.err("patch", f"/roles/{a['id']}", 400, "VALIDATION_FAILED", ["parentId"], json={"parentId": c["id"]})
    await calls.err("patch", f"/roles/{a['id']}", 400, "VALIDATION_FAILED", ["parentId"], json={"parentId": a["id"]})
    parent = c["id"]
    for i in range(29):  # A, B, C + 29 = 32 roles deep: the limit
        parent = (await calls.ok("post", "/roles", 201, json={"name": f"D{i}", "parentId": parent}))["id"]
    await calls.err("post", "/roles", 400, "VALIDATION_FAILED", ["parentId"], json={"name": "Too deep",
                                                                                     "parentId": parent})
    # Hanging the 32-deep tree under another role would make it deeper too.
    top = await calls.ok("post", "/roles", 201, json={"name": "Top"})
    await calls.err("patch", f"/roles/{a['id']}", 400, "VALIDATION_FAILED", ["parentId"], json={"parentId": top["id"]})


async def test_delete_refuses_roles_with_members_or_children(calls, svc_app, site, make_member):
    role = await calls.ok("post", "/roles", 201, json={"name": "Staffed"})
    member = await make_member(site, role["id"])
    error = await calls.err("delete", f"/roles/{role['id']}", 409, "CONFLICT")
    assert error["extensions"]["members"] == 1
    parent = await calls.ok("post", "/roles", 201, json={"name": "Parent"})
    child = await calls.ok("post", "/roles", 201, json={"name": "Child", "parentId": parent["id"]})
    await calls.err("delete", f"/roles/{parent['id']}", 409, "CONFLICT")
    # Deleting the parent together with its child is fine (bulk form, any order).
    await calls.ok("delete", "/roles", 204, json=[parent["id"], child["id"]])
    # Once the member has another role, the role can go.
    async with svc_app.kernel.db.begin() as conn:
        from plugins.access import api

        await api.set_membership(conn, site, member.id, await role_id_of(svc_app, site, "subscriber"))
    await calls.ok("delete", f"/roles/{role['id']}", 204)


async def test_deleting_a_role_removes_its_attachments(calls):
    role = await calls.ok("post", "/roles", 201, json={"name": "Temp"})
    policy = await calls.ok("post", "/policies", 201, json={"name": "P"})
    await calls.ok("post", f"/policies/{policy['id']}/attach", 201, json={"roleId": role["id"]})
    await calls.ok("delete", f"/roles/{role['id']}", 204)
    assert (await calls.ok("get", f"/policies/{policy['id']}"))["attachments"] == []


async def test_directus_bulk_forms(calls):
    a = await calls.ok("post", "/roles", 201, json={"name": "Bulk A"})
    b = await calls.ok("post", "/roles", 201, json={"name": "Bulk B"})
    data = await calls.ok("patch", "/roles", json={"keys": [a["id"], b["id"]], "data": {"adminAccess": True}})
    assert [r["adminAccess"] for r in data] == [True, True]
    # All or nothing: one unknown id and nothing changes.
    await calls.err("patch", "/roles", 404, "RECORD_NOT_FOUND",
                     json={"keys": [a["id"], "0190a0a0-0000-7000-8000-000000000000"], "data": {"adminAccess": False}})
    assert (await calls.ok("get", f"/roles/{a['id']}"))["adminAccess"] is True
    await calls.err("patch", "/roles", 400, "VALIDATION_FAILED", ["keys"], json={"keys": [], "data": {}})
    await calls.err("patch", "/roles", 400, "VALIDATION_FAILED", ["data"], json={"keys": [a["id"]], "data": 3})
    await calls.err("patch", "/roles", 400, "VALIDATION_FAILED", ["keys", "0"], json={"keys": [7], "data": {}})
    await calls.err("patch", "/roles", 400, "VALIDATION_FAILED", ["extra"], json={"keys": [a["id"]], "data": {},
                                                                                  "extra": 1})
    await calls.err("delete", "/roles", 400, "VALIDATION_FAILED", json={"keys": "x"})
    await calls.err("delete", "/roles", 400, "VALIDATION_FAILED", json=["x"] * 101)
    await calls.err("delete", "/roles", 400, "VALIDATION_FAILED")
    await calls.ok("delete", "/roles", 204, json={"keys": [a["id"], b["id"]]})
    assert len(await calls.ok("get", "/roles")) == 3
