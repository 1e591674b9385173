"""``GET /audit``: the site's audit trail for its admins: issuer changes appear, filters,
pagination, bad input (400 with a path), tenancy, non-admins, and no secrets in records."""

from __future__ import annotations

import datetime as dt

import pytest

from kernel.auth.principal import Principal
from kernel.policy.audit import record
from kernel.testing import Calls

AUDIT = "/audit"
ISSUER_BODY = {"issuer": "https://idp.example.test/", "jwksUri": "https://idp.example.test/jwks?tenant=acme",
               "audience": "svc-api", "algorithms": ["RS256"]}


async def write(svc_app, site, action, **kw):
    async with svc_app.kernel.db.begin() as conn:
        return await record(conn, action=action, site_id=site, **kw)


async def test_issuer_changes_are_recorded(calls, svc_app):
    issuer = await calls.ok("post", "/admin/auth/issuers", json=ISSUER_BODY, status=201)
    await calls.ok("patch", f"/admin/auth/issuers/{issuer['id']}", json={"enabled": False, "clockSkewSeconds": 10})
    await calls.ok("delete", f"/admin/auth/issuers/{issuer['id']}", status=204)
    entries = await calls.ok("get", AUDIT, params={"targetType": "issuer"})
    assert [e["action"] for e in entries] == ["issuer.delete", "issuer.update", "issuer.create"]
    admin_id = (await calls.ok("get", "/auth/me"))["id"]
    for entry in entries:
        assert entry["target"] == {"type": "issuer", "id": issuer["id"]}
        assert entry["actor"]["id"] == admin_id and entry["actor"]["kind"] == "user"
        assert entry["details"]["issuer"] == ISSUER_BODY["issuer"] and entry["requestId"]
    assert entries[1]["details"]["changed"] == ["clockSkewSeconds", "enabled"]
    # Records carry names, never the config's values (URLs may hold tenant names or tokens).
    raw = (await calls.call("get", AUDIT)).text
    assert "jwks" not in raw and "acme" not in raw and "svc-api" not in raw


async def test_filters(calls, svc_app, site):
    first = await write(svc_app, site, "thing.create", actor_id="actor-1", target_type="thing", target_id="t1")
    await write(svc_app, site, "thing.update", actor_id="actor-2", target_type="thing", target_id="t1")
    await write(svc_app, site, "other.create", actor_id="actor-1", target_type="other", target_id="o1")

    async def actions(**params):
        return [e["action"] for e in await calls.ok("get", AUDIT, params=params)]

    assert await actions(action="thing.update") == ["thing.update"]
    assert await actions(actorId="actor-1") == ["other.create", "thing.create"]
    assert await actions(targetType="thing", targetId="t1") == ["thing.update", "thing.create"]
    assert await actions(targetId="nothing") == []
    entries = await calls.ok("get", AUDIT)
    created = {e["id"]: e["createdAt"] for e in entries}
    second_at = entries[1]["createdAt"]
    assert await actions(since=second_at) == ["other.create", "thing.update"]
    assert await actions(until=second_at) == ["thing.create"]
    assert await actions(since=created[first], until=second_at) == ["thing.create"]
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
    assert await actions(since=later) == []
    # An offset other than UTC means the same instant.
    plus_two = dt.datetime.fromisoformat(second_at.replace("Z", "+00:00")).astimezone(
        dt.timezone(dt.timedelta(hours=2))).isoformat()
    assert await actions(since=plus_two) == ["other.create", "thing.update"]
    assert await actions(until="2000-01-01") == []


async def test_pagination_newest_first(calls, svc_app, site):
    for i in range(5):
        await write(svc_app, site, f"step.{i}")
    resp = await calls.call("get", AUDIT, params={"limit": 2, "page": 2})
    body = resp.json()
    assert [e["action"] for e in body["data"]] == ["step.2", "step.1"]
    assert body["meta"]["total"] == 5 and body["meta"]["limit"] == 2 and body["meta"]["offset"] == 2
    body = (await calls.call("get", AUDIT, params={"limit": 2, "offset": 4})).json()
    assert [e["action"] for e in body["data"]] == ["step.0"]


@pytest.mark.parametrize(("params", "path"), [
    ({"since": "yesterday"}, ["query", "since"]),
    ({"until": "2024-13-01"}, ["query", "until"]),
    ({"since": "9" * 100}, ["query", "since"]),
    ({"limit": 201}, ["query", "limit"]),
    ({"limit": 0}, ["query", "limit"]),
    ({"offset": -1}, ["query", "offset"]),
    ({"page": "x"}, ["query", "page"]),
    ({"action": "a\u0000b"}, ["query", "action"]),
    ({"actorId": "x" * 301}, ["query", "actorId"]),
])
async def test_bad_input_is_400_with_path(shared_site, params, path):
    await shared_site.calls.err("get", AUDIT, 400, "VALIDATION_FAILED", path_is=path, params=params)


