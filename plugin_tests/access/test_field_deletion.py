"""A deleted field takes its grants with it (the class of Directus CVE-2025-64746): a field
created later under the same name inherits nothing, for reading or writing; the rule keeps its
other fields, the change is audited, and another site's rules are untouched."""

from __future__ import annotations

from access_helpers import audit_actions

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in sites of its own: they share the module's app, each in new sites
# of it (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

FIELDS = ["title", "secret"]

# the field holds data: dropping it with its values is asked for (DELETE /fields answers 409 otherwise)
DESTRUCTIVE = {"allowDestructive": "true"}


async def _setup(calls: Calls, make_member, site: str) -> tuple[Calls, dict]:
    await calls.collection("notes", {"title": "string", "secret": "string"})
    await calls.create("notes", {"id": "a", "title": "t", "secret": "s"})
    policy = await calls.ok("post", "/policies", 201, json={"name": "editors"})
    for action in ("read", "update", "create"):
        await calls.ok("post", f"/policies/{policy['id']}/permissions", 201,
                       json={"collection": "notes", "action": action, "fields": FIELDS})
    member = await make_member(site, "subscriber")
    await calls.ok("post", f"/policies/{policy['id']}/attach", 201, json={"userId": member.id})
    return Calls(calls.client, member.headers), policy


async def test_a_recreated_field_inherits_no_grant(calls: Calls, make_member, site):
    user, policy = await _setup(calls, make_member, site)
    assert await user.get("notes", "a") == {"id": "a", "title": "t", "secret": "s"}
    await calls.ok("delete", "/fields/notes/secret", status=204, params=DESTRUCTIVE)
    await calls.ok("post", "/fields/notes", 201, json={"field": "secret", "type": "string"})
    await calls.ok("patch", "/items/notes/a", json={"secret": "new value"})
    assert await user.get("notes", "a") == {"id": "a", "title": "t"}
    await user.err("get", "/items/notes", 403, "PERMISSION_DENIED", params={"filter": '{"secret":{"_nnull":true}}'})
    # Neither readable nor writable: a write naming it answers as for a field that does not exist.
    await user.err("patch", "/items/notes/a", 400, "VALIDATION_FAILED", ["secret"], json={"secret": "x"})
    await user.err("post", "/items/notes", 400, "VALIDATION_FAILED", ["secret"], json={"secret": "x"})
    assert (await user.ok("patch", "/items/notes/a", json={"title": "kept"}))["title"] == "kept"
    rules = await calls.ok("get", f"/policies/{policy['id']}/permissions")
    assert sorted((r["action"], tuple(r["fields"])) for r in rules) == [
        ("create", ("title",)), ("read", ("title",)), ("update", ("title",))]


async def test_rule_changes_are_audited_and_stay_in_their_site(calls: Calls, calls_b: Calls, make_member, site,
                                                               site_b, svc_app):
    _, policy = await _setup(calls, make_member, site)
    _, policy_b = await _setup(calls_b, make_member, site_b)
    rule_ids = {r["id"] for r in await calls.ok("get", f"/policies/{policy['id']}/permissions")}
    await calls.ok("delete", "/fields/notes/secret", status=204, params=DESTRUCTIVE)
    updated = {t for a, t in await audit_actions(svc_app, site) if a == "permission.update"}
    assert updated == rule_ids
    assert all(a != "permission.update" for a, _ in await audit_actions(svc_app, site_b))
    rules_b = await calls_b.ok("get", f"/policies/{policy_b['id']}/permissions")
    assert all(r["fields"] == FIELDS for r in rules_b)


async def test_wildcard_rules_and_rules_of_other_collections_are_left_alone(calls: Calls, make_member, site):
    _, policy = await _setup(calls, make_member, site)
    await calls.collection("other", {"secret": "string"})
    for collection in ("*", "other"):
        await calls.ok("post", f"/policies/{policy['id']}/permissions", 201,
                       json={"collection": collection, "action": "read", "fields": ["secret"]})
    await calls.ok("delete", "/fields/notes/secret", status=204, params=DESTRUCTIVE)
    rules = await calls.ok("get", f"/policies/{policy['id']}/permissions")
    assert sorted((r["collection"], r["action"], tuple(r["fields"])) for r in rules) == [
        ("*", "read", ("secret",)), ("notes", "create", ("title",)), ("notes", "read", ("title",)),
        ("notes", "update", ("title",)), ("other", "read", ("secret",))]
