"""Policy evaluation end to end: what the access routes write is what ``kernel.access`` decides.

Through HTTP (``/permissions/check``, ``/permissions/me``, admin routes) and directly through
``kernel.access.decide``; cache invalidation on one app and across two apps sharing a data
directory, without Redis (bounded by the ``access`` cache's TTL) and with it (immediate).
"""

from __future__ import annotations

import asyncio

from access_helpers import role_id_of

from kernel import ANONYMOUS, Principal
from kernel.testing import API, Calls
from kernel.testing import shared as testing_shared

# Every test but the two-app ones writes and reads in sites of its own: they share the module's
# app (the auth rate limit off: its tests log in many members), each in new sites of it
# (kernel/testing/shared.py).
shared_site = testing_shared.login_shared_site
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

READ = {"collection": "articles", "action": "read"}


async def rule(calls: Calls, policy_id: str, **body) -> dict:
    return await calls.ok("post", f"/policies/{policy_id}/permissions", 201, json={**READ, **body})


async def policy_with(calls: Calls, name: str, **rule_body) -> dict:
    policy = await calls.ok("post", "/policies", 201, json={"name": name})
    await rule(calls, policy["id"], **rule_body)
    return policy


async def attach(calls: Calls, policy: dict, **target) -> None:
    await calls.ok("post", f"/policies/{policy['id']}/attach", 201, json=target)


async def check(svc_app, member, body=None) -> dict:
    return await Calls(svc_app.client, member.headers).ok("post", "/permissions/check", json=body or READ)


async def test_default_deny(svc_app, site, calls, make_member):
    role = await calls.ok("post", "/roles", 201, json={"name": "Nobody"})
    member = await make_member(site, role["id"])
    assert await check(svc_app, member) == {"allowed": False, "fields": [], "conditions": None}
    # A rule on another collection or action grants nothing here.
    await attach(calls, await policy_with(calls, "Other", collection="authors"), roleId=role["id"])
    await attach(calls, await policy_with(calls, "Other action", action="update"), roleId=role["id"])
    assert (await check(svc_app, member))["allowed"] is False


async def test_union_of_user_role_chain_and_team_policies(svc_app, site, calls, make_member):
    grand = await calls.ok("post", "/roles", 201, json={"name": "Grand"})
    parent = await calls.ok("post", "/roles", 201, json={"name": "Parent", "parentId": grand["id"]})
    role = await calls.ok("post", "/roles", 201, json={"name": "Role", "parentId": parent["id"]})
    member = await make_member(site, role["id"])
    other = await make_member(site, "subscriber")
    team = await calls.ok("post", "/teams", 201, json={"name": "Team", "members": [member.id]})
    await attach(calls, await policy_with(calls, "Via grandparent", fields=["a"]), roleId=grand["id"])
    await attach(calls, await policy_with(calls, "Via user", fields=["b"]), userId=member.id)
    await attach(calls, await policy_with(calls, "Via team", fields=["c"]), teamId=team["id"])
    await attach(calls, await policy_with(calls, "Via role", action="delete"), roleId=role["id"])
    assert await check(svc_app, member) == {"allowed": True, "fields": ["a", "b", "c"], "conditions": None}
    assert (await check(svc_app, member, {"collection": "articles", "action": "delete"}))["allowed"] is True
    assert (await check(svc_app, other))["allowed"] is False  # none of it reaches a non-member of those
    # The same through kernel.access.decide.
    decision = await svc_app.kernel.access.decide(Principal(kind="user", user_id=member.id), site,
                                                  "articles", "read")
    assert decision.allowed and decision.fields == frozenset({"a", "b", "c"}) and decision.row_filter is None
    assert decision.field_allowed("a") and not decision.field_allowed("z")


async def test_fields_union_with_star_and_wildcard_collection(svc_app, site, calls, make_member):
    member = await make_member(site, "subscriber")
    await attach(calls, await policy_with(calls, "Some", fields=["title"]), userId=member.id)
    assert (await check(svc_app, member))["fields"] == ["title"]
    await attach(calls, await policy_with(calls, "All", collection="*", fields=["*"]), userId=member.id)
    assert (await check(svc_app, member))["fields"] == ["*"]
    assert (await check(svc_app, member, {"collection": "anything", "action": "read"}))["allowed"] is True


