"""Access: action permissions, field masks, row filters, field_policy on writes, public role."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

# the field holds data: dropping it with its values is asked for (DELETE /fields answers 409 otherwise)
DESTRUCTIVE = {"allowDestructive": "true"}


async def _notes(calls: Calls) -> None:
    await calls.collection("notes", {"title": "string", "secret": "string", "n": "integer"})


async def test_no_permission_is_403_even_for_unknown_collections(calls: Calls, member, anon_calls: Calls):
    await _notes(calls)
    item = await calls.create("notes", {"title": "t"})
    user, _ = await member([])
    for who in (user, anon_calls):
        await who.err("get", "/items/notes", 403, "PERMISSION_DENIED")
        await who.err("get", f"/items/notes/{item['id']}", 403, "PERMISSION_DENIED")
        await who.err("post", "/items/notes", 403, "PERMISSION_DENIED", json={"title": "x"})
        await who.err("patch", f"/items/notes/{item['id']}", 403, "PERMISSION_DENIED", json={"title": "x"})
        await who.err("put", f"/items/notes/{item['id']}", 403, "PERMISSION_DENIED", json={"title": "x"})
        await who.err("delete", f"/items/notes/{item['id']}", 403, "PERMISSION_DENIED")
        await who.err("get", f"/items/notes/{item['id']}/dependents", 403, "PERMISSION_DENIED")
        await who.err("get", "/items/does_not_exist", 403, "PERMISSION_DENIED")


async def test_field_mask_on_reads(calls: Calls, member):
    await _notes(calls)
    item = await calls.create("notes", {"title": "t", "secret": "s", "n": 1})
    user, _ = await member([{"collection": "notes", "action": "read", "fields": ["title", "status"]}])
    assert await user.get("notes", item["id"]) == {"id": item["id"], "title": "t", "status": "published"}
    listed = await user.list("notes")
    assert listed["data"] == [{"id": item["id"], "title": "t", "status": "published"}]
    for param in ({"sort": "secret"}, {"sort": "-n"}, {"fields": "secret"}):
        err = await user.err("get", "/items/notes", 403, "PERMISSION_DENIED", params=param)
        assert err["extensions"]["reason"] == "field_policy"
    await user.err("get", f"/items/notes/{item['id']}", 403, "PERMISSION_DENIED", params={"fields": "secret"})
    assert (await user.list("notes", sort="-title"))["meta"]["total"] == 1


async def test_field_policy_on_writes(calls: Calls, member):
    await _notes(calls)
    user, _ = await member([
        {"collection": "notes", "action": "create", "fields": ["title", "n"]},
        {"collection": "notes", "action": "update", "fields": ["n"]},
        {"collection": "notes", "action": "read", "fields": ["*"]},
    ])
    err = await user.err("post", "/items/notes", 403, "PERMISSION_DENIED", ["secret"], json={"title": "a", "secret": "s"})
    assert err["extensions"]["reason"] == "field_policy" and err["extensions"]["field"] == "secret"
    await user.err("post", "/items/notes", 403, "PERMISSION_DENIED", ["1", "status"],
                   json=[{"title": "a"}, {"title": "b", "status": "draft"}])
    item = await user.create("notes", {"title": "mine", "n": 1})
    await user.err("patch", f"/items/notes/{item['id']}", 403, "PERMISSION_DENIED", ["title"], json={"title": "x"})
    assert (await user.ok("patch", f"/items/notes/{item['id']}", json={"n": 2}))["n"] == 2
    # Unknown keys are reported as such, before the policy.
    await user.err("post", "/items/notes", 400, "VALIDATION_FAILED", ["nope"], json={"nope": 1})


async def test_row_filters(calls: Calls, member):
    await _notes(calls)
    rules = [{"collection": "notes", "action": a, "conditions": {"userCreated": {"_eq": "$CURRENT_USER"}}}
             for a in ("read", "update", "delete")]
    user, user_id = await member([*rules, {"collection": "notes", "action": "create"}])
    other = await calls.create("notes", {"id": "admins", "title": "not yours"})
    mine = await user.create("notes", {"id": "mine", "title": "yours"})
    assert mine["userCreated"] == user_id
    listed = await user.list("notes")
    assert [i["id"] for i in listed["data"]] == ["mine"] and listed["meta"]["total"] == 1
    await user.err("get", f"/items/notes/{other['id']}", 404, "RECORD_NOT_FOUND")
    await user.err("patch", f"/items/notes/{other['id']}", 404, "RECORD_NOT_FOUND", json={"title": "x"})
    await user.err("delete", f"/items/notes/{other['id']}", 404, "RECORD_NOT_FOUND")
    await user.err("get", f"/items/notes/{other['id']}/dependents", 404, "RECORD_NOT_FOUND")
    await user.ok("delete", "/items/notes/mine", status=204)
    assert (await calls.get("notes", "admins"))["title"] == "not yours"


async def test_row_filter_on_content_and_in(calls: Calls, member):
    await _notes(calls)
    await calls.create("notes", [{"id": "a", "n": 1}, {"id": "b", "n": 2}, {"id": "c", "n": 3}, {"id": "d"}])
    user, _ = await member([{"collection": "notes", "action": "read",
                             "conditions": {"_or": [{"n": {"_in": [1, 3]}}, {"n": {"_null": True}}]}}])
    assert [i["id"] for i in (await user.list("notes"))["data"]] == ["a", "c", "d"]
    user2, _ = await member([{"collection": "notes", "action": "read", "conditions": {"n": {"_neq": 1}}}])
    assert [i["id"] for i in (await user2.list("notes"))["data"]] == ["b", "c"]


async def test_condition_that_no_longer_resolves_fails_closed(calls: Calls, member):
    await _notes(calls)
    await calls.create("notes", [{"id": "abc", "title": "abc", "n": 1}, {"id": "xyz", "title": "xyz", "n": 2}])
    # Every operator of the query language compiles (here _contains)...
    user, _ = await member([{"collection": "notes", "action": "read", "conditions": {"title": {"_contains": "b"}}}])
    assert [i["id"] for i in (await user.list("notes"))["data"]] == ["abc"]
    # ...but a condition that does not resolve any more (its field was dropped, or never existed)
    # matches no row: reads, counts, updates, deletes, aggregates.
    rules = [{"collection": "notes", "action": a, "conditions": {"n": {"_eq": 1}}} for a in ("read", "update", "delete")]
    user2, _ = await member(rules)
    assert [i["id"] for i in (await user2.list("notes"))["data"]] == ["abc"]
    await calls.ok("delete", "/fields/notes/n", status=204, params=DESTRUCTIVE)
    body = await user2.list("notes")
    assert body["data"] == [] and body["meta"]["total"] == 0
    assert (await user2.list("notes", **{"aggregate[count]": "*"}))["data"] == [{"count": 0}]
    await user2.err("get", "/items/notes/abc", 404, "RECORD_NOT_FOUND")
    await user2.err("patch", "/items/notes/abc", 404, "RECORD_NOT_FOUND", json={"title": "x"})
    await user2.err("delete", "/items/notes/abc", 404, "RECORD_NOT_FOUND")
    user3, _ = await member([{"collection": "notes", "action": "read", "conditions": {"nope": {"_eq": 1}}}])
    assert (await user3.list("notes"))["data"] == []


async def test_public_role(calls: Calls, anon_calls: Calls, public_grant):
    await _notes(calls)
    await calls.create("notes", [{"id": "pub", "title": "p"}, {"id": "draft", "title": "d", "status": "draft"}])
    await public_grant([{"collection": "notes", "action": "read", "fields": ["title"],
                         "conditions": {"status": {"_eq": "published"}}}])
    assert (await anon_calls.list("notes"))["data"] == [{"id": "pub", "title": "p"}]
    await anon_calls.err("get", "/items/notes/draft", 404, "RECORD_NOT_FOUND")
    await anon_calls.err("post", "/items/notes", 403, "PERMISSION_DENIED", json={"title": "x"})


async def test_write_without_read_answers_only_the_id(calls: Calls, member):
    await _notes(calls)
    user, _ = await member([{"collection": "notes", "action": "create"}])
    created = await user.create("notes", {"title": "blind"})
    assert set(created) == {"id"}


async def test_admin_policy_short_circuits_rules(calls: Calls, member, svc_app, site):
    await _notes(calls)
    user, user_id = await member([{"collection": "notes", "action": "read", "fields": ["title"]}])
    policy = await calls.ok("post", "/policies", status=201, json={"name": "adm", "adminAccess": True})
    await calls.ok("post", f"/policies/{policy['id']}/attach", status=201, json={"userId": user_id})
    svc_app.kernel.access.invalidate(site)
    item = await user.create("notes", {"title": "t", "secret": "s"})
    assert item["secret"] == "s"
