"""``/roles/{role_id}/permissions``: one call gives a role a permission (docs/access.md#one-call-for-a-role),
into the role's own policy; the subscriber role's own policy is the one ``/users/subscriber-access``
grants into; a deleted role takes its own policy; nothing reaches another site."""

from __future__ import annotations

from kernel.testing import Calls


async def test_one_call_makes_a_collection_public(svc_app, calls, calls_b, site, site_b, anon_calls):
    await calls.collection("posts", {"title": "string"})
    await calls.create("posts", {"title": "hello"})
    await anon_calls.err("get", "/items/posts", 403, "PERMISSION_DENIED")
    rule = await calls.ok("post", "/roles/public/permissions", status=201, json={"collection": "posts"})
    assert {k: rule[k] for k in ("collection", "action", "fields", "conditions")} == {
        "collection": "posts", "action": "read", "fields": ["*"], "conditions": None}
    assert [p["title"] for p in await anon_calls.ok("get", "/items/posts")] == ["hello"]
    # The same rule again is the same rule (200), not a second one.
    again = await calls.ok("post", "/roles/public/permissions", status=200, json={"collection": "posts"})
    assert again["id"] == rule["id"]
    assert [r["id"] for r in await calls.ok("get", "/roles/public/permissions")] == [rule["id"]]
    policy = await calls.ok("get", f"/policies/{rule['policyId']}")
    assert policy["systemKey"].startswith("role_") and [a["roleId"] for a in policy["attachments"]] == [
        next(r["id"] for r in await calls.ok("get", "/roles") if r["systemKey"] == "public")]
    # Removed like any rule.
    await calls.ok("delete", f"/policies/{rule['policyId']}/permissions/{rule['id']}", status=204)
    await anon_calls.err("get", "/items/posts", 403, "PERMISSION_DENIED")

    # Site B: its own public role, its own policy; A's role ids are unknown there.
    await calls_b.collection("posts", {"title": "string"})
    await calls_b.ok("post", "/roles/public/permissions", status=201, json={"collection": "posts"})
    await anon_calls.err("get", "/items/posts", 403, "PERMISSION_DENIED")  # A's public role still reads nothing
    role = await calls.ok("post", "/roles", status=201, json={"name": "Editors"})
    await calls_b.err("post", f"/roles/{role['id']}/permissions", 404, "RECORD_NOT_FOUND", json={"collection": "posts"})
    await calls_b.err("get", f"/roles/{role['id']}/permissions", 404, "RECORD_NOT_FOUND")
    assert await calls.ok("get", f"/roles/{role['id']}/permissions") == []


async def test_roles_by_id_subscriber_and_bad_requests(svc_app, calls, site, make_member):
    role = await calls.ok("post", "/roles", status=201, json={"name": "Editors"})
    rule = await calls.ok("post", f"/roles/{role['id']}/permissions", status=201, json={
        "collection": "posts", "action": "update", "fields": ["title"],
        "conditions": {"userCreated": {"_eq": "$CURRENT_USER"}}})
    assert (rule["action"], rule["fields"]) == ("update", ["title"])
    editor = await make_member(site, role["id"])
    check = await calls.ok("post", "/permissions/check", json={"collection": "posts", "action": "update"},
                           headers=editor.headers)
    assert check["allowed"] is True and check["fields"] == ["title"]
    # Deleting a role takes its own policy (and its rules) with it.
    gone = await calls.ok("post", "/roles", status=201, json={"name": "Temporary"})
    own = await calls.ok("post", f"/roles/{gone['id']}/permissions", status=201, json={"collection": "posts"})
    await calls.ok("delete", f"/roles/{gone['id']}", status=204)
    await calls.err("get", f"/policies/{own['policyId']}", 404, "RECORD_NOT_FOUND")
    assert rule["policyId"] in [p["id"] for p in await calls.ok("get", "/policies")]
    # The subscriber role's own policy is subscriber access's.
    await calls.ok("post", "/roles/subscriber/permissions", status=201, json={"collection": "news"})
    assert await calls.ok("get", "/users/subscriber-access") == [{"collection": "news"}]
    await calls.ok("post", "/users/subscriber-access", status=200, json={"collection": "news"})
    # Bad requests: 400 at the bad part, 404 for an unknown role; admins only.
    for body, path in (({}, ["collection"]), ({"collection": "posts", "action": "fly"}, ["action"]),
                       ({"collection": "posts", "extra": 1}, ["extra"]), ([], ["body"]),
                       ({"collection": "posts", "conditions": {"a": {"_eq": "$WHO"}}}, ["conditions", "a", "_eq"])):
        await calls.err("post", "/roles/public/permissions", 400, "VALIDATION_FAILED", path_is=path, json=body)
    for ref in ("nosuch", "0190a000-0000-7000-8000-000000000000"):
        await calls.err("post", f"/roles/{ref}/permissions", 404, "RECORD_NOT_FOUND", json={"collection": "posts"})
    member = await make_member(site, "subscriber")
    await calls.err("post", "/roles/public/permissions", 403, "PERMISSION_DENIED", json={"collection": "posts"},
                    headers=member.headers)
    await Calls(svc_app.client, {"X-Svc-Site": site}).err("post", "/roles/public/permissions", 401, "UNAUTHENTICATED",
                                                         json={"collection": "posts"})
