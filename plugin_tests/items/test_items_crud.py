"""CRUD through HTTP: create (one, bulk), get, list, PATCH, PUT, soft DELETE; structural columns."""

from __future__ import annotations

import re

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# The tests share the module's app, each in a new site of its own (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
STRUCTURAL = {"id", "status", "sort", "createdAt", "updatedAt", "userCreated", "userUpdated"}


async def _articles(calls: Calls) -> None:
    await calls.collection("articles", {"title": {"type": "string", "required": True}, "views": "integer",
                                        "body": "text", "rating": {"type": "float", "options": {"default": 2.5}}})


async def test_create_get_shape(calls: Calls):
    await _articles(calls)
    item = await calls.create("articles", {"title": "Hello", "views": 3})
    assert UUID7.match(item["id"])
    assert STRUCTURAL <= set(item)
    assert item["status"] == "published" and item["sort"] is None
    assert item["title"] == "Hello" and item["views"] == 3 and item["rating"] == 2.5  # default applied
    assert item["createdAt"].endswith("Z") and item["userCreated"] == item["userUpdated"] and item["userCreated"]
    assert await calls.get("articles", item["id"]) == item


async def test_client_id_and_duplicate(calls: Calls):
    await _articles(calls)
    item = await calls.create("articles", {"id": "hello-1", "title": "A"})
    assert item["id"] == "hello-1"
    err = await calls.err("post", "/items/articles", 409, "CONFLICT", ["id"], json={"id": "hello-1", "title": "B"})
    assert "hello-1" in err["message"]
    for bad in ("", "a b", "x" * 65, "ü", 12, "a/b"):
        await calls.err("post", "/items/articles", 400, "VALIDATION_FAILED", ["id"], json={"id": bad, "title": "B"})


async def test_bulk_create_is_atomic(calls: Calls):
    await _articles(calls)
    created = await calls.create("articles", [{"title": "a"}, {"title": "b", "status": "draft"}])
    assert [c["title"] for c in created] == ["a", "b"] and created[1]["status"] == "draft"
    before = (await calls.list("articles"))["meta"]["total"]
    await calls.err("post", "/items/articles", 400, "VALIDATION_FAILED", ["1", "views"],
                    json=[{"title": "c"}, {"title": "d", "views": "many"}])
    await calls.err("post", "/items/articles", 409, "CONFLICT", ["1", "id"],
                    json=[{"id": "same", "title": "c"}, {"id": "same", "title": "d"}])
    assert (await calls.list("articles"))["meta"]["total"] == before


