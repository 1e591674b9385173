"""/policies/{id}/permissions: permission rules of a policy, through HTTP."""

from __future__ import annotations

import pytest
import pytest_asyncio
from access_helpers import audit_actions

MISSING = "0190a0a0-0000-7000-8000-000000000000"


@pytest.fixture
async def policy(calls):
    return await calls.ok("post", "/policies", 201, json={"name": "Rules"})


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_policy(shared_site):
    """A policy on the module's shared site, and its admin's calls."""
    return shared_site.calls, await shared_site.calls.ok("post", "/policies", 201, json={"name": "Rules"})


async def test_crud(calls, svc_app, site, policy):
    base = f"/policies/{policy['id']}/permissions"
    rule = await calls.ok("post", base, 201, json={
        "collection": "articles", "action": "read", "fields": ["title", "body", "title"],
        "conditions": {"_or": [{"owner": {"_eq": "$CURRENT_USER"}}, {"status": {"_in": ["published"]}}]}})
    assert rule["fields"] == ["title", "body"] and rule["policyId"] == policy["id"]
    assert rule["conditions"]["_or"][0] == {"owner": {"_eq": "$CURRENT_USER"}}
    plain = await calls.ok("post", base, 201, json={"collection": "*", "action": "media:read"})
    assert plain["fields"] == ["*"] and plain["conditions"] is None
    star = await calls.ok("post", base, 201, json={"collection": "x", "action": "create", "fields": ["a", "*"],
                                                   "conditions": {}})
    assert star["fields"] == ["*"] and star["conditions"] is None
    assert await calls.ok("get", f"{base}/{rule['id']}") == rule
    resp = await calls.call("get", f"{base}?limit=2")
    assert [r["id"] for r in resp.json()["data"]] == [rule["id"], plain["id"]]
    assert resp.json()["meta"]["total"] == 3
    await calls.ok("delete", f"{base}/{rule['id']}", 204)
    await calls.err("delete", f"{base}/{rule['id']}", 404, "RECORD_NOT_FOUND")
    await calls.err("get", f"{base}/{rule['id']}", 404, "RECORD_NOT_FOUND")
    actions = [a for a, t in await audit_actions(svc_app, site) if t == rule["id"]]
    assert actions == ["permission.create", "permission.delete"]


async def test_rules_belong_to_their_policy(calls, policy):
    other = await calls.ok("post", "/policies", 201, json={"name": "Other"})
    rule = await calls.ok("post", f"/policies/{policy['id']}/permissions", 201,
                          json={"collection": "a", "action": "read"})
    await calls.err("get", f"/policies/{other['id']}/permissions/{rule['id']}", 404)
    await calls.err("delete", f"/policies/{other['id']}/permissions/{rule['id']}", 404)
    await calls.err("get", f"/policies/{MISSING}/permissions", 404, "RECORD_NOT_FOUND")
    await calls.err("post", f"/policies/{MISSING}/permissions", 404, json={"collection": "a", "action": "read"})
    await calls.err("get", "/policies/bad%20id/permissions", 404)


@pytest.mark.parametrize("body, path", [
    ({"action": "read"}, ["collection"]),
    ({"collection": "a"}, ["action"]),
    ({"collection": "a", "action": "publish"}, ["action"]),
    ({"collection": "a", "action": 1}, ["action"]),
    ({"collection": "1abc", "action": "read"}, ["collection"]),
    ({"collection": "a-b", "action": "read"}, ["collection"]),
    ({"collection": "../files", "action": "read"}, ["collection"]),
    ({"collection": "a; DROP TABLE x", "action": "read"}, ["collection"]),
    ({"collection": "a" * 65, "action": "read"}, ["collection"]),
    ({"collection": "articles\n", "action": "read"}, ["collection"]),
    ({"collection": ["a"], "action": "read"}, ["collection"]),
    ({"collection": "a", "action": "read", "fields": "title"}, ["fields"]),
    ({"collection": "a", "action": "read", "fields": [1]}, ["fields", "0"]),
    ({"collection": "a", "action": "read", "fields": ["ok", "not ok"]}, ["fields", "1"]),
    ({"collection": "a", "action": "read", "fields": ["f"] * 501}, ["fields"]),
    ({"collection": "a", "action": "read", "conditions": []}, ["conditions"]),
    ({"collection": "a", "action": "read", "conditions": "owner = 1"}, ["conditions"]),
    ({"collection": "a", "action": "read", "conditions": {"owner": {"_like": "x"}}}, ["conditions", "owner", "_like"]),
    ({"collection": "a", "action": "read", "conditions": {"_eq": 1}}, ["conditions", "_eq"]),
    ({"collection": "a", "action": "read", "permissions": {}}, ["permissions"]),
])
async def test_create_validation(shared_policy, body, path):
    calls, policy = shared_policy
    await calls.err("post", f"/policies/{policy['id']}/permissions", 400, "VALIDATION_FAILED", path, json=body)


async def test_conditions_are_not_audited(calls, svc_app, site, policy):
    await calls.ok("post", f"/policies/{policy['id']}/permissions", 201, json={
        "collection": "a", "action": "read", "conditions": {"secret_field": {"_eq": "classified-value"}}})
    from kernel.policy.audit import list_entries

    async with svc_app.kernel.db.connect() as conn:
        entries, _ = await list_entries(conn, site, action="permission.create")
    assert entries and "classified-value" not in repr(entries) and "secret_field" not in repr(entries)
    assert entries[0]["details"]["collection"] == "a"


async def test_actions_are_the_kernels_and_the_enabled_plugins(make_app, svc_app):
    from kernel.testing import Calls

    # Every plugin enabled: files, regulated, cdc and flows register theirs.
    assert set(svc_app.kernel.access.actions) >= {"create", "read", "update", "delete", "read_decrypted",
                                                  "media:read", "cdc:subscribe", "flows:run"}
    assert set(svc_app.kernel.access.capabilities) == {"cdc:subscribe", "flows:run"}
    # Without them, a rule may name only the kernel's actions (and the OpenAPI enum says so).
    app = await make_app(["utils"])
    assert app.kernel.access.actions == ("create", "read", "update", "delete")
    with pytest.raises(ValueError, match="unknown capability 'flows:run'"):
        await app.kernel.access.has_capability(None, "s", "flows:run")  # refused before the principal is read
    headers = {"Authorization": f"Bearer {await app.login()}"}
    calls = Calls(app.client, {**headers, "X-Svc-Site": await app.create_site(headers)})
    policy = await calls.ok("post", "/policies", 201, json={"name": "Rules"})
    base = f"/policies/{policy['id']}/permissions"
    error = await calls.err("post", base, 400, "VALIDATION_FAILED", ["action"],
                            json={"collection": "*", "action": "media:read"})
    assert error["message"] == "'action' must be one of create, read, update, delete"
    await calls.ok("post", base, 201, json={"collection": "a", "action": "update"})
    spec = (await app.client.get("/api/v1/openapi.json", headers=headers)).json()
    body = spec["paths"]["/api/v1/policies/{policy_id}/permissions"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["properties"]["action"]["enum"] == ["create", "read", "update", "delete"]
