"""The config routes are for site admins, and every export and import stays in its site."""

from __future__ import annotations

IMPORT = "/config/import"
V = "svc.config@v1"


async def test_admin_only(calls, member_calls, anon_calls):
    await calls.collection("posts")
    manifest = {"version": V, "collections": [{"name": "other"}]}
    for who, status, code in ((member_calls, 403, "PERMISSION_DENIED"), (anon_calls, 401, "UNAUTHENTICATED")):
        await who.err("get", "/config/export", status, code)
        await who.err("post", IMPORT + "?dryRun=true", status, code, json=manifest)
        await who.err("post", IMPORT + "?mode=replace-all", status, code, json=manifest)
    assert [c["name"] for c in await calls.ok("get", "/collections")] == ["posts"]


async def test_export_never_includes_another_site(calls, calls_b):
    await calls.collection("posts")
    await calls.field("posts", "title", "string")
    await calls_b.collection("pages")
    data_b = await calls_b.ok("get", "/config/export")
    assert [c["name"] for c in data_b["collections"]] == ["pages"]
    assert data_b["fields"] == [] and data_b["relations"] == []


async def test_import_into_b_never_touches_a(calls, calls_b):
    await calls.collection("posts")
    await calls.field("posts", "title", "string")
    await calls.collection("people")
    await calls.field("posts", "author", "uuid")
    await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="people")
    exported_a = await calls.ok("get", "/config/export")
    changed = {**exported_a, "fields": [{**f, "type": "text"} if f["field"] == "title" else f
                                        for f in exported_a["fields"]]}
    # In B, nothing exists: the same manifest is all creates there, and replace-all deletes only B's own.
    await calls_b.collection("pages")
    dry = await calls_b.ok("post", IMPORT + "?dryRun=true&mode=replace-all", json=changed)
    assert dry["diff"]["collections"] == {"create": 2, "update": 0, "delete": 1, "unchanged": 0}
    assert dry["diff"]["destructive"] == []
    await calls_b.ok("post", IMPORT + "?mode=replace-all", json=changed)
    await calls_b.ok("post", IMPORT + "?mode=replace-all", json={"version": V})
    assert await calls_b.ok("get", "/collections") == []
    after_a = await calls.ok("get", "/config/export")
    assert {k: v for k, v in after_a.items() if k != "exportedAt"} == \
        {k: v for k, v in exported_a.items() if k != "exportedAt"}


async def test_an_import_is_listed_as_work_in_its_site(calls, calls_b):
    """-- govern43: an applied import in GET /work (not a dry run); a refused one ends failed with
    the API's message; another site lists none of it."""
    await calls.collection("posts")
    await calls.create("posts", {"status": "draft"})
    await calls.ok("post", IMPORT + "?dryRun=true", json={"version": V, "collections": [{"name": "tags"}]})
    assert await calls.ok("get", "/work") == []
    await calls.ok("post", IMPORT, json={"version": V, "collections": [{"name": "tags"}]})
    await calls.err("post", IMPORT + "?mode=replace-all", 409, "DESTRUCTIVE_BLOCKED", json={"version": V})
    refused, applied = await calls.ok("get", "/work")
    assert (applied["kind"], applied["label"], applied["status"], applied["error"]) == (
        "import", "Config import", "done", None)
    assert refused["status"] == "failed" and refused["error"]
    assert await calls_b.ok("get", "/work") == []
