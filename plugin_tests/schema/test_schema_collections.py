"""Collections through HTTP: create, read, list, update meta, soft delete and restore; the two
body shapes (flat and Directus ``meta``); names. The tests share the module's app, each in a new
site (kernel/testing/shared.py)."""

from __future__ import annotations

import pytest

from kernel.testing import shared as testing_shared

svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

META_DEFAULTS = {"displayName": None, "icon": None, "note": None, "singleton": False, "status_field": None,
                 "sort_field": None, "editorialWorkflow": False, "requireSeparateReviewer": False,
                 "versioning": False, "personalData": False,
                 "editorialPublish": "release"}


async def test_the_benchmark_client_flow(calls):
    await calls.ok("post", "/collections", status=201, json={"name": "articles"})
    await calls.ok("post", "/fields/articles", status=201, json={"field": "title", "type": "string"})
    got = await calls.ok("get", "/collections/articles")
    assert got["name"] == "articles"
    await calls.ok("delete", "/collections/articles", status=204)
    await calls.err("get", "/collections/articles", 404, "NOT_FOUND")


async def test_record_shape_has_flat_keys_and_meta(calls):
    created = await calls.collection("articles")
    assert created["name"] == created["collection"] == "articles"
    assert {k: created[k] for k in META_DEFAULTS} == META_DEFAULTS
    assert created["meta"] == META_DEFAULTS
    assert created["deletedAt"] is None and created["createdAt"].endswith("Z")
    assert await calls.ok("get", "/collections/articles") == created


async def test_flat_body(calls):
    body = {"name": "pages", "displayName": "Pages", "icon": "article", "note": "Site pages", "singleton": True,
            "status_field": "state", "sort_field": "position", "editorialWorkflow": True,
            "requireSeparateReviewer": True, "versioning": True}
    created = await calls.ok("post", "/collections", status=201, json=body)
    for key, value in body.items():
        if key != "name":
            assert created[key] == value
            assert created["meta"][key] == value


async def test_status_and_sort_fields_may_name_the_structural_columns(shared_site):
    calls = await shared_site.new_site()
    flat = await calls.ok("post", "/collections", status=201,
                          json={"name": "news", "status_field": "status", "sort_field": "sort"})
    assert (flat["status_field"], flat["sort_field"]) == ("status", "sort")
    assert (flat["meta"]["status_field"], flat["meta"]["sort_field"]) == ("status", "sort")
    directus = await calls.ok("post", "/collections", status=201,
                              json={"collection": "posts", "meta": {"status_field": "status", "sort_field": "sort"}})
    assert (directus["status_field"], directus["sort_field"]) == ("status", "sort")
    later = await calls.collection("pages")
    assert later["status_field"] is None
    patched = await calls.ok("patch", "/collections/pages", json={"status_field": "status", "sort_field": "sort"})
    assert (patched["status_field"], patched["sort_field"]) == ("status", "sort")
    assert (await calls.ok("get", "/collections/pages"))["meta"]["sort_field"] == "sort"
    # A workflow collection: its items start as drafts, and sort is the structural column.
    item = await calls.ok("post", "/items/news", status=201, json={"sort": 2})
    assert (item["status"], item["sort"]) == ("draft", 2)
    # Each reference names its own column only, spelled as it is.
    for key, value in (("status_field", "sort"), ("sort_field", "status"), ("status_field", "Status"),
                       ("status_field", "createdAt"), ("sort_field", "id")):
        await calls.err("patch", "/collections/pages", 400, "VALIDATION_FAILED", [key], json={key: value})
        await calls.err("post", "/collections", 400, "VALIDATION_FAILED", ["meta", key],
                        json={"name": "other", "meta": {key: value}})


async def test_directus_body_with_meta_and_inline_fields(calls):
    body = {"collection": "posts", "meta": {"icon": "box", "note": "n", "hidden": False, "sort": 3,
                                            "translations": [{"language": "en-US", "translation": "Posts"}]},
            "schema": {"name": "posts"},
            "fields": [{"field": "id", "type": "integer", "schema": {"is_primary_key": True}},
                       {"field": "title", "type": "string", "meta": {"interface": "input", "required": True}}]}
    created = await calls.ok("post", "/collections", status=201, json=body)
    assert created["name"] == "posts" and created["icon"] == "box"
    assert created["meta"]["hidden"] is False and created["meta"]["sort"] == 3
    assert created["meta"]["translations"][0]["translation"] == "Posts"
    fields = await calls.ok("get", "/fields/posts")
    assert [(f["field"], f["interface"], f["required"]) for f in fields] == [("title", "input", True)]


async def test_inline_field_errors_point_into_the_list(calls):
    body = {"name": "posts", "fields": [{"field": "ok", "type": "string"}, {"field": "bad", "type": "nope"}]}
    await calls.err("post", "/collections", 400, "VALIDATION_FAILED", ["fields", "1", "type"], json=body)
    await calls.err("get", "/collections/posts", 404)  # all or nothing


async def test_flat_and_meta_must_agree(calls):
    await calls.collection("same", icon="a", meta={"icon": "a"})
    await calls.err("post", "/collections", 400, "VALIDATION_FAILED", ["icon"],
                    json={"name": "other", "icon": "a", "meta": {"icon": "b"}})
    await calls.err("post", "/collections", 400, "VALIDATION_FAILED", ["collection"],
                    json={"name": "a1", "collection": "a2"})


async def test_list_sorted_with_total(calls):
    for name in ("zeta", "alpha", "Mid"):
        await calls.collection(name)
    resp = await calls.call("get", "/collections")
    assert resp.status_code == 200
    assert [c["name"] for c in resp.json()["data"]] == ["Mid", "alpha", "zeta"]
    assert resp.json()["meta"]["total"] == 3


