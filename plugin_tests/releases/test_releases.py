"""/releases: CRUD, item entries, publish in both modes with outcomes, bad input, site isolation."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugin_tests.releases.conftest import draft_posts, entries, later, release, statuses, studio_member

# Every test writes and reads in sites of its own: they share the module's app, each in new sites
# of it (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

R = "/releases"


async def test_create_list_detail_patch_and_delete(calls, svc_app, site):
    a, b, c = await draft_posts(calls, "a", "b", "c")
    made = await release(calls, [a, b])
    assert made["status"] == "draft" and made["itemCount"] == 2 and made["publishAt"] is None
    assert [(e["itemId"], e["targetStatus"], e["outcome"]) for e in made["items"]] == [
        (a, "published", None), (b, "published", None)]
    scheduled = await release(calls, name="Later", publishAt=later(hours=2),
                              maintenanceWindow={"windows": [{"dow": 1, "start": "02:00", "end": "04:00"}]})
    assert scheduled["status"] == "scheduled" and scheduled["nextRunAt"] is not None
    assert scheduled["maintenanceWindow"] == {"windows": [{"dow": 1, "start": "02:00", "end": "04:00"}]}

    listed = await calls.ok("get", R, full=True)
    assert [r["name"] for r in listed["data"]] == ["Later", "Spring launch"] and listed["meta"]["total"] == 2
    assert "items" not in listed["data"][0] and listed["data"][1]["itemCount"] == 2
    only = await calls.ok("get", R, full=True, params={"status": "scheduled"})
    assert [r["id"] for r in only["data"]] == [scheduled["id"]] and only["meta"]["total"] == 1
    page2 = await calls.ok("get", R, full=True, params={"page": 2, "limit": 1})
    assert [r["id"] for r in page2["data"]] == [made["id"]] and page2["meta"]["page"] == 2

    changed = await calls.ok("patch", f"{R}/{made['id']}", json={
        "name": "Renamed", "atomicityMode": "best_effort", "addItems": entries([c], status="archived"),
        "removeItems": [{"collection": "posts", "itemId": a}]})
    assert changed["name"] == "Renamed" and changed["atomicityMode"] == "best_effort"
    assert [(e["itemId"], e["targetStatus"]) for e in changed["items"]] == [(b, "published"), (c, "archived")]
    # Adding an item again replaces its entry rather than listing it twice.
    again = await calls.ok("patch", f"{R}/{made['id']}", json={"addItems": entries([c])})
    assert [(e["itemId"], e["targetStatus"]) for e in again["items"]] == [(b, "published"), (c, "published")]
    assert (await calls.ok("get", f"{R}/{made['id']}"))["items"] == again["items"]

    # Clearing publishAt makes a scheduled release a draft again.
    cleared = await calls.ok("patch", f"{R}/{scheduled['id']}", json={"publishAt": None})
    assert cleared["status"] == "draft" and cleared["nextRunAt"] is None

    await calls.ok("delete", f"{R}/{made['id']}", status=204)
    await calls.err("get", f"{R}/{made['id']}", 404, "RECORD_NOT_FOUND")
    await calls.err("delete", f"{R}/{made['id']}", 404, "RECORD_NOT_FOUND")
    from sqlalchemy import func, select

    from plugins.releases.tables import release_items
    async with svc_app.kernel.db.connect() as conn:  # the items cascade
        left = await conn.scalar(select(func.count()).select_from(release_items).where(
            release_items.c.release_id == made["id"]))
    assert left == 0


async def test_all_or_nothing_publishes_everything_or_nothing(calls):
    a, b, c = await draft_posts(calls, "a", "b", "c")
    rel = await release(calls, [a, b, c])
    await calls.ok("delete", f"/items/posts/{c}", status=204)

    blocked = await calls.ok("post", f"{R}/{rel['id']}/publish")
    assert blocked["status"] == "failed" and blocked["release"]["status"] == "failed"
    assert blocked["outcomes"] == [
        {"collection": "posts", "itemId": a, "outcome": "skipped", "reason": "RELEASE_BLOCKED"},
        {"collection": "posts", "itemId": b, "outcome": "skipped", "reason": "RELEASE_BLOCKED"},
        {"collection": "posts", "itemId": c, "outcome": "failed", "reason": "ITEM_DELETED"}]
    assert await statuses(calls, [a, b]) == ["draft", "draft"]  # the pre-flight left nothing behind
    revisions = await calls.ok("get", f"/items/posts/{a}/revisions")
    assert not [r for r in revisions if r.get("causedBy") == f"release:{rel['id']}"]
    detail = await calls.ok("get", f"{R}/{rel['id']}")
    assert [e["outcome"] for e in detail["items"]] == ["skipped", "skipped", "failed"]
    assert "ITEM_DELETED" in detail["lastError"]

    await calls.ok("patch", f"{R}/{rel['id']}", json={"removeItems": [{"collection": "posts", "itemId": c}]})
    done = await calls.ok("post", f"{R}/{rel['id']}/publish")
    assert done["status"] == "published" and done["release"]["publishedAt"] is not None
    assert [o["outcome"] for o in done["outcomes"]] == ["published", "published"]
    assert await statuses(calls, [a, b]) == ["published", "published"]
    revisions = await calls.ok("get", f"/items/posts/{a}/revisions")
    assert revisions[0]["causedBy"] == f"release:{rel['id']}"

    await calls.err("post", f"{R}/{rel['id']}/publish", 409, "ALREADY_PUBLISHED")
    await calls.err("patch", f"{R}/{rel['id']}", 409, "RELEASE_IMMUTABLE", json={"addItems": entries([a])})
    await calls.err("patch", f"{R}/{rel['id']}", 409, "RELEASE_IMMUTABLE", json={"publishAt": later(hours=1)})
    empty = await release(calls, [])
    await calls.err("post", f"{R}/{empty['id']}/publish", 422, "EMPTY_RELEASE")
    await calls.err("post", f"{R}/nope/publish", 404, "RECORD_NOT_FOUND")


async def test_best_effort_and_the_publishers_permissions(calls, svc_app, site, make_member):
    a, b = await draft_posts(calls, "a", "b")
    [p] = await draft_posts(calls, "p", collection="pages")
    rel = await release(calls, [a], atomicityMode="best_effort")
    await calls.ok("patch", f"{R}/{rel['id']}", json={"addItems": entries([p], collection="pages")})
    await calls.ok("patch", f"{R}/{rel['id']}", json={"addItems": entries([b])})
    await calls.ok("delete", f"/items/posts/{b}", status=204)

    # An editor may read both collections but update only posts: its publish meets its permissions.
    editor = await studio_member(svc_app, site, calls, make_member, [
        {"collection": "posts", "action": "read"}, {"collection": "posts", "action": "update"},
        {"collection": "pages", "action": "read"}])
    result = (await svc_app.client.post(f"/api/v1{R}/{rel['id']}/publish", headers=editor.headers))
    assert result.status_code == 200, result.text
    body = result.json()["data"]
    assert body["status"] == "partially_failed"
    assert body["outcomes"] == [
        {"collection": "posts", "itemId": a, "outcome": "published"},
        {"collection": "pages", "itemId": p, "outcome": "failed", "reason": "PERMISSION_DENIED"},
        {"collection": "posts", "itemId": b, "outcome": "failed", "reason": "ITEM_DELETED"}]
    assert await statuses(calls, [a]) == ["published"] and await statuses(calls, [p], "pages") == ["draft"]

    [q] = await draft_posts(calls, "q")
    none = await release(calls, [q], atomicityMode="best_effort", name="Nothing")
    await calls.ok("delete", f"/items/posts/{q}", status=204)
    failed = await calls.ok("post", f"{R}/{none['id']}/publish")
    assert failed["status"] == "failed" and failed["outcomes"][0]["reason"] == "ITEM_DELETED"


async def test_pinned_revisions_and_named_versions(calls):
    await calls.collection("docs", {"title": "string"}, versioning=True)
    [d] = [str(x["id"]) for x in await calls.create("docs", [{"title": "v1", "status": "draft"}])]
    await calls.ok("patch", f"/items/docs/{d}", json={"title": "v2"})
    first = [r for r in await calls.ok("get", f"/items/docs/{d}/revisions") if r["data"].get("title") == "v2"][0]
    await calls.ok("patch", f"/items/docs/{d}", json={"title": "v3"})
    staged = await calls.ok("post", f"/items/docs/{d}/revisions", status=201, json={"data": {"title": "v9"}})
    await calls.err("post", R, 409, "REVISION_STAGED", json={"name": "x", "addItems": [
        {"collection": "docs", "itemId": d, "targetStatus": "published", "revisionId": staged["id"]}]})
    rel = await calls.ok("post", R, status=201, json={"name": "pin", "addItems": [
        {"collection": "docs", "itemId": d, "targetStatus": "published", "revisionId": first["id"]}]})
    assert rel["items"][0]["revisionId"] == first["id"]
    done = await calls.ok("post", f"{R}/{rel['id']}/publish")
    assert done["status"] == "published"
    item = await calls.get("docs", d)
    assert (item["title"], item["status"]) == ("v2", "published")

    # A named version: publishing promotes it through the versions API, then sets the status.
    [e] = [str(x["id"]) for x in await calls.create("docs", [{"title": "main", "status": "draft"}])]
    await calls.ok("post", f"/items/docs/{e}/versions", status=201, json={"key": "spring", "name": "Spring"})
    await calls.ok("patch", f"/items/docs/{e}/versions/spring", json={"data": {"title": "spring copy"}})
    await calls.err("post", R, 404, None, json={"name": "x", "addItems": [
        {"collection": "docs", "itemId": e, "targetStatus": "published", "versionKey": "nope"}]})
    rel = await calls.ok("post", R, status=201, json={"name": "ver", "addItems": [
        {"collection": "docs", "itemId": e, "targetStatus": "published", "versionKey": "spring"}]})
    done = await calls.ok("post", f"{R}/{rel['id']}/publish")
    assert done["status"] == "published"
    item = await calls.get("docs", e)
    assert (item["title"], item["status"]) == ("spring copy", "published")
    causes = {r.get("causedBy") for r in await calls.ok("get", f"/items/docs/{e}/revisions")}
    assert f"release:{rel['id']}" in causes


async def test_a_write_the_schema_now_refuses_is_a_validation_outcome(calls):
    await calls.collection("notes", {"title": "string"})
    [n] = [str(x["id"]) for x in await calls.create("notes", [{"title": "a long title", "status": "draft"}])]
    await calls.ok("patch", f"/items/notes/{n}", json={"title": "ok"})
    [old] = [r for r in await calls.ok("get", f"/items/notes/{n}/revisions") if r["data"].get("title") == "a long title"]
    rel = await calls.ok("post", R, status=201, json={"name": "v", "atomicityMode": "best_effort", "addItems": [
        {"collection": "notes", "itemId": n, "targetStatus": "published", "revisionId": old["id"]}]})
    await calls.ok("patch", "/fields/notes/title", json={"options": {"maxLength": 5}})
    result = await calls.ok("post", f"{R}/{rel['id']}/publish")
    assert result["status"] == "failed"
    assert result["outcomes"] == [{"collection": "notes", "itemId": n, "outcome": "failed",
                                   "reason": "VALIDATION_FAILED"}]
    assert (await calls.get("notes", n))["title"] == "ok"


BAD_BODIES = [
    ({}, ["name"]),
    ({"name": ""}, ["name"]),
    ({"name": "x" * 201}, ["name"]),
    ({"name": "x", "atomicityMode": "sometimes"}, ["atomicityMode"]),
    ({"name": "x", "publishAt": "2001-01-01T00:00:00Z"}, ["publishAt"]),
    ({"name": "x", "publishAt": "tomorrow"}, ["publishAt"]),
    ({"name": "x", "publishAt": "2099-01-01T00:00:00"}, ["publishAt"]),
    ({"name": "x", "maintenanceWindow": {"windows": [{"dow": 7, "start": "01:00", "end": "02:00"}]}},
     ["maintenanceWindow", "windows", 0, "dow"]),
    ({"name": "x", "maintenanceWindow": {"windows": [{"dow": True, "start": "01:00", "end": "02:00"}]}},
     ["maintenanceWindow", "windows", 0, "dow"]),
    ({"name": "x", "maintenanceWindow": {"windows": [{"dow": 1, "start": "25:00", "end": "26:00"}]}},
     ["maintenanceWindow", "windows", 0, "start"]),
    ({"name": "x", "maintenanceWindow": {"windows": [{"dow": 1, "start": "03:00", "end": "02:00"}]}},
     ["maintenanceWindow", "windows", 0, "end"]),
    ({"name": "x", "maintenanceWindow": {"windows": []}}, ["maintenanceWindow", "windows"]),
    ({"name": "x", "maintenanceWindow": {"windows": [{"dow": 1, "start": "01:00", "end": "02:00"}] * 51}},
     ["maintenanceWindow", "windows"]),
    ({"name": "x", "maintenanceWindow": "weekends"}, ["maintenanceWindow"]),
    ({"name": "x", "addItems": [{"collection": "posts", "itemId": str(i), "targetStatus": "published"}
                                for i in range(1001)]}, ["addItems"]),
    ({"name": "x", "addItems": [{"collection": "posts", "targetStatus": "published"}]}, ["addItems", 0, "itemId"]),
    ({"name": "x", "addItems": [{"collection": "posts", "itemId": "1", "targetStatus": "pub lished"}]},
     ["addItems", 0, "targetStatus"]),
    ({"name": "x", "addItems": [{"collection": "posts", "itemId": "1", "targetStatus": "published", "x": 1}]},
     ["addItems", 0, "x"]),
    ({"name": "x", "addItems": [{"collection": "posts", "itemId": "1", "targetStatus": "published"}] * 2},
     ["addItems", 1]),
    ({"name": "x", "addItems": "all"}, ["addItems"]),
    ({"name": "x", "removeItems": []}, ["removeItems"]),
    ({"name": "x", "colour": "red"}, ["colour"]),
]


async def test_bad_input(calls):
    [a] = await draft_posts(calls, "a")
    for body, path in BAD_BODIES:
        error = await calls.err("post", R, 422, "VALIDATION_FAILED", json=body)
        assert error.get("path") == [str(p) for p in path], (body, error)
    rel = await release(calls, [a])
    for body, path in [({"removeItems": [{"collection": "posts"}]}, ["removeItems", 0, "itemId"]),
                       ({"removeItems": [{"collection": "posts", "itemId": a, "x": 1}]}, ["removeItems", 0]),
                       ({"publishAt": "2001-01-01T00:00:00+02:00"}, ["publishAt"]),
                       ({"name": None}, ["name"])]:
        error = await calls.err("patch", f"{R}/{rel['id']}", 422, "VALIDATION_FAILED", json=body)
        assert error.get("path") == [str(p) for p in path], (body, error)
    await calls.err("post", R, 404, "ITEM_NOT_FOUND", json={"name": "x", "addItems": entries(["404404"])})
    await calls.err("post", R, 404, "ITEM_NOT_FOUND", json={"name": "x", "addItems": entries([a], "nowhere")})
    await calls.err("get", R, 422, "VALIDATION_FAILED", params={"status": "sometimes"})
    await calls.err("get", R, 400, "VALIDATION_FAILED", params={"limit": "0"})
    await calls.err("post", R, 400, "VALIDATION_FAILED", content=b"not json", headers={"Content-Type": "application/json"})
    # A release holds at most 1,000 items, also when they come in several patches.
    assert (await calls.ok("get", f"{R}/{rel['id']}"))["itemCount"] == 1


async def test_members_of_studio_roles_only(svc_app, site, calls, anon_calls, make_member):
    rel = await release(calls, [])
    await anon_calls.err("get", R, 401)
    await anon_calls.err("get", f"{R}/{rel['id']}", 401)
    subscriber = Calls(svc_app.client, (await make_member(site, "subscriber")).headers)  # the frontend realm
    await subscriber.err("get", R, 403, "PERMISSION_DENIED")
    await subscriber.err("post", f"{R}/{rel['id']}/publish", 403, "PERMISSION_DENIED")


async def test_site_isolation(calls, calls_b):
    [a] = await draft_posts(calls, "a")
    [b] = await draft_posts(calls_b, "b")
    rel = await release(calls, [a])
    assert (await calls_b.ok("get", R, full=True))["meta"]["total"] == 0
    for method in ("get", "patch", "delete"):
        await calls_b.err(method, f"{R}/{rel['id']}", 404, "RECORD_NOT_FOUND", json={} if method == "patch" else None)
    await calls_b.err("post", f"{R}/{rel['id']}/publish", 404, "RECORD_NOT_FOUND")
    # B's item cannot join A's release, nor A's item B's release.
    await calls.err("patch", f"{R}/{rel['id']}", 404, "ITEM_NOT_FOUND", json={"addItems": entries([b])})
    await calls_b.err("post", R, 404, "ITEM_NOT_FOUND", json={"name": "x", "addItems": entries([a])})
    detail = await calls.ok("get", f"{R}/{rel['id']}")
    assert [e["itemId"] for e in detail["items"]] == [a]
