"""Named versions: create (a snapshot of main), read, update (never main), delete, compare,
promote (through the update path, with a revision), mainChanged and mainDiverged."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

FIELDS = {"title": "string", "body": "text", "n": "integer", "secret": "string"}
V = "/items/notes/a/versions"


async def _notes(calls: Calls, versioning: bool = True) -> dict:
    await calls.collection("notes", FIELDS, versioning=versioning)
    return await calls.create("notes", {"id": "a", "title": "one", "body": "b", "n": 1})


async def test_crud(calls: Calls):
    await _notes(calls)
    created = await calls.ok("post", V, status=201, json={"key": "spring-2", "name": "Spring"})
    assert created["key"] == "spring-2" and created["name"] == "Spring" and created["mainChanged"] is False
    assert created["data"] == {"title": "one", "body": "b", "n": 1}
    assert created["createdAt"] and created["userCreated"]
    assert (await calls.ok("post", V, status=201, json={"key": "nameless"}))["name"] == "nameless"
    assert [v["key"] for v in await calls.ok("get", V)] == ["spring-2", "nameless"]
    updated = await calls.ok("patch", f"{V}/spring-2", json={"data": {"title": "two"}, "name": "Spring 2"})
    assert updated["data"]["title"] == "two" and updated["data"]["body"] == "b" and updated["name"] == "Spring 2"
    assert (await calls.get("notes", "a"))["title"] == "one"  # main untouched
    assert await calls.ok("get", "/items/notes/a/revisions") == []  # and no revision
    assert await calls.ok("get", f"{V}/spring-2") == updated
    assert (await calls.ok("patch", f"{V}/spring-2", json={}))["data"]["title"] == "two"
    await calls.ok("delete", f"{V}/spring-2", status=204)
    await calls.err("get", f"{V}/spring-2", 404, "NOT_FOUND")
    await calls.err("delete", f"{V}/spring-2", 404, "NOT_FOUND")
    assert [v["key"] for v in await calls.ok("get", V)] == ["nameless"]


async def test_keys_names_and_conflicts(calls: Calls):
    await _notes(calls)
    await calls.ok("post", V, status=201, json={"key": "draft"})
    err = await calls.err("post", V, 409, "CONFLICT", json={"key": "draft"})
    assert err["path"] == ["key"]
    for key in ("", "Draft", "-x", "a" * 64, "a b", "ä", 5, None, "a/b"):
        await calls.err("post", V, 400, "VALIDATION_FAILED", ["key"], json={"key": key})
    assert (await calls.ok("post", V, status=201, json={"key": "a" * 63}))["key"] == "a" * 63
    await calls.err("post", V, 400, "VALIDATION_FAILED", ["name"], json={"key": "n1", "name": ""})
    await calls.err("post", V, 400, "VALIDATION_FAILED", ["name"], json={"key": "n1", "name": "x" * 201})
    await calls.err("post", V, 400, "VALIDATION_FAILED", ["name"], json={"key": "n1", "name": 3})
    await calls.err("post", V, 400, "VALIDATION_FAILED", ["data"], json={"key": "n1", "data": {}})
    await calls.err("post", V, 400, "VALIDATION_FAILED", json=["draft"])
    for key in ("Draft", "x" * 100, "nope"):
        await calls.err("get", f"{V}/{key}", 404, "NOT_FOUND")
        await calls.err("patch", f"{V}/{key}", 404, "NOT_FOUND", json={"name": "x"})
        await calls.err("post", f"{V}/{key}/promote", 404, "NOT_FOUND")
        await calls.err("get", f"{V}/{key}/compare", 404, "NOT_FOUND")
    await calls.err("post", "/items/notes/missing/versions", 404, "RECORD_NOT_FOUND", json={"key": "k"})


async def test_versioning_must_be_enabled_to_create(calls: Calls):
    await _notes(calls, versioning=False)
    err = await calls.err("post", V, 400, "VALIDATION_FAILED", json={"key": "draft"})
    assert err["extensions"]["reason"] == "versioning_disabled"
    assert await calls.ok("get", V) == []
    await calls.ok("patch", "/collections/notes", json={"versioning": True})
    await calls.ok("post", V, status=201, json={"key": "draft"})


async def test_update_data_is_validated_as_a_partial_item(calls: Calls):
    await _notes(calls)
    await calls.ok("post", V, status=201, json={"key": "v"})
    url = f"{V}/v"
    await calls.err("patch", url, 400, "VALIDATION_FAILED", ["data", "n"], json={"data": {"n": "many"}})
    await calls.err("patch", url, 400, "VALIDATION_FAILED", ["data", "ghost"], json={"data": {"ghost": 1}})
    await calls.err("patch", url, 400, "VALIDATION_FAILED", ["data", "id"], json={"data": {"id": "b"}})
    await calls.err("patch", url, 400, "VALIDATION_FAILED", ["data"], json={"data": "text"})
    await calls.err("patch", url, 400, "VALIDATION_FAILED", ["key"], json={"key": "other"})
    await calls.err("patch", url, 400, "VALIDATION_FAILED", ["name"], json={"name": ["x"]})
    await calls.err("patch", url, 400, "VALIDATION_FAILED", ["data", "n"], json={"data": {"n": 2**40}})
    huge = {"data": {"title": "x" * 2_000_000}}
    resp = await calls.call("patch", url, json=huge)
    assert resp.status_code == 400, resp.text  # 2 MB: under the body cap, refused by the field's length
    assert (await calls.ok("get", url))["data"]["title"] == "one"


async def test_compare(calls: Calls):
    await _notes(calls)
    await calls.ok("post", V, status=201, json={"key": "v"})
    await calls.ok("patch", f"{V}/v", json={"data": {"title": "two", "n": 5}})
    await calls.ok("patch", "/items/notes/a", json={"body": "main changed"})
    compared = await calls.ok("get", f"{V}/v/compare")
    assert compared["main"]["title"] == "one" and compared["main"]["id"] == "a"
    assert compared["version"] == {"title": "two", "body": "b", "n": 5}
    assert compared["changes"] == ["body", "n", "title"]


async def test_promote_applies_the_versions_changes_and_writes_a_revision(calls: Calls):
    await _notes(calls)
    await calls.ok("post", V, status=201, json={"key": "v"})
    await calls.ok("patch", f"{V}/v", json={"data": {"title": "two", "n": 5}})
    assert (await calls.ok("get", f"{V}/v"))["mainChanged"] is False
    full = await calls.ok("post", f"{V}/v/promote", full=True)
    assert full["data"]["title"] == "two" and full["data"]["n"] == 5
    [latest, *_] = await calls.ok("get", "/items/notes/a/revisions")
    assert full["meta"] == {"mainDiverged": False, "revisionId": latest["id"]}
    assert latest["kind"] == "promote" and latest["origin"] == {"version": "v"}
    assert latest["delta"] == {"title": {"from": "one", "to": "two"}, "n": {"from": 1, "to": 5}}
    after = await calls.ok("get", f"{V}/v")
    assert after["mainChanged"] is False  # re-based on the new main
    assert (await calls.ok("get", f"{V}/v/compare"))["changes"] == []


async def test_main_changed_and_diverged_keep_mains_newer_edits(calls: Calls):
    await _notes(calls)
    await calls.ok("post", V, status=201, json={"key": "v"})
    await calls.ok("patch", f"{V}/v", json={"data": {"title": "from version"}})
    await calls.ok("patch", "/items/notes/a", json={"body": "edited on main"})
    assert (await calls.ok("get", V))[0]["mainChanged"] is True
    full = await calls.ok("post", f"{V}/v/promote", full=True, json={})
    assert full["meta"]["mainDiverged"] is True
    # Only what the version changed is applied: main's newer body stays.
    assert full["data"]["title"] == "from version" and full["data"]["body"] == "edited on main"
    version = await calls.ok("get", f"{V}/v")
    assert version["mainChanged"] is False and version["data"]["body"] == "edited on main"


async def test_promote_selected_fields(calls: Calls):
    await _notes(calls)
    await calls.ok("post", V, status=201, json={"key": "v"})
    await calls.ok("patch", f"{V}/v", json={"data": {"title": "t2", "n": 7}})
    item = await calls.ok("post", f"{V}/v/promote", json={"fields": ["n"]})
    assert item["n"] == 7 and item["title"] == "one"
    compared = await calls.ok("get", f"{V}/v/compare")
    assert compared["changes"] == ["title"]  # the unpromoted change is still pending
    item = await calls.ok("post", f"{V}/v/promote")
    assert item["title"] == "t2"
    for body, path in (({"fields": "n"}, ["fields"]), ({"fields": ["ghost"]}, ["fields", "0"]),
                       ({"fields": [1]}, ["fields", "0"]), ({"other": 1}, ["other"])):
        await calls.err("post", f"{V}/v/promote", 400, "VALIDATION_FAILED", path, json=body)
    await calls.err("post", f"{V}/v/promote", 400, "VALIDATION_FAILED", json=[1])


async def test_promote_is_validated_like_any_update(calls: Calls):
    # A field name no other test uses: indexes.py names a unique index after the collection id
    # but does not limit it to that collection, so on PostgreSQL (indexes survive the per-test
    # TRUNCATE) it would bind every later collection's field of that name.
    await calls.collection("notes", {"vcode": {"type": "string", "options": {"unique": True}}}, versioning=True)
    await calls.create("notes", [{"id": "a", "vcode": "one"}, {"id": "b", "vcode": "two"}])
    await calls.ok("post", V, status=201, json={"key": "v"})
    await calls.ok("patch", f"{V}/v", json={"data": {"vcode": "two"}})
    await calls.err("post", f"{V}/v/promote", 409, "CONFLICT")
    assert (await calls.get("notes", "a"))["vcode"] == "one"
    assert await calls.ok("get", "/items/notes/a/revisions") == []


async def test_permissions(calls: Calls, member):
    await _notes(calls)
    await calls.ok("post", V, status=201, json={"key": "v"})
    reader, _ = await member([{"collection": "notes", "action": "read", "fields": ["title", "n"]}])
    assert (await reader.ok("get", V))[0]["data"] == {"title": "one", "n": 1}
    assert (await reader.ok("get", f"{V}/v"))["data"] == {"title": "one", "n": 1}
    compared = await reader.ok("get", f"{V}/v/compare")
    assert compared["main"] == {"id": "a", "title": "one", "n": 1} and compared["version"] == {"title": "one", "n": 1}
    await reader.err("post", V, 403, "PERMISSION_DENIED", json={"key": "mine"})
    await reader.err("patch", f"{V}/v", 403, "PERMISSION_DENIED", json={"name": "x"})
    await reader.err("delete", f"{V}/v", 403, "PERMISSION_DENIED")
    await reader.err("post", f"{V}/v/promote", 403, "PERMISSION_DENIED")
    nobody, _ = await member([])
    for path in (V, f"{V}/v", f"{V}/v/compare"):
        await nobody.err("get", path, 403, "PERMISSION_DENIED")
    editor, _ = await member([{"collection": "notes", "action": "read"},
                              {"collection": "notes", "action": "update", "fields": ["n"]}])
    await editor.ok("post", V, status=201, json={"key": "ed"})
    err = await editor.err("patch", f"{V}/ed", 403, "PERMISSION_DENIED", json={"data": {"title": "x"}})
    assert err["extensions"]["reason"] == "field_policy"
    await editor.ok("patch", f"{V}/ed", json={"data": {"n": 3}})
    assert (await editor.ok("post", f"{V}/ed/promote"))["n"] == 3


async def test_row_filters_hide_the_item_and_its_versions(calls: Calls, member):
    await _notes(calls)
    await calls.create("notes", {"id": "hidden", "title": "h"})
    await calls.ok("post", "/items/notes/hidden/versions", status=201, json={"key": "v"})
    reader, _ = await member([{"collection": "notes", "action": "read", "conditions": {"title": {"_eq": "one"}}}])
    await reader.err("get", "/items/notes/hidden/versions", 404, "RECORD_NOT_FOUND")
    await reader.err("get", "/items/notes/hidden/versions/v/compare", 404, "RECORD_NOT_FOUND")
    await reader.err("get", "/items/notes/hidden/revisions", 404, "RECORD_NOT_FOUND")
    assert await reader.ok("get", V) == []