async def test_conditions_are_ored_and_variables_substituted(svc_app, site, calls, make_member):
    role = await calls.ok("post", "/roles", 201, json={"name": "Authors"})
    member = await make_member(site, role["id"])
    policy = await calls.ok("post", "/policies", 201, json={"name": "Own or published"})
    await rule(calls, policy["id"], conditions={"owner": {"_eq": "$CURRENT_USER"}})
    await rule(calls, policy["id"], conditions={"_and": [{"status": {"_eq": "published"}},
                                                         {"publish_at": {"_lte": "$NOW"}}]})
    await rule(calls, policy["id"], conditions={"role": {"_in": "$CURRENT_ROLES"}, "r": {"_eq": "$CURRENT_ROLE"}})
    await attach(calls, policy, roleId=role["id"])
    result = await check(svc_app, member)
    first, second, third = result["conditions"]["_or"]
    assert first == {"owner": {"_eq": member.id}}
    assert second["_and"][0] == {"status": {"_eq": "published"}}
    assert second["_and"][1]["publish_at"]["_lte"].endswith("Z")  # $NOW, an ISO timestamp
    assert third == {"role": {"_in": [role["id"]]}, "r": {"_eq": role["id"]}}
    # A rule without conditions lifts the row restriction for everyone it applies to.
    await attach(calls, await policy_with(calls, "Everything"), userId=member.id)
    assert (await check(svc_app, member))["conditions"] is None


async def test_current_user_differs_per_user(svc_app, site, calls, make_member):
    policy = await policy_with(calls, "Own", conditions={"owner": {"_eq": "$CURRENT_USER"}})
    subscriber_role = await role_id_of(svc_app, site, "subscriber")
    await attach(calls, policy, roleId=subscriber_role)
    one, two = await make_member(site, "subscriber"), await make_member(site, "subscriber")
    assert (await check(svc_app, one))["conditions"] == {"owner": {"_eq": one.id}}
    assert (await check(svc_app, two))["conditions"] == {"owner": {"_eq": two.id}}


async def test_public_role_applies_to_anonymous(svc_app, site, calls):
    access = svc_app.kernel.access
    assert (await access.decide(ANONYMOUS, site, "articles", "read")).allowed is False
    public = await role_id_of(svc_app, site, "public")
    await attach(calls, await policy_with(calls, "Public read", fields=["title"]), roleId=public)
    decision = await access.decide(ANONYMOUS, site, "articles", "read")
    assert decision.allowed and decision.fields == frozenset({"title"})
    assert (await access.decide(ANONYMOUS, site, "articles", "update")).allowed is False


async def test_api_key_principal_uses_its_role(svc_app, site, site_b, calls):
    role = await calls.ok("post", "/roles", 201, json={"name": "Integrations"})
    await attach(calls, await policy_with(calls, "Integration read"), roleId=role["id"])
    key = Principal(kind="api_key", api_key_id="k1", role_id=role["id"])
    assert (await svc_app.kernel.access.decide(key, site, "articles", "read")).allowed is True
    # The same role id means nothing in another site.
    assert (await svc_app.kernel.access.decide(key, site_b, "articles", "read")).allowed is False


async def test_admin_policy_short_circuits(svc_app, site, calls, make_member):
    member = await make_member(site, "subscriber")
    as_member = Calls(svc_app.client, member.headers)
    await as_member.err("get", "/roles", 403, "PERMISSION_DENIED")
    admin_policy = await calls.ok("post", "/policies", 201, json={"name": "Admins", "adminAccess": True})
    await attach(calls, admin_policy, userId=member.id)
    assert await check(svc_app, member, {"collection": "anything", "action": "media:delete"}) == {
        "allowed": True, "fields": ["*"], "conditions": None}
    assert (await as_member.ok("get", "/permissions/me"))["admin"] is True
    assert len(await as_member.ok("get", "/roles")) == 3  # admin routes open at once
    await calls.ok("post", f"/policies/{admin_policy['id']}/detach", 204, json={"userId": member.id})
    await as_member.err("get", "/roles", 403, "PERMISSION_DENIED")