async def test_cross_tenant(calls, calls_b, svc_app, site, site_b, make_member):
    await calls.ok("post", "/admin/auth/issuers", json=ISSUER_BODY, status=201)
    await write(svc_app, site, "secret.of.a", target_id="a1")
    admin_b = await make_member(site_b, role="admin")
    seen = await calls.ok("get", AUDIT, headers=admin_b.headers)
    assert all(e["siteId"] == site_b for e in seen)
    assert not any(e["action"] in ("secret.of.a", "issuer.create") for e in seen)
    assert await calls.ok("get", AUDIT, headers=admin_b.headers, params={"targetId": "a1"}) == []
    # Site B's admin naming site A: the login is bound to site B.
    resp = await calls.call("get", AUDIT, headers={**admin_b.headers, "X-Svc-Site": site})
    assert resp.status_code == 401 and "data" not in resp.json()
    assert resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"
    assert [e["action"] for e in await calls_b.ok("get", AUDIT, params={"action": "secret.of.a"})] == []


async def test_non_admin_and_anonymous(calls, anon_calls, site, make_member):
    member = await make_member(site, role="subscriber")
    await calls.err("get", AUDIT, 403, "PERMISSION_DENIED", headers=member.headers)
    await anon_calls.err("get", AUDIT, 401, "UNAUTHENTICATED")


async def test_site_is_required(client, admin_headers):
    no_site = Calls(client, admin_headers)
    await no_site.err("get", AUDIT, 400, "VALIDATION_FAILED", path_is=["headers", "X-Svc-Site"])


async def test_records_never_hold_secrets(calls, svc_app, site):
    await write(svc_app, site, "key.rotated", details={
        "password": "hunter2", "newPassword": "hunter3", "token": "tok-123", "refreshToken": "r-1",
        "apiKey": "svk_abc", "secret": "s3", "clientSecret": "cs", "keyId": "k-1", "name": "visible",
        "nested": {"password": "deep"}})
    entry = (await calls.ok("get", AUDIT, params={"action": "key.rotated"}))[0]
    assert entry["details"] == {"keyId": "k-1", "name": "visible"}
    raw = (await calls.call("get", AUDIT)).text
    for secret in ("hunter2", "hunter3", "tok-123", "r-1", "svk_abc", "s3\"", "deep"):
        assert secret not in raw


async def test_the_instance_admins_actions_are_found_by_actor(calls, svc_app, site, make_member):
    """The instance admin is a member of no site: ``GET /users`` does not list it, yet its actions
    fill the trail. ``GET /audit/actors`` names everyone in the trail (the instance admin too), and
    ``actorId`` finds what an admin did in person and through an impersonation session."""
    admin_id = (await calls.ok("get", "/auth/me"))["id"]
    await calls.ok("post", "/policies", 201, json={"name": "by the instance admin"})
    member = await make_member(site, "subscriber")
    token = (await calls.ok("post", f"/users/{member.id}/impersonate"))["token"]
    acting = Calls(calls.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": site})
    # what an impersonation session writes (the kernel's principal, with its impersonator)
    await write(svc_app, site, "probe.as_member", principal=Principal(kind="user", user_id=member.id,
                                                                      impersonator_id=admin_id))
    assert admin_id not in {u["id"] for u in await calls.ok("get", "/users")}

    actors = {a["id"]: a for a in await calls.ok("get", "/audit/actors")}
    assert actors[admin_id]["email"] == "admin@example.com" and actors[admin_id]["instanceAdmin"] is True
    assert actors[member.id]["instanceAdmin"] is False and actors[member.id]["kind"] == "user"
    mine = {e["action"] for e in await calls.ok("get", AUDIT, params={"actorId": admin_id, "limit": 200})}
    assert {"policy.create", "user.impersonate", "probe.as_member"} <= mine
    theirs = {e["action"] for e in await calls.ok("get", AUDIT, params={"actorId": member.id, "limit": 200})}
    assert "probe.as_member" in theirs and "policy.create" not in theirs
    # Site admins only; another site's trail names nobody of this one.
    await acting.err("get", "/audit/actors", 403, "PERMISSION_DENIED")
    other = await svc_app.create_site({"Authorization": calls.headers["Authorization"]})
    answer = await calls.ok("get", "/audit/actors", headers={"X-Svc-Site": other})
    assert member.id not in {a["id"] for a in answer}

