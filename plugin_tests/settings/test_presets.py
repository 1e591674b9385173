"""View presets and bookmarks: scope from ownership, the role chain, precedence of the effective
default, who manages what, bad input, and site B never seeing site A's presets."""

from __future__ import annotations

from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app (conftest.py's
# ``shared_site``, with the settings tests' settings), each in a new site of it
# (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def _roles(calls):
    parent = await calls.ok("post", "/roles", status=201, json={"name": "Editors"})
    child = await calls.ok("post", "/roles", status=201, json={"name": "Juniors", "parentId": parent["id"]})
    return parent["id"], child["id"]


async def test_precedence_user_then_role_chain_then_global(calls, site, make_member):
    parent, child = await _roles(calls)
    member = await make_member(site, child)
    me = {"headers": member.headers}
    assert await calls.ok("get", "/presets/effective", params={"collection": "posts"}, **me) is None
    glob = await calls.ok("post", "/presets", status=201, json={"collection": "posts", "layout": "tabular",
                                                                "layoutQuery": {"tabular": {"limit": 50}}})
    assert glob["sourceScope"] == "global" and glob["userId"] is None and glob["roleId"] is None
    effective = await calls.ok("get", "/presets/effective", params={"collection": "posts"}, **me)
    assert (effective["id"], effective["sourceScope"]) == (glob["id"], "global")
    from_parent = await calls.ok("post", "/presets", status=201,
                                 json={"collection": "posts", "layout": "cards", "roleId": parent})
    effective = await calls.ok("get", "/presets/effective", params={"collection": "posts"}, **me)
    assert (effective["id"], effective["sourceScope"]) == (from_parent["id"], "role")  # inherited down the chain
    from_child = await calls.ok("post", "/presets", status=201,
                                json={"collection": "posts", "layout": "kanban", "roleId": child})
    assert (await calls.ok("get", "/presets/effective", params={"collection": "posts"}, **me))["id"] == \
        from_child["id"]
    own = await calls.ok("post", "/presets", status=201, json={"collection": "posts", "layout": "map",
                                                               "userId": member.id}, **me)
    effective = await calls.ok("get", "/presets/effective", params={"collection": "posts"}, **me)
    assert (effective["id"], effective["sourceScope"], effective["layout"]) == (own["id"], "user", "map")
    # Everything the member sees, its own first, then its role chain in order, then global.
    listed = await calls.ok("get", "/presets", params={"collection": "posts"}, **me)
    assert [p["id"] for p in listed] == [own["id"], from_child["id"], from_parent["id"], glob["id"]]
    await calls.ok("delete", f"/presets/{own['id']}", status=204, **me)
    await calls.ok("delete", f"/presets/{from_child['id']}", status=204)
    assert (await calls.ok("get", "/presets/effective", params={"collection": "posts"}, **me))["id"] == \
        from_parent["id"]
    # A member of the parent role does not inherit the child's presets (the chain goes up only).
    await calls.ok("post", "/presets", status=201, json={"collection": "pages", "roleId": child, "layout": "x"})
    senior = await make_member(site, parent)
    assert await calls.ok("get", "/presets/effective", params={"collection": "pages"},
                          headers=senior.headers) is None
    # Another collection has its own default; an admin sees every preset of the site.
    assert await calls.ok("get", "/presets/effective", params={"collection": "other"}, **me) is None
    assert len(await calls.ok("get", "/presets")) == 3


async def test_bookmarks_and_who_manages_what(calls, site, make_member):
    parent, child = await _roles(calls)
    member = await make_member(site, child)
    outsider = await make_member(site, "subscriber")
    me = {"headers": member.headers}
    mine = await calls.ok("post", "/presets", status=201, json={"collection": "posts", "bookmark": "Mine",
                                                                "filter": {"status": {"_eq": "draft"}},
                                                                "userId": member.id}, **me)
    team = await calls.ok("post", "/presets", status=201, json={"collection": "posts", "bookmark": "Team",
                                                                "roleId": parent})
    every = await calls.ok("post", "/presets", status=201, json={"collection": "posts", "bookmark": "All"})
    await calls.ok("post", "/presets", status=201, json={"collection": "posts", "layout": "tabular"})  # no bookmark
    marks = await calls.ok("get", "/presets/bookmarks", params={"collection": "posts"}, **me)
    assert [(b["id"], b["sourceScope"]) for b in marks] == [(mine["id"], "user"), (team["id"], "role"),
                                                            (every["id"], "global")]
    assert [b["id"] for b in await calls.ok("get", "/presets/bookmarks", headers=outsider.headers)] == [every["id"]]
    # A member manages its own presets only; role and global ones need admin.
    await calls.err("post", "/presets", 403, "PERMISSION_DENIED", json={"collection": "posts"}, **me)
    await calls.err("post", "/presets", 403, "PERMISSION_DENIED", json={"collection": "posts", "roleId": child}, **me)
    await calls.err("post", "/presets", 403, "PERMISSION_DENIED",
                    json={"collection": "posts", "userId": outsider.id}, **me)
    await calls.err("patch", f"/presets/{every['id']}", 403, "PERMISSION_DENIED", json={"layout": "x"}, **me)
    await calls.err("delete", f"/presets/{team['id']}", 403, "PERMISSION_DENIED", **me)
    await calls.err("patch", f"/presets/{mine['id']}", 404, "RECORD_NOT_FOUND", json={"layout": "x"},
                    headers=outsider.headers)
    await calls.err("delete", f"/presets/{mine['id']}", 404, "RECORD_NOT_FOUND", headers=outsider.headers)
    await calls.err("get", f"/presets/{mine['id']}", 404, "RECORD_NOT_FOUND", headers=outsider.headers)
    changed = await calls.ok("patch", f"/presets/{mine['id']}", json={"bookmark": "Drafts", "icon": "edit"}, **me)
    assert changed["bookmark"] == "Drafts" and changed["icon"] == "edit" and changed["sourceScope"] == "user"
    assert (await calls.ok("get", f"/presets/{mine['id']}", **me))["bookmark"] == "Drafts"
    # An admin may manage a member's preset and make one for a member.
    await calls.ok("patch", f"/presets/{mine['id']}", json={"color": "#ff0000"})
    made = await calls.ok("post", "/presets", status=201, json={"collection": "pages", "userId": outsider.id})
    assert made["sourceScope"] == "user"
    # One default per scope and collection; bookmark names unique per owner.
    await calls.err("post", "/presets", 409, "CONFLICT", json={"collection": "posts", "layout": "cards"})
    await calls.err("post", "/presets", 409, "CONFLICT", json={"collection": "posts", "bookmark": "All"})
    await calls.ok("delete", f"/presets/{mine['id']}", status=204, **me)
    await calls.err("delete", f"/presets/{mine['id']}", 404, "RECORD_NOT_FOUND", **me)


async def test_bad_input(calls, site, site_b, calls_b):
    role_b = await calls_b.ok("post", "/roles", status=201, json={"name": "Only in B"})
    for body, path in (({}, ["collection"]), ({"collection": ""}, ["collection"]), ({"collection": 5}, ["collection"]),
                       ({"collection": "p", "extra": 1}, ["extra"]), ({"collection": "p", "layout": 3}, ["layout"]),
                       ({"collection": "p", "layoutQuery": [1]}, ["layoutQuery"]),
                       ({"collection": "p", "filter": "x"}, ["filter"]), ({"collection": "p", "bookmark": ""}, ["bookmark"]),
                       ({"collection": "p", "bookmark": "x" * 201}, ["bookmark"]),
                       ({"collection": "p", "userId": "u", "roleId": "r"}, ["roleId"]),
                       ({"collection": "p", "roleId": role_b["id"]}, ["roleId"]),
                       ({"collection": "p", "userId": "not-a-member"}, ["userId"]),
                       ({"collection": "p", "userId": 7}, ["userId"])):
        await calls.err("post", "/presets", 400, "VALIDATION_FAILED", path_is=path, json=body)
    await calls.err("post", "/presets", 400, "VALIDATION_FAILED", json=[])
    preset = await calls.ok("post", "/presets", status=201, json={"collection": "p"})
    for body, path in (({"userId": "x"}, ["userId"]), ({"collection": "q"}, ["collection"]),
                       ({"search": 1}, ["search"]), ({"layoutOptions": 1}, ["layoutOptions"])):
        await calls.err("patch", f"/presets/{preset['id']}", 400, "VALIDATION_FAILED", path_is=path, json=body)
    await calls.err("get", "/presets/effective", 400, "VALIDATION_FAILED", path_is=["collection"])
    assert await calls.ok("get", "/presets") == [preset]


async def test_site_b_never_sees_site_a(calls, calls_b, site):
    parent, _ = await _roles(calls)
    preset = await calls.ok("post", "/presets", status=201, json={"collection": "posts", "bookmark": "A"})
    await calls.ok("post", "/presets", status=201, json={"collection": "posts", "roleId": parent})
    assert await calls_b.ok("get", "/presets") == []
    assert await calls_b.ok("get", "/presets/bookmarks") == []
    assert await calls_b.ok("get", "/presets/effective", params={"collection": "posts"}) is None
    await calls_b.err("get", f"/presets/{preset['id']}", 404, "RECORD_NOT_FOUND")
    await calls_b.err("patch", f"/presets/{preset['id']}", 404, "RECORD_NOT_FOUND", json={"layout": "x"})
    await calls_b.err("delete", f"/presets/{preset['id']}", 404, "RECORD_NOT_FOUND")
    await calls_b.err("post", "/presets", 400, "VALIDATION_FAILED", path_is=["roleId"],
                      json={"collection": "posts", "roleId": parent})
    await calls_b.ok("post", "/presets", status=201, json={"collection": "posts", "bookmark": "A"})  # no clash
    assert len(await calls.ok("get", "/presets")) == 2
