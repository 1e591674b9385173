"""A deleted collection takes its rules with it (the class of Directus CVE-2025-64746): a
collection created later under the same name inherits no grant, for any action; the removals
are audited, another site's rules on its own same-named collection are untouched, the wildcard
collection's rules stay, and a condition crossing a detached relation is kept (it matches no row).
The tests share the module's app, each in new sites (kernel/testing/shared.py)."""

from __future__ import annotations

from access_helpers import audit_actions

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

ACTIONS = ("create", "read", "update", "delete")


async def _setup(calls: Calls, make_member, site: str) -> tuple[Calls, dict]:
    await calls.collection("notes", {"title": "string"})
    await calls.create("notes", {"id": "a", "title": "t"})
    policy = await calls.ok("post", "/policies", 201, json={"name": "editors"})
    for action in ACTIONS:
        await calls.ok("post", f"/policies/{policy['id']}/permissions", 201,
                       json={"collection": "notes", "action": action, "fields": ["*"]})
    member = await make_member(site, "subscriber")
    await calls.ok("post", f"/policies/{policy['id']}/attach", 201, json={"userId": member.id})
    return Calls(calls.client, member.headers), policy


async def _denied_everything(user: Calls) -> None:
    await user.err("get", "/items/notes", 403, "PERMISSION_DENIED")
    await user.err("get", "/items/notes/b", 403, "PERMISSION_DENIED")
    await user.err("post", "/items/notes", 403, "PERMISSION_DENIED", json={"title": "x"})
    await user.err("patch", "/items/notes/b", 403, "PERMISSION_DENIED", json={"title": "x"})
    await user.err("delete", "/items/notes/b", 403, "PERMISSION_DENIED")


async def test_a_recreated_collection_inherits_no_grant(calls: Calls, make_member, site):
    user, policy = await _setup(calls, make_member, site)
    assert (await user.get("notes", "a"))["title"] == "t"  # the grant works before
    await calls.ok("delete", "/collections/notes", status=204)
    await calls.collection("notes", {"title": "string"})
    await calls.create("notes", {"id": "b", "title": "new"})
    await _denied_everything(user)
    assert await calls.ok("get", f"/policies/{policy['id']}/permissions") == []
    assert (await calls.get("notes", "b"))["title"] == "new"  # the admin is not affected


async def test_a_restored_collection_comes_back_without_its_rules(calls: Calls, make_member, site):
    user, policy = await _setup(calls, make_member, site)
    await calls.ok("delete", "/collections/notes", status=204)
    await calls.ok("post", "/collections/notes/restore")
    await user.err("get", "/items/notes/a", 403, "PERMISSION_DENIED")
    assert await calls.ok("get", f"/policies/{policy['id']}/permissions") == []


async def test_removals_are_audited_and_stay_in_their_site(calls: Calls, calls_b: Calls, make_member, site,
                                                           site_b, svc_app):
    _, policy = await _setup(calls, make_member, site)
    user_b, policy_b = await _setup(calls_b, make_member, site_b)
    rule_ids = {r["id"] for r in await calls.ok("get", f"/policies/{policy['id']}/permissions")}
    rules_b = await calls_b.ok("get", f"/policies/{policy_b['id']}/permissions")
    await calls.ok("delete", "/collections/notes", status=204)
    deleted = {t for a, t in await audit_actions(svc_app, site) if a == "permission.delete"}
    assert deleted == rule_ids and len(deleted) == len(ACTIONS)
    assert all(a != "permission.delete" for a, _ in await audit_actions(svc_app, site_b))
    # Site B's same-named collection keeps its rules, and they still grant.
    assert await calls_b.ok("get", f"/policies/{policy_b['id']}/permissions") == rules_b
    assert (await user_b.get("notes", "a"))["title"] == "t"
    assert (await user_b.ok("patch", "/items/notes/a", json={"title": "b"}))["title"] == "b"


async def test_wildcard_rules_and_rules_of_other_collections_stay(calls: Calls, make_member, site):
    user, policy = await _setup(calls, make_member, site)
    await calls.collection("other", {"title": "string"})
    await calls.create("other", {"id": "o", "title": "kept"})
    await calls.ok("post", f"/policies/{policy['id']}/permissions", 201,
                   json={"collection": "other", "action": "read", "fields": ["title"]})
    wildcard = await calls.ok("post", "/policies", 201, json={"name": "readers"})
    await calls.ok("post", f"/policies/{wildcard['id']}/permissions", 201,
                   json={"collection": "*", "action": "update", "fields": ["title"]})
    await calls.ok("delete", "/collections/notes", status=204)
    rules = await calls.ok("get", f"/policies/{policy['id']}/permissions")
    assert [(r["collection"], r["action"]) for r in rules] == [("other", "read")]
    assert [(r["collection"], r["action"]) for r in await calls.ok(
        "get", f"/policies/{wildcard['id']}/permissions")] == [("*", "update")]
    assert await user.get("other", "o") == {"id": "o", "title": "kept"}


async def test_a_condition_across_a_detached_relation_is_kept_and_matches_nothing(calls: Calls, make_member,
                                                                                  site):
    user, policy = await _setup(calls, make_member, site)
    await calls.collection("people", {"owner": "string"})
    await calls.create("people", {"id": "p", "owner": "anyone"})
    await calls.collection("posts", {"title": "string", "author": "string"})
    await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="people")
    await calls.create("posts", {"id": "x", "title": "t", "author": "p"})
    condition = {"author": {"owner": {"_eq": "anyone"}}}
    await calls.ok("post", f"/policies/{policy['id']}/permissions", 201,
                   json={"collection": "posts", "action": "read", "fields": ["*"], "conditions": condition})
    assert [r["id"] for r in (await user.list("posts"))["data"]] == ["x"]
    await calls.ok("delete", "/collections/people", status=204)
    await calls.collection("people", {"owner": "string"})
    await calls.create("people", {"id": "p", "owner": "anyone"})
    posts_rules = [r for r in await calls.ok("get", f"/policies/{policy['id']}/permissions")
                   if r["collection"] == "posts"]
    assert [r["conditions"] for r in posts_rules] == [condition]  # never widened by removal
    assert (await user.list("posts"))["data"] == []  # the detached path matches no row


async def test_deleting_a_relation_keeps_the_conditions_that_cross_it(calls: Calls, make_member, site):
    user, policy = await _setup(calls, make_member, site)
    await calls.collection("people", {"owner": "string"})
    await calls.create("people", {"id": "p", "owner": "anyone"})
    await calls.collection("posts", {"title": "string", "author": "string"})
    rel = await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="people")
    await calls.create("posts", {"id": "x", "title": "t", "author": "p"})
    condition = {"author": {"owner": {"_eq": "anyone"}}}
    rule = await calls.ok("post", f"/policies/{policy['id']}/permissions", 201,
                          json={"collection": "posts", "action": "read", "fields": ["*"], "conditions": condition})
    assert [r["id"] for r in (await user.list("posts"))["data"]] == ["x"]
    await calls.ok("delete", f"/relations/{rel['id']}", status=204)
    assert (await calls.ok("get", f"/policies/{policy['id']}/permissions/{rule['id']}"))["conditions"] == condition
    assert (await user.list("posts"))["data"] == []
