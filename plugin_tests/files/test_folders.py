"""Folders as a resource (docs/files.md#folders): nested and per site, files moved between them
with ``PATCH /files/:id { folderId }``, names unique among siblings, no cycles, only empty
folders deleted, the media rules as permissions, and nothing of another site reachable."""

from __future__ import annotations

from sqlalchemy import func, select

from kernel.testing import shared as testing_shared
from plugins.files.tables import folders

from .conftest import FILES_ENV
from .corpus import gradient_jpeg, uploaded

# Every test writes and reads in a site of its own: they share the module's app (the files tests'
# settings, local storage: storage is not the subject), each in a new site of it
# (kernel/testing/shared.py).
shared_site = testing_shared.shared_site_started_with(env=FILES_ENV)
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

API = "/api/v1"


async def _file(calls, name: str) -> dict:
    return await uploaded(calls, name, gradient_jpeg((20, 10)))


async def test_nested_folders_and_moving_files(calls):
    photos = await calls.ok("post", "/folders", status=201, json={"name": "Photos"})
    assert photos["parent"] is None and photos["name"] == "Photos"
    summer = await calls.ok("post", "/folders", status=201, json={"name": "Summer", "parent": photos["id"]})
    beach = await calls.ok("post", "/folders", status=201, json={"name": "Beach", "parent": summer["id"]})
    docs = await calls.ok("post", "/folders", status=201, json={"name": "Docs"})
    assert summer["parent"] == photos["id"] and beach["parent"] == summer["id"]
    listed = await calls.ok("get", "/folders", full=True)
    assert [f["name"] for f in listed["data"]] == ["Beach", "Docs", "Photos", "Summer"]
    assert listed["meta"]["total"] == 4
    assert [f["id"] for f in await calls.ok("get", "/folders", params={"parent": "null"})] == [
        docs["id"],
        photos["id"],
    ]
    assert [f["id"] for f in await calls.ok("get", "/folders", params={"parent": photos["id"]})] == [
        summer["id"]
    ]
    assert (await calls.ok("get", f"/folders/{beach['id']}"))["parent"] == summer["id"]

    # A file goes into a folder, moves to another, and out again; filters find it there.
    shot = await _file(calls, "shot.jpg")
    assert shot["folderId"] is None
    moved = await calls.ok("patch", f"/files/{shot['id']}", json={"folderId": beach["id"]})
    assert moved["folderId"] == beach["id"]
    found = await calls.ok("get", "/files", params={"filter[folderId][_eq]": beach["id"]})
    assert [f["id"] for f in found] == [shot["id"]]
    moved = await calls.ok("patch", f"/files/{shot['id']}", json={"folderId": docs["id"]})
    assert moved["folderId"] == docs["id"]
    assert await calls.ok("get", "/files", params={"filter[folderId][_eq]": beach["id"]}) == []
    unknown = await calls.call(
        "patch", f"/files/{shot['id']}", json={"folderId": "0190a000-0000-7000-8000-0000000000aa"}
    )
    assert (unknown.status_code, unknown.json()["errors"][0]["path"]) == (400, ["folderId"])

    # Rename and move a folder with what it holds; never into itself or below itself.
    renamed = await calls.ok(
        "patch", f"/folders/{beach['id']}", json={"name": "Shore", "parent": photos["id"]}
    )
    assert (renamed["name"], renamed["parent"]) == ("Shore", photos["id"])
    for target in (photos["id"], summer["id"]):
        cycle = await calls.call("patch", f"/folders/{photos['id']}", json={"parent": target})
        assert (cycle.status_code, cycle.json()["errors"][0]["path"]) == (400, ["parent"]), target
    await calls.ok("patch", f"/folders/{summer['id']}", json={"parent": None})
    # A name is unique among its siblings, not across parents.
    clash = await calls.call("post", "/folders", json={"name": "Shore", "parent": photos["id"]})
    assert (clash.status_code, clash.json()["errors"][0]["code"]) == (409, "CONFLICT")
    await calls.ok("post", "/folders", status=201, json={"name": "Shore", "parent": summer["id"]})
    clash = await calls.call("patch", f"/folders/{docs['id']}", json={"name": "Photos"})
    assert clash.status_code == 409

    # Only an empty folder is deleted.
    held = await calls.call("delete", f"/folders/{docs['id']}")
    assert (held.status_code, held.json()["errors"][0]["code"]) == (409, "CONFLICT")
    nested = await calls.call("delete", f"/folders/{photos['id']}")
    assert nested.status_code == 409
    await calls.ok("patch", f"/files/{shot['id']}", json={"folderId": None})
    await calls.ok("delete", f"/folders/{docs['id']}", status=204)
    gone = await calls.call("get", f"/folders/{docs['id']}")
    assert (gone.status_code, gone.json()["errors"][0]["code"]) == (404, "RECORD_NOT_FOUND")


