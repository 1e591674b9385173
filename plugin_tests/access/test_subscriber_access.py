"""/users/subscriber-access: grants, the built-in policy, and routing beside /users/{id}."""

from __future__ import annotations

import pytest
from access_helpers import audit_actions

from kernel.testing import API, Calls
from kernel.testing import shared as testing_shared

# Every test grants and reads in a site of its own: they share the module's app (``shared_site``),
# each in a new site of it (kernel/testing/shared.py: the harness's ``site``, ``calls`` and
# ``make_member`` go through these).

svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


async def test_grant_list_revoke(calls, svc_app, site, make_member):
    subscriber = await make_member(site, "subscriber")
    sub_calls = Calls(svc_app.client, subscriber.headers)
    check = {"collection": "articles", "action": "read"}
    assert (await sub_calls.ok("post", "/permissions/check", json=check))["allowed"] is False

    assert await calls.ok("get", "/users/subscriber-access") == []
    assert await calls.ok("post", "/users/subscriber-access", 201, json={"collection": "articles"}) == {
        "collection": "articles"}
    assert await calls.ok("post", "/users/subscriber-access", 200, json={"collection": "articles"}) == {
        "collection": "articles"}
    await calls.ok("post", "/users/subscriber-access", 201, json={"collection": "authors"})
    assert await calls.ok("get", "/users/subscriber-access") == [{"collection": "articles"},
                                                                 {"collection": "authors"}]
    assert await sub_calls.ok("post", "/permissions/check", json=check) == {
        "allowed": True, "fields": ["*"], "conditions": None}

    await calls.ok("delete", "/users/subscriber-access/articles", 204)
    await calls.err("delete", "/users/subscriber-access/articles", 404, "RECORD_NOT_FOUND")
    assert await calls.ok("get", "/users/subscriber-access") == [{"collection": "authors"}]
    assert (await sub_calls.ok("post", "/permissions/check", json=check))["allowed"] is False

    actions = [a for a, _ in await audit_actions(svc_app, site)]
    assert actions.count("policy.create") == 1 and actions.count("policy.attach") == 1
    assert actions.count("permission.create") == 2 and actions.count("permission.delete") == 1


async def test_builtin_policy_is_attached_to_the_subscriber_role(calls):
    await calls.ok("post", "/users/subscriber-access", 201, json={"collection": "articles"})
    policy = next(p for p in await calls.ok("get", "/policies") if p["systemKey"] == "subscriber_access")
    roles = {r["id"]: r for r in await calls.ok("get", "/roles")}
    [attachment] = policy["attachments"]
    assert roles[attachment["roleId"]]["systemKey"] == "subscriber"
    # Detached by hand: the next grant re-attaches it so the grant takes effect.
    await calls.ok("post", f"/policies/{policy['id']}/detach", 204, json={"roleId": attachment["roleId"]})
    await calls.ok("post", "/users/subscriber-access", 201, json={"collection": "authors"})
    assert len((await calls.ok("get", f"/policies/{policy['id']}"))["attachments"]) == 1


async def test_name_clash_with_an_existing_policy(calls):
    await calls.ok("post", "/policies", 201, json={"name": "Subscriber access"})
    await calls.ok("post", "/users/subscriber-access", 201, json={"collection": "articles"})
    names = sorted(p["name"] for p in await calls.ok("get", "/policies"))
    assert names == ["Subscriber access", "Subscriber access (built-in)"]


async def test_other_rules_of_the_policy_are_not_grants(calls):
    await calls.ok("post", "/users/subscriber-access", 201, json={"collection": "articles"})
    policy = next(p for p in await calls.ok("get", "/policies") if p["systemKey"] == "subscriber_access")
    await calls.ok("post", f"/policies/{policy['id']}/permissions", 201, json={
        "collection": "notes", "action": "read", "conditions": {"owner": {"_eq": "$CURRENT_USER"}}})
    assert await calls.ok("get", "/users/subscriber-access") == [{"collection": "articles"}]
    await calls.err("delete", "/users/subscriber-access/notes", 404)


@pytest.mark.parametrize("body, path", [
    ({}, ["collection"]),
    ({"collection": None}, ["collection"]),
    ({"collection": "*"}, ["collection"]),
    ({"collection": "../x"}, ["collection"]),
    ({"collection": 3}, ["collection"]),
    ({"collection": "a", "action": "update"}, ["action"]),
])
async def test_validation(calls, body, path):
    await calls.err("post", "/users/subscriber-access", 400, "VALIDATION_FAILED", path, json=body)


@pytest.mark.parametrize("name", ["nope", "%2A", "a%00", "x" * 300])
async def test_revoking_what_cannot_exist_is_not_found(calls, name):
    await calls.err("delete", f"/users/subscriber-access/{name}", 404)


def test_literal_segment_wins_over_the_user_id_field(svc_app):
    """Falcon's router prefers a literal segment to a field at the same level, so
    /users/subscriber-access is never taken for the user "subscriber-access" (and the /users
    routes of the accounts plugin never see it)."""
    from plugins.access.permissions.routes_permissions import (
        SubscriberAccessResource,
        SubscriberGrantResource,
    )

    router = svc_app.app._router
    resource, _, params, template = router.find(f"{API}/users/subscriber-access")
    assert isinstance(resource, SubscriberAccessResource) and params == {}
    resource, _, params, _ = router.find(f"{API}/users/subscriber-access/sessions")
    assert isinstance(resource, SubscriberGrantResource) and params == {"collection": "sessions"}
    found = router.find(f"{API}/users/0190a0a0-0000-7000-8000-000000000000")
    assert found is None or not isinstance(found[0], (SubscriberAccessResource, SubscriberGrantResource))


async def test_grant_named_like_a_user_route(calls):
    await calls.ok("post", "/users/subscriber-access", 201, json={"collection": "sessions"})
    await calls.ok("post", "/users/subscriber-access", 201, json={"collection": "impersonate"})
    assert await calls.ok("get", "/users/subscriber-access") == [{"collection": "impersonate"},
                                                                 {"collection": "sessions"}]
    await calls.ok("delete", "/users/subscriber-access/sessions", 204)
    await calls.err("patch", "/users/subscriber-access", 405, json={})