async def test_bulk_limits(make_app):
    app = await make_app(max_batch=3)
    token = await app.login()
    site = await app.client.post("/api/v1/sites", json={"id": "bulk", "name": "Bulk"},
                                 headers={"Authorization": f"Bearer {token}"})
    assert site.status_code == 201
    calls = Calls(app.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": "bulk"})
    await _articles(calls)
    await calls.err("post", "/items/articles", 400, "VALIDATION_FAILED", ["body"], json=[])
    await calls.create("articles", [{"title": str(i)} for i in range(3)])
    err = await calls.err("post", "/items/articles", 400, "VALIDATION_FAILED", ["body"],
                          json=[{"title": str(i)} for i in range(4)])
    assert "1 to 3" in err["message"]


async def test_required_and_unknown_fields(calls: Calls):
    await _articles(calls)
    err = await calls.err("post", "/items/articles", 400, "VALIDATION_FAILED", ["title"], json={"views": 1})
    assert "required" in err["message"]
    await calls.err("post", "/items/articles", 400, "VALIDATION_FAILED", ["nope"], json={"title": "x", "nope": 1})
    await calls.err("post", "/items/articles", 400, "VALIDATION_FAILED", ["0", "nope"],
                    json=[{"title": "x", "nope": 1}])
    await calls.err("post", "/items/articles", 400, "VALIDATION_FAILED", ["title"], json={"title": None})


async def test_structural_columns_are_server_maintained(calls: Calls):
    await _articles(calls)
    for key in ("createdAt", "updatedAt", "userCreated", "userUpdated", "deletedAt"):
        await calls.err("post", "/items/articles", 400, "VALIDATION_FAILED", [key], json={"title": "x", key: "y"})
    item = await calls.create("articles", {"title": "x", "status": "archived", "sort": 7})
    assert item["status"] == "archived" and item["sort"] == 7
    await calls.err("patch", f"/items/articles/{item['id']}", 400, "VALIDATION_FAILED", ["sort"], json={"sort": 1.5})
    await calls.err("patch", f"/items/articles/{item['id']}", 400, "VALIDATION_FAILED", ["status"],
                    json={"status": None})
    await calls.err("patch", f"/items/articles/{item['id']}", 400, "VALIDATION_FAILED", ["id"], json={"id": "other"})


async def test_patch_and_put(calls: Calls):
    await _articles(calls)
    item = await calls.create("articles", {"title": "x", "views": 1, "body": "text", "sort": 3})
    patched = await calls.ok("patch", f"/items/articles/{item['id']}", json={"views": 2})
    assert patched["views"] == 2 and patched["body"] == "text" and patched["title"] == "x"
    assert patched["updatedAt"] >= item["updatedAt"] and patched["createdAt"] == item["createdAt"]
    replaced = await calls.ok("put", f"/items/articles/{item['id']}", json={"title": "y"})
    assert replaced["title"] == "y" and "views" not in replaced and "body" not in replaced
    assert replaced["rating"] == 2.5 and replaced["sort"] == 3  # default back; structural kept
    await calls.err("put", f"/items/articles/{item['id']}", 400, "VALIDATION_FAILED", ["title"], json={"views": 1})
    await calls.err("patch", f"/items/articles/{item['id']}", 400, "VALIDATION_FAILED", ["title"],
                    json={"title": None})
    await calls.err("patch", "/items/articles/missing", 404, "RECORD_NOT_FOUND", json={"views": 1})
    await calls.err("patch", f"/items/articles/{item['id']}", 400, "VALIDATION_FAILED", ["body"], json=[1])


async def test_soft_delete_is_invisible_everywhere(calls: Calls):
    await _articles(calls)
    item = await calls.create("articles", {"id": "gone", "title": "x"})
    await calls.create("articles", {"id": "kept", "title": "y"})
    await calls.ok("delete", "/items/articles/gone", status=204, headers={"Content-Type": "application/json"})
    await calls.err("get", "/items/articles/gone", 404, "RECORD_NOT_FOUND")
    await calls.err("patch", "/items/articles/gone", 404, "RECORD_NOT_FOUND", json={"title": "z"})
    await calls.err("put", "/items/articles/gone", 404, "RECORD_NOT_FOUND", json={"title": "z"})
    await calls.err("delete", "/items/articles/gone", 404, "RECORD_NOT_FOUND")
    await calls.err("get", "/items/articles/gone/dependents", 404, "RECORD_NOT_FOUND")
    listed = await calls.list("articles")
    assert [i["id"] for i in listed["data"]] == ["kept"] and listed["meta"]["total"] == 1
    # The id stays taken: a deleted item is kept, so its id cannot be reused.
    await calls.err("post", "/items/articles", 409, "CONFLICT", ["id"], json={"id": item["id"], "title": "x"})


async def test_unknown_collection_and_item(calls: Calls):
    await calls.err("get", "/items/nothing", 404, "NOT_FOUND")
    await calls.err("post", "/items/nothing", 404, "NOT_FOUND", json={"a": 1})
    await calls.err("get", "/items/nothing/1", 404, "NOT_FOUND")
    await _articles(calls)
    await calls.err("get", "/items/articles/nope", 404, "RECORD_NOT_FOUND")
    await calls.err("get", "/items/articles/%20bad%00", 404, "RECORD_NOT_FOUND")
    await calls.ok("delete", "/collections/articles", status=204)
    await calls.err("get", "/items/articles", 404, "NOT_FOUND")


async def test_deleted_collection_items_do_not_leak_into_a_new_one(calls: Calls):
    await _articles(calls)
    await calls.create("articles", {"id": "old", "title": "x"})
    await calls.ok("delete", "/collections/articles", status=204)
    await _articles(calls)
    assert (await calls.list("articles"))["data"] == []
    assert (await calls.create("articles", {"id": "old", "title": "new"}))["id"] == "old"