async def test_changes_take_effect_on_the_very_next_request(svc_app, site, calls, make_member, monkeypatch):
    # A TTL that never expires during the test: only the bus can make the change visible (put
    # back after it: the module's app outlives the test).
    monkeypatch.setattr(svc_app.kernel.site_caches["access"], "ttl", 3600.0)
    role = await calls.ok("post", "/roles", 201, json={"name": "Editors"})
    member = await make_member(site, role["id"])
    assert (await check(svc_app, member))["allowed"] is False
    policy = await calls.ok("post", "/policies", 201, json={"name": "Editors read"})
    await attach(calls, policy, roleId=role["id"])
    assert (await check(svc_app, member))["allowed"] is False  # cached, no rule yet
    created = await rule(calls, policy["id"])
    assert (await check(svc_app, member))["allowed"] is True
    await calls.ok("delete", f"/policies/{policy['id']}/permissions/{created['id']}", 204)
    assert (await check(svc_app, member))["allowed"] is False
    await rule(calls, policy["id"])
    assert (await check(svc_app, member))["allowed"] is True
    await calls.ok("post", f"/policies/{policy['id']}/detach", 204, json={"roleId": role["id"]})
    assert (await check(svc_app, member))["allowed"] is False
    await attach(calls, policy, roleId=role["id"])
    await calls.ok("delete", f"/policies/{policy['id']}", 204)
    assert (await check(svc_app, member))["allowed"] is False
    # Role admin access and team membership too.
    await calls.ok("patch", f"/roles/{role['id']}", json={"adminAccess": True})
    assert (await Calls(svc_app.client, member.headers).ok("get", "/permissions/me"))["admin"] is True
    await calls.ok("patch", f"/roles/{role['id']}", json={"adminAccess": False})
    team_policy = await policy_with(calls, "Team read")
    team = await calls.ok("post", "/teams", 201, json={"name": "T"})
    await attach(calls, team_policy, teamId=team["id"])
    assert (await check(svc_app, member))["allowed"] is False
    await calls.ok("patch", f"/teams/{team['id']}", json={"members": [member.id]})
    assert (await check(svc_app, member))["allowed"] is True
    await calls.ok("patch", f"/teams/{team['id']}", json={"members": []})
    assert (await check(svc_app, member))["allowed"] is False


async def _two_apps(make_app, tmp_path, **overrides):
    one = await make_app(data_dir=tmp_path / "shared", **overrides)
    two = await make_app(data_dir=tmp_path / "shared", **overrides)
    token = await one.login()
    site_id = "default"
    calls_one = Calls(one.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": site_id})
    subscriber = await role_id_of(one, site_id, "subscriber")
    policy = await policy_with(calls_one, "Shared read")
    await attach(calls_one, policy, roleId=subscriber)
    member_principal = Principal(kind="api_key", api_key_id="k", role_id=subscriber)
    return one, two, calls_one, policy, member_principal


async def test_two_apps_without_redis_converge_within_the_ttl(make_app, tmp_path):
    one, two, calls_one, policy, principal = await _two_apps(make_app, tmp_path, redis_url="")
    two.kernel.site_caches["access"].ttl = 0.5
    assert (await two.kernel.access.decide(principal, "default", "articles", "read")).allowed is True
    rules = await calls_one.ok("get", f"/policies/{policy['id']}/permissions")
    await calls_one.ok("delete", f"/policies/{policy['id']}/permissions/{rules[0]['id']}", 204)
    assert (await one.kernel.access.decide(principal, "default", "articles", "read")).allowed is False
    await asyncio.sleep(0.6)
    assert (await two.kernel.access.decide(principal, "default", "articles", "read")).allowed is False


async def test_two_apps_with_redis_converge_at_once(make_app, tmp_path, redis_url):
    one, two, calls_one, policy, principal = await _two_apps(make_app, tmp_path, redis_url=redis_url)
    two.kernel.site_caches["access"].ttl = 3600.0  # only the bus can carry the change
    assert (await two.kernel.access.decide(principal, "default", "articles", "read")).allowed is True
    rules = await calls_one.ok("get", f"/policies/{policy['id']}/permissions")
    await calls_one.ok("delete", f"/policies/{policy['id']}/permissions/{rules[0]['id']}", 204)
    for _ in range(100):  # pub/sub delivery is asynchronous, but well under a second
        if not (await two.kernel.access.decide(principal, "default", "articles", "read")).allowed:
            break
        await asyncio.sleep(0.02)
    assert (await two.kernel.access.decide(principal, "default", "articles", "read")).allowed is False
    # And over HTTP on app two: the admin's own view matches.
    token = await two.login()
    resp = await two.client.get(f"{API}/policies/{policy['id']}/permissions",
                                headers={"Authorization": f"Bearer {token}", "X-Svc-Site": "default"})
    assert resp.json()["data"] == []
