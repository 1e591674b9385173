"""onDelete in the application layer: restrict, set null (single ids, m2m lists, m2a refs),
cascade (recursive, cycle-safe), restrict reached through a cascade; the dependents descriptor."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


async def blog(calls: Calls, on_delete: str) -> str:
    """authors <- posts.author (m2o, ``on_delete``) ; returns the relation id."""
    await calls.collection("authors", {"name": "string"})
    await calls.collection("posts", {"title": "string", "author": "string"})
    rel = await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="authors",
                               onDelete=on_delete)
    await calls.create("authors", [{"id": "ann", "name": "Ann"}, {"id": "bob", "name": "Bob"}])
    await calls.create("posts", [{"id": f"p{i}", "title": str(i), "author": "ann"} for i in range(3)]
                       + [{"id": "pb", "author": "bob"}])
    return rel["id"]


async def test_restrict_blocks_with_dependents(calls: Calls):
    rel = await blog(calls, "restrict")
    err = await calls.err("delete", "/items/authors/ann", 409, "DEPENDENT_RECORDS_EXIST")
    assert err["extensions"]["dependents"] == [{"relation": rel, "collection": "posts", "field": "author",
                                                "onDelete": "restrict", "count": 3, "sample": ["p0", "p1", "p2"]}]
    assert (await calls.get("authors", "ann"))["name"] == "Ann"
    await calls.ok("delete", "/items/posts/pb", status=204)
    await calls.ok("delete", "/items/authors/bob", status=204)  # no live dependents left


async def test_set_null_clears_and_emits_updates(calls: Calls, recorder):
    await blog(calls, "set null")
    await calls.ok("delete", "/items/authors/ann", status=204)
    assert [(await calls.get("posts", f"p{i}"))["author"] for i in range(3)] == [None, None, None]
    assert (await calls.get("posts", "pb"))["author"] == "bob"
    updates = recorder.named("posts.items.update")
    assert {u["id"] for u in updates} == {"p0", "p1", "p2"}
    assert updates[0]["cause"]["collection"] == "authors" and updates[0]["before"]["author"] == "ann"
    assert [d["id"] for d in recorder.named("items.delete")] == ["ann"]


async def test_cascade_is_recursive_and_cycle_safe(calls: Calls, recorder):
    await blog(calls, "cascade")
    await calls.collection("remarks", {"post": "string", "parent": "string"})
    await calls.relation(type="m2o", collection="remarks", field="post", relatedCollection="posts",
                         onDelete="cascade")
    await calls.relation(type="m2o", collection="remarks", field="parent", relatedCollection="remarks",
                         onDelete="cascade")
    # c1 and c2 point at each other (a cycle); c3 hangs off c2.
    await calls.create("remarks", [{"id": "c1", "post": "p0", "parent": "c2"}, {"id": "c2", "parent": "c1"},
                                    {"id": "c3", "parent": "c2"}, {"id": "keep", "post": "pb"}])
    await calls.ok("delete", "/items/authors/ann", status=204)
    for collection, gone in (("posts", ["p0", "p1", "p2"]), ("remarks", ["c1", "c2", "c3"])):
        for item_id in gone:
            await calls.err("get", f"/items/{collection}/{item_id}", 404, "RECORD_NOT_FOUND")
    assert (await calls.get("remarks", "keep"))["post"] == "pb"
    deleted = [(d["collection"], d["id"]) for d in recorder.named("items.delete")]
    assert deleted[0] == ("authors", "ann") and len(deleted) == 7
    assert all(d.get("cause") for d in recorder.named("items.delete")[1:])


async def test_restrict_behind_a_cascade_blocks_everything(calls: Calls):
    await blog(calls, "cascade")
    await calls.collection("reviews", {"post": "string"})
    rel = await calls.relation(type="m2o", collection="reviews", field="post", relatedCollection="posts",
                               onDelete="restrict")
    await calls.create("reviews", {"id": "r1", "post": "p1"})
    err = await calls.err("delete", "/items/authors/ann", 409, "DEPENDENT_RECORDS_EXIST")
    assert err["extensions"]["dependents"][0]["relation"] == rel["id"]
    assert err["extensions"]["dependents"][0]["sample"] == ["r1"]
    assert (await calls.get("posts", "p1"))["author"] == "ann"
    described = await calls.ok("get", "/items/authors/ann/dependents")
    assert described["blocking"] is True
    assert [(d["collection"], d["count"]) for d in described["dependents"]] == [("posts", 3)]


async def test_m2m_and_m2a_lists(calls: Calls):
    await calls.collection("tags", {"label": "string"})
    await calls.collection("images", {"src": "string"})
    await calls.collection("pages", {"tags": "json", "blocks": "json", "keywords": "csv"})
    await calls.relation(type="m2m", collection="pages", field="tags", relatedCollection="tags")
    await calls.relation(type="m2m", collection="pages", field="keywords", relatedCollection="tags")
    await calls.relation(type="m2a", collection="pages", field="blocks", relatedCollections=["tags", "images"])
    await calls.create("tags", [{"id": "t1"}, {"id": "t2"}])
    await calls.create("images", {"id": "t1"})  # same id, other collection
    blocks = [{"collection": "tags", "id": "t1"}, {"collection": "images", "id": "t1"}]
    await calls.create("pages", {"id": "home", "tags": ["t1", "t2"], "blocks": blocks, "keywords": "t2,t1"})
    await calls.ok("delete", "/items/tags/t1", status=204)
    page = await calls.get("pages", "home")
    assert page["tags"] == ["t2"] and page["keywords"] == ["t2"]
    assert page["blocks"] == [{"collection": "images", "id": "t1"}]


async def test_dependents_descriptor(calls: Calls, member):
    rel = await blog(calls, "set null")
    described = await calls.ok("get", "/items/authors/ann/dependents")
    assert described == {"blocking": False, "dependents": [
        {"relation": rel, "collection": "posts", "field": "author", "onDelete": "set null", "count": 3,
         "sample": ["p0", "p1", "p2"]}]}
    assert await calls.ok("get", "/items/posts/p0/dependents") == {"blocking": False, "dependents": []}
    # Samples show only what the caller may read; counts are the truth.
    user, _ = await member([{"collection": "authors", "action": "read"}])
    seen = await user.ok("get", "/items/authors/ann/dependents")
    assert seen["dependents"][0]["count"] == 3 and seen["dependents"][0]["sample"] == []


async def test_self_reference_is_not_a_dependent(calls: Calls):
    await calls.collection("nodes", {"parent": "string"})
    await calls.relation(type="m2o", collection="nodes", field="parent", relatedCollection="nodes",
                         onDelete="restrict")
    await calls.create("nodes", {"id": "loop", "parent": "loop"})
    assert (await calls.ok("get", "/items/nodes/loop/dependents"))["blocking"] is False
    await calls.ok("delete", "/items/nodes/loop", status=204)