async def test_folder_bodies_are_validated(calls):
    for body, path in (
        ({}, ["name"]),
        ({"name": ""}, ["name"]),
        ({"name": "a/b"}, ["name"]),
        ({"name": " x"}, ["name"]),
        ({"name": "x" * 256}, ["name"]),
        ({"name": 3}, ["name"]),
        ({"name": "ok", "parent": 5}, ["parent"]),
        ({"name": "ok", "parent": "nope"}, ["parent"]),
        ({"name": "ok", "extra": 1}, ["extra"]),
    ):
        refused = await calls.call("post", "/folders", json=body)
        assert refused.status_code == 400, (body, refused.text)
        assert refused.json()["errors"][0]["path"] == path, body


async def test_folders_follow_the_media_rules(svc_app, calls, site, make_member):
    folder = await calls.ok("post", "/folders", status=201, json={"name": "Press"})
    shot = await _file(calls, "press.jpg")
    role = await calls.ok("post", "/roles", status=201, json={"name": "Viewers"})
    await calls.ok(
        "post",
        f"/roles/{role['id']}/permissions",
        status=201,
        json={"collection": "*", "action": "media:read"},
    )
    viewer = await make_member(site, role["id"])
    headers = {**viewer.headers, "X-Svc-Site": site}
    client = svc_app.client
    listed = await client.get(f"{API}/folders", headers=headers)
    assert listed.status_code == 200 and [f["id"] for f in listed.json()["data"]] == [folder["id"]]
    for method, path, body, action in (
        ("post", "/folders", {"name": "Mine"}, "media:create"),
        ("patch", f"/folders/{folder['id']}", {"name": "Renamed"}, "media:update"),
        ("delete", f"/folders/{folder['id']}", None, "media:delete"),
        ("patch", f"/files/{shot['id']}", {"folderId": folder["id"]}, "media:update"),
    ):
        refused = await client.request(method, f"{API}{path}", json=body, headers=headers)
        assert refused.status_code == 403, (method, path, refused.text)
        assert refused.json()["errors"][0]["extensions"]["reason"] == action
    # The public role without media:read sees no folders; with it, it lists them.
    anonymous = await client.get(f"{API}/folders", headers={"X-Svc-Site": site})
    assert anonymous.status_code == 403
    await calls.ok(
        "post", "/roles/public/permissions", status=201, json={"collection": "*", "action": "media:read"}
    )
    svc_app.kernel.access.invalidate(site)
    anonymous = await client.get(f"{API}/folders", headers={"X-Svc-Site": site})
    assert anonymous.status_code == 200 and anonymous.json()["data"][0]["id"] == folder["id"]


async def test_another_sites_folders_are_out_of_reach(svc_app, calls, calls_b, site, site_b):
    mine = await calls.ok("post", "/folders", status=201, json={"name": "Private"})
    theirs = await calls_b.ok("post", "/folders", status=201, json={"name": "Theirs"})
    shot = await _file(calls, "mine.jpg")
    assert [f["id"] for f in await calls_b.ok("get", "/folders")] == [theirs["id"]]
    for method, body in (("get", None), ("patch", {"name": "x"}), ("delete", None)):
        refused = await calls_b.call(method, f"/folders/{mine['id']}", json=body)
        assert (refused.status_code, refused.json()["errors"][0]["code"]) == (404, "RECORD_NOT_FOUND"), method
    # Another site's folder is no folder here: not a parent, not a place for a file.
    refused = await calls.call("post", "/folders", json={"name": "In B", "parent": theirs["id"]})
    assert (refused.status_code, refused.json()["errors"][0]["path"]) == (400, ["parent"])
    refused = await calls.call("patch", f"/folders/{mine['id']}", json={"parent": theirs["id"]})
    assert refused.status_code == 400
    refused = await calls.call("patch", f"/files/{shot['id']}", json={"folderId": theirs["id"]})
    assert (refused.status_code, refused.json()["errors"][0]["path"]) == (400, ["folderId"])
    assert (await calls.ok("get", f"/folders/{mine['id']}"))["name"] == "Private"
    assert (await calls_b.ok("get", f"/folders/{theirs['id']}"))["name"] == "Theirs"
    # Deleting site B takes its folders, nested and holding files, and leaves A's.
    inner = await calls_b.ok("post", "/folders", status=201, json={"name": "Inner", "parent": theirs["id"]})
    kept = await _file(calls_b, "kept.jpg")
    await calls_b.ok("patch", f"/files/{kept['id']}", json={"folderId": inner["id"]})
    await calls.ok("delete", f"/sites/{site_b}", status=204)
    async with svc_app.kernel.db.connect() as conn:
        left = (
            await conn.execute(
                select(folders.c.site_id, func.count())
                .where(folders.c.site_id.in_([site, site_b]))
                .group_by(folders.c.site_id)
            )
        ).all()
    assert [tuple(row) for row in left] == [(site, 1)]
