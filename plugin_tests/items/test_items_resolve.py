"""POST /items/{c}/{id}/resolve-dependents: set_null, reassign, delete (soft and hard), every error."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

PATH = "/items/authors/ann/resolve-dependents"


async def blog(calls: Calls, *, required: bool = False, on_delete: str | None = None) -> str:
    await calls.collection("authors", {"name": "string"})
    await calls.collection("posts", {"author": {"type": "string", "required": required}, "tags": "json"})
    body = {"type": "m2o", "collection": "posts", "field": "author", "relatedCollection": "authors"}
    if on_delete:
        body["onDelete"] = on_delete
    rel = await calls.relation(**body)
    await calls.create("authors", [{"id": "ann"}, {"id": "bob"}])
    await calls.create("posts", [{"id": "p1", "author": "ann"}, {"id": "p2", "author": "ann"},
                                 {"id": "p3", "author": "bob"}])
    return rel["id"]


async def test_set_null(calls: Calls):
    rel = await blog(calls, on_delete="restrict")
    await calls.err("delete", "/items/authors/ann", 409, "DEPENDENT_RECORDS_EXIST")
    done = await calls.ok("post", PATH, json={"action": "set_null", "relation": rel})
    assert done == {"action": "set_null", "relation": rel, "affected": 2, "blocking": False, "dependents": []}
    assert (await calls.get("posts", "p1"))["author"] is None and (await calls.get("posts", "p3"))["author"] == "bob"
    await calls.ok("delete", "/items/authors/ann", status=204)


async def test_set_null_on_required_is_field_required(calls: Calls):
    rel = await blog(calls, required=True)
    err = await calls.err("post", PATH, 409, "FIELD_REQUIRED", json={"action": "set_null", "relation": rel})
    assert err["extensions"]["field"] == "author"
    assert (await calls.get("posts", "p1"))["author"] == "ann"


async def test_reassign(calls: Calls):
    rel = await blog(calls, required=True)
    done = await calls.ok("post", PATH, json={"action": "reassign", "relation": rel, "newTargetId": "bob"})
    assert done["affected"] == 2 and done["blocking"] is False
    assert (await calls.get("posts", "p2"))["author"] == "bob"
    for target in ("nobody", "ann", "bad id!", ""):
        await calls.err("post", PATH, 422, "INVALID_TARGET", ["newTargetId"],
                        json={"action": "reassign", "relation": rel, "newTargetId": target})
    await calls.err("post", PATH, 400, "VALIDATION_FAILED", ["newTargetId"], json={"action": "reassign",
                                                                                    "relation": rel})


async def test_reassign_to_a_deleted_item_is_invalid(calls: Calls):
    rel = await blog(calls, on_delete="set null")
    await calls.create("authors", {"id": "cat"})
    await calls.ok("delete", "/items/authors/cat", status=204)
    await calls.err("post", PATH, 422, "INVALID_TARGET", json={"action": "reassign", "relation": rel,
                                                                "newTargetId": "cat"})


async def test_delete_soft_and_hard(calls: Calls, member, svc_app, site):
    rel = await blog(calls, on_delete="restrict")
    user, _ = await member([{"collection": c, "action": a} for c in ("authors", "posts")
                            for a in ("read", "delete")])
    await user.err("post", PATH, 403, "PERMISSION_DENIED", json={"action": "delete", "relation": rel, "hard": True})
    done = await user.ok("post", PATH, json={"action": "delete", "relation": rel})
    assert done["affected"] == 2
    await calls.err("get", "/items/posts/p1", 404, "RECORD_NOT_FOUND")
    await calls.ok("delete", "/items/authors/ann", status=204)
    # Hard: the rows are gone, so their ids can be used again.
    await calls.create("posts", {"id": "p4", "author": "bob"})
    done = await calls.ok("post", "/items/authors/bob/resolve-dependents",
                          json={"action": "delete", "relation": rel, "hard": True})
    assert done["affected"] == 2
    await calls.create("posts", {"id": "p3"})


async def test_delete_blocked_by_restrict_further_down(calls: Calls):
    rel = await blog(calls, on_delete="restrict")
    await calls.collection("reviews", {"post": "string"})
    await calls.relation(type="m2o", collection="reviews", field="post", relatedCollection="posts",
                         onDelete="restrict")
    await calls.create("reviews", {"post": "p1"})
    err = await calls.err("post", PATH, 409, "DEPENDENT_RECORDS_EXIST", json={"action": "delete", "relation": rel})
    assert err["extensions"]["dependents"][0]["collection"] == "reviews"
    assert (await calls.get("posts", "p1"))["author"] == "ann"


async def test_not_found_and_bad_bodies(calls: Calls):
    rel = await blog(calls)
    await calls.err("post", PATH, 404, "NOT_FOUND", json={"action": "set_null", "relation": "nope"})
    await calls.err("post", "/items/authors/zed/resolve-dependents", 404, "NOT_FOUND",
                    json={"action": "set_null", "relation": rel})
    await calls.err("post", "/items/posts/p1/resolve-dependents", 404, "NOT_FOUND",
                    json={"action": "set_null", "relation": rel})
    for body, path in (({"action": "explode", "relation": rel}, ["action"]), ({"action": "delete"}, ["relation"]),
                       ({"action": "delete", "relation": rel, "hard": "yes"}, ["hard"]),
                       ({"action": "delete", "relation": rel, "extra": 1}, ["extra"]),
                       ({"action": "reassign", "relation": rel, "newTargetId": [1]}, ["newTargetId"])):
        await calls.err("post", PATH, 400, "VALIDATION_FAILED", path, json=body)


async def test_needs_update_permission_on_the_holder(calls: Calls, member):
    rel = await blog(calls)
    user, _ = await member([{"collection": "authors", "action": "read"},
                            {"collection": "posts", "action": "update", "fields": ["tags"]}])
    err = await user.err("post", PATH, 403, "PERMISSION_DENIED", json={"action": "set_null", "relation": rel})
    assert err["extensions"]["reason"] == "field_policy"
    owner, _ = await member([{"collection": "authors", "action": "read"},
                             {"collection": "posts", "action": "update",
                              "conditions": {"userCreated": {"_eq": "$CURRENT_USER"}}}])
    err = await owner.err("post", PATH, 403, "PERMISSION_DENIED", json={"action": "set_null", "relation": rel})
    assert err["extensions"]["reason"] == "row_policy"