async def test_update_meta(calls):
    await calls.collection("articles", icon="a", note="keep")
    updated = await calls.ok("patch", "/collections/articles", json={"displayName": "Articles",
                                                                      "meta": {"versioning": True}})
    assert updated["displayName"] == "Articles" and updated["versioning"] is True and updated["note"] == "keep"
    assert updated["meta"]["displayName"] == "Articles"
    assert (await calls.ok("get", "/collections/articles"))["versioning"] is True
    same = await calls.ok("patch", "/collections/articles", json={"name": "articles"})
    assert same["displayName"] == "Articles"


async def test_rename_and_inline_fields_are_refused_on_update(calls):
    await calls.collection("articles")
    await calls.err("patch", "/collections/articles", 400, "VALIDATION_FAILED", ["name"], json={"name": "posts"})
    await calls.err("patch", "/collections/articles", 400, "VALIDATION_FAILED", ["fields"], json={"fields": []})
    await calls.err("patch", "/collections/nothing", 404, "NOT_FOUND", json={"icon": "x"})


@pytest.mark.parametrize("body", [
    {"name": "articles", "singleton": "yes"}, {"name": "articles", "icon": 5},
    {"name": "articles", "note": "x" * 2001}, {"name": "articles", "status_field": "bad name"},
    {"name": "articles", "meta": "nope"}, {"name": "articles", "meta": {"unknownKey": 1}},
    {"name": "articles", "meta": {"translations": "x" * 5000}}, {"name": "articles", "schema": 5},
    {"name": "articles", "extra": 1}, {"name": "articles", "fields": {"a": 1}},
])
async def test_bad_meta(shared_site, body):
    error = await shared_site.calls.err("post", "/collections", 400, "VALIDATION_FAILED", json=body)
    assert error["path"]


@pytest.mark.parametrize("name", [
    "", "1abc", "_abc", "has space", "a-b", "a" * 65, "articles;drop", "../etc", "x/y", "ça", "items", "Items",
    "users", "fields", "graphql", "svc_things", "directus_users", "SVC_x", "Query", "string", "posts_by_id", 5,
    None, ["a"],
])
async def test_bad_names(shared_site, name):
    body = {"name": name} if name is not None else {}
    await shared_site.calls.err("post", "/collections", 400, "VALIDATION_FAILED", ["name"], json=body)


async def test_collection_key_names_the_path_of_its_error(calls):
    await calls.err("post", "/collections", 400, "VALIDATION_FAILED", ["collection"], json={"collection": "items"})


async def test_duplicate_names_conflict_case_insensitively(calls):
    await calls.collection("articles")
    await calls.err("post", "/collections", 409, "CONFLICT", ["name"], json={"name": "articles"})
    await calls.err("post", "/collections", 409, "CONFLICT", ["name"], json={"name": "Articles"})


async def test_longest_name(calls):
    name = "a" + "b" * 63
    await calls.collection(name)
    assert (await calls.ok("get", f"/collections/{name}"))["name"] == name


async def test_soft_delete_hides_and_deleted_true_shows(calls):
    await calls.collection("articles")
    await calls.field("articles", "title", "string")
    await calls.ok("delete", "/collections/articles", status=204)
    assert await calls.ok("get", "/collections") == []
    listed = await calls.ok("get", "/collections?deleted=true")
    assert [(c["name"], c["deletedAt"] is not None) for c in listed] == [("articles", True)]
    await calls.err("get", "/fields/articles", 404)
    await calls.err("delete", "/collections/articles", 404)
    await calls.err("get", "/collections?deleted=maybe", 400, "VALIDATION_FAILED", ["query", "deleted"])


async def test_restore_brings_back_meta_and_fields(calls):
    await calls.collection("articles", icon="a")
    await calls.field("articles", "title", "string")
    await calls.ok("delete", "/collections/articles", status=204)
    resp = await calls.call("post", "/collections/articles/restore")
    assert resp.status_code == 200, resp.text
    restored = resp.json()["data"]
    assert restored["icon"] == "a" and restored["deletedAt"] is None
    assert resp.json()["meta"] == {"skippedRelations": []}
    assert [f["field"] for f in await calls.ok("get", "/fields/articles")] == ["title"]
    await calls.err("post", "/collections/articles/restore", 404, "NOT_FOUND")


async def test_a_new_collection_may_take_a_deleted_name_and_restore_then_conflicts(calls):
    await calls.collection("articles", icon="old")
    await calls.field("articles", "old_field", "string")
    await calls.ok("delete", "/collections/articles", status=204)
    await calls.collection("articles", icon="new")
    assert await calls.ok("get", "/fields/articles") == []  # the old fields stay with the old collection
    await calls.field("articles", "old_field", "integer")
    await calls.err("post", "/collections/articles/restore", 409, "CONFLICT")
    await calls.ok("delete", "/collections/articles", status=204)
    restored = await calls.ok("post", "/collections/articles/restore")
    assert restored["icon"] == "new"  # the most recently deleted one
    assert [f["type"] for f in await calls.ok("get", "/fields/articles")] == ["integer"]
    assert len(await calls.ok("get", "/collections?deleted=true")) == 2


async def test_unknown_and_odd_path_names_are_404(calls):
    for name in ("nothing", "a%20b", "x'%3B--", "%00", "a" * 300):
        await calls.err("get", f"/collections/{name}", 404, "NOT_FOUND")
        await calls.err("post", f"/collections/{name}/restore", 404, "NOT_FOUND")
