"""Cross-tenant: site B never sees, counts or touches site A's items, through any route, even
with the same collection name and the same item ids."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

# the field holds data: dropping it with its values is asked for (DELETE /fields answers 409 otherwise)
DESTRUCTIVE = {"allowDestructive": "true"}


async def _both(calls: Calls, calls_b: Calls) -> None:
    for who, label in ((calls, "A"), (calls_b, "B")):
        await who.collection("notes", {"title": "string", "ref": "string"})
        await who.collection("refs", {"x": "string"})
        await who.relation(type="m2o", collection="notes", field="ref", relatedCollection="refs",
                           onDelete="restrict")
        await who.create("refs", {"id": "r1", "x": label})
    await calls.create("notes", [{"id": "shared", "title": "A", "ref": "r1"}, {"id": "only-a", "title": "A2"}])


async def test_site_b_sees_nothing_of_a(calls: Calls, calls_b: Calls):
    await _both(calls, calls_b)
    assert (await calls_b.list("notes"))["meta"]["total"] == 0
    for path in ("/items/notes/shared", "/items/notes/only-a", "/items/notes/shared/dependents"):
        await calls_b.err("get", path, 404, "RECORD_NOT_FOUND")
    await calls_b.err("patch", "/items/notes/shared", 404, "RECORD_NOT_FOUND", json={"title": "B"})
    await calls_b.err("put", "/items/notes/shared", 404, "RECORD_NOT_FOUND", json={"title": "B"})
    await calls_b.err("delete", "/items/notes/shared", 404, "RECORD_NOT_FOUND")
    described = await calls_b.ok("get", "/items/refs/r1/dependents")  # B's own r1: no A notes counted
    assert described == {"blocking": False, "dependents": []}
    await calls_b.ok("delete", "/items/refs/r1", status=204)  # A's restrict reference does not block B
    await calls_b.err("post", "/items/refs/r1/resolve-dependents", 404, "NOT_FOUND",
                      json={"action": "set_null", "relation": "x"})
    assert (await calls.get("notes", "shared"))["title"] == "A"
    assert (await calls.get("refs", "r1"))["x"] == "A"


async def test_same_ids_live_side_by_side(calls: Calls, calls_b: Calls):
    await _both(calls, calls_b)
    b_item = await calls_b.create("notes", {"id": "shared", "title": "B"})  # no 409: A's id is not B's
    assert b_item["title"] == "B"
    await calls_b.ok("patch", "/items/notes/shared", json={"title": "B2"})
    await calls_b.ok("put", "/items/notes/shared", json={"title": "B3"})
    assert (await calls.get("notes", "shared"))["title"] == "A"
    assert [i["title"] for i in (await calls_b.list("notes"))["data"]] == ["B3"]
    await calls_b.ok("delete", "/items/notes/shared", status=204)
    assert (await calls.get("notes", "shared"))["title"] == "A"
    # A's restrict still holds for A.
    await calls.err("delete", "/items/refs/r1", 409, "DEPENDENT_RECORDS_EXIST")


async def test_unique_values_are_per_site(calls: Calls, calls_b: Calls):
    for who in (calls, calls_b):
        await who.collection("accounts2", {"email": {"type": "string", "options": {"unique": True}}})
    await calls.create("accounts2", {"email": "x@y"})
    await calls_b.create("accounts2", {"email": "x@y"})


async def test_singleton_per_site(calls: Calls, calls_b: Calls):
    for who in (calls, calls_b):
        await who.collection("home", {"title": "string"}, singleton=True)
    await calls.ok("patch", "/items/home", json={"title": "A"})
    assert (await calls_b.ok("get", "/items/home"))["id"] is None
    await calls_b.ok("patch", "/items/home", json={"title": "B"})
    assert (await calls.ok("get", "/items/home"))["title"] == "A"


async def test_schema_hooks_stay_in_their_site(calls: Calls, calls_b: Calls):
    for who in (calls, calls_b):
        await who.collection("vals", {"v": "string"})
    await calls.create("vals", {"id": "x", "v": "not a number"})
    await calls_b.create("vals", {"id": "x", "v": "5"})
    await calls_b.ok("patch", "/fields/vals/v", json={"type": "integer"})  # A's text does not veto B
    assert (await calls_b.get("vals", "x"))["v"] == 5
    assert (await calls.get("vals", "x"))["v"] == "not a number"
    await calls_b.ok("delete", "/fields/vals/v", status=204, params=DESTRUCTIVE)
    assert (await calls.get("vals", "x"))["v"] == "not a number"
