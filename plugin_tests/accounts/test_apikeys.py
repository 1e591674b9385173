"""API keys: created and shown once, stored hashed, used as ``Bearer svk_...`` within their site.
Keys are a site's own: the tests share the module's app, each in new sites (kernel/testing/shared.py)."""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest
from sqlalchemy import select, update

from kernel.policy.audit import audit_log
from kernel.testing import shared as testing_shared
from plugins.access.api import role_by_system_key
from plugins.accounts.tables import api_keys

API = "/api/v1"

svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def role_id(app, site: str, key: str) -> str:
    async with app.kernel.db.connect() as conn:
        return (await role_by_system_key(conn, site, key))["id"]


async def create_key(client, headers, **body) -> dict:
    resp = await client.post(f"{API}/api-keys", json={"name": "build server", **body}, headers=headers)
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


def key_headers(key: str, site: str | None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {key}"}
    if site:
        headers["X-Svc-Site"] = site
    return headers


async def stored(app, key_id: str):
    async with app.kernel.db.connect() as conn:
        return (await conn.execute(select(api_keys).where(api_keys.c.id == key_id))).mappings().one()


async def test_create_shows_the_key_once_and_stores_its_hash(svc_app, client, site, site_headers):
    data = await create_key(client, site_headers)
    assert set(data) == {"id", "name", "key", "roleId", "role", "expiresAt", "createdAt"}
    key = data["key"]
    assert key.startswith("svk_") and len(key) >= 44
    assert data["roleId"] == await role_id(svc_app, site, "public") and data["expiresAt"] is None
    # Without roleId the key acts as the public role, and the answer says so.
    assert data["role"] == {"id": data["roleId"], "name": data["role"]["name"], "systemKey": "public"}
    row = await stored(svc_app, data["id"])
    assert row["key_hash"] == hashlib.sha256(key.encode()).hexdigest() and key not in str(dict(row))
    listing = await client.get(f"{API}/api-keys", headers=site_headers)
    assert listing.status_code == 200 and key not in listing.text and row["key_hash"] not in listing.text
    [item] = listing.json()["data"]
    assert item["prefix"] == key[4:12] and item["lastUsedAt"] is None
    assert set(item) == {"id", "name", "prefix", "roleId", "role", "createdAt", "expiresAt", "lastUsedAt"}
    assert item["role"] == data["role"]
    one = await client.get(f"{API}/api-keys/{data['id']}", headers=site_headers)
    assert one.json()["data"] == item
    assert (await client.get(f"{API}/api-keys/%00", headers=site_headers)).status_code == 404
    async with svc_app.kernel.db.connect() as conn:
        actions = [r[0] for r in await conn.execute(select(audit_log.c.action).where(audit_log.c.site_id == site))]
    assert "api_key.create" in actions


async def test_an_admin_key_works_on_admin_routes_but_is_not_a_user(svc_app, client, site, site_headers):
    key = (await create_key(client, site_headers, roleId=await role_id(svc_app, site, "admin")))["key"]
    resp = await client.get(f"{API}/users", headers=key_headers(key, site))
    assert resp.status_code == 200, resp.text
    me = await client.get(f"{API}/auth/me", headers=key_headers(key, site))
    assert me.status_code == 403 and me.json()["errors"][0]["code"] == "PERMISSION_DENIED"


async def test_the_answer_states_the_keys_role_and_null_once_deleted(svc_app, client, site, site_headers, site_b_headers):
    role = (await client.post(f"{API}/roles", json={"name": "Bots"}, headers=site_headers)).json()["data"]
    data = await create_key(client, site_headers, roleId=role["id"])
    assert data["role"] == {"id": role["id"], "name": "Bots", "systemKey": None}
    # Another site's role is not this site's: refused, never echoed.
    resp = await client.post(f"{API}/api-keys", json={"name": "x", "roleId": role["id"]}, headers=site_b_headers)
    assert (resp.status_code, resp.json()["errors"][0]["path"]) == (400, ["roleId"])
    assert (await client.delete(f"{API}/roles/{role['id']}", headers=site_headers)).status_code == 204
    one = (await client.get(f"{API}/api-keys/{data['id']}", headers=site_headers)).json()["data"]
    assert (one["roleId"], one["role"]) == (role["id"], None)
    listed = (await client.get(f"{API}/api-keys", headers=site_headers)).json()["data"]
    assert [k["role"] for k in listed] == [None]
    resp = await client.get(f"{API}/items/anything", headers=key_headers(data["key"], site))
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (403, "PERMISSION_DENIED")
    # The OpenAPI document says what the role is.
    doc = (await client.get(f"{API}/openapi.json")).json()
    created = doc["paths"]["/api/v1/api-keys"]["post"]["responses"]["201"]["content"]["application/json"]
    role_schema = created["schema"]["properties"]["data"]["properties"]["role"]
    assert "public role" in role_schema["description"]


async def test_a_default_key_has_least_privilege(client, site, site_headers):
    key = (await create_key(client, site_headers))["key"]
    resp = await client.get(f"{API}/users", headers=key_headers(key, site))
    assert resp.status_code == 403


async def test_last_used_is_recorded_at_most_once_a_minute(svc_app, client, site, site_headers):
    data = await create_key(client, site_headers, roleId=await role_id(svc_app, site, "admin"))
    await client.get(f"{API}/api-keys", headers=key_headers(data["key"], site))
    first = (await stored(svc_app, data["id"]))["last_used_at"]
    assert first is not None
    await client.get(f"{API}/api-keys", headers=key_headers(data["key"], site))
    assert (await stored(svc_app, data["id"]))["last_used_at"] == first


async def test_a_key_works_only_in_its_own_site(svc_app, client, site, site_b, site_headers):
    key = (await create_key(client, site_headers, roleId=await role_id(svc_app, site, "admin")))["key"]
    for headers in (key_headers(key, site_b), key_headers(key, None)):
        resp = await client.get(f"{API}/auth/me", headers=headers)
        assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"
    resp = await client.get(f"{API}/users", headers=key_headers(key, site_b))
    assert resp.status_code == 401


async def test_expired_and_deleted_and_unknown_keys_are_refused(svc_app, client, site, site_headers):
    admin_role = await role_id(svc_app, site, "admin")
    expiring = await create_key(client, site_headers, roleId=admin_role,
                                expiresAt=(dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat())
    assert expiring["expiresAt"].endswith("Z")
    assert (await client.get(f"{API}/users", headers=key_headers(expiring["key"], site))).status_code == 200
    async with svc_app.kernel.db.begin() as conn:
        await conn.execute(update(api_keys).where(api_keys.c.id == expiring["id"])
                           .values(expires_at=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)))
    resp = await client.get(f"{API}/users", headers=key_headers(expiring["key"], site))
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"

    deleted = await create_key(client, site_headers, roleId=admin_role)
    assert (await client.delete(f"{API}/api-keys/{deleted['id']}", headers=site_headers)).status_code == 204
    assert (await client.get(f"{API}/users", headers=key_headers(deleted["key"], site))).status_code == 401
    again = await client.delete(f"{API}/api-keys/{deleted['id']}", headers=site_headers)
    assert again.status_code == 404 and again.json()["errors"][0]["code"] == "RECORD_NOT_FOUND"
    for bogus in ("svk_" + "A" * 43, "svk_", "svk_" + "x" * 300):
        assert (await client.get(f"{API}/users", headers=key_headers(bogus, site))).status_code == 401


async def test_keys_of_one_site_are_invisible_from_another(svc_app, client, site, site_b, site_headers,
                                                          admin_headers):
    data = await create_key(client, site_headers)
    other = {**admin_headers, "X-Svc-Site": site_b}
    listing = await client.get(f"{API}/api-keys", headers=other)
    assert listing.status_code == 200 and listing.json()["data"] == [] and listing.json()["meta"]["total"] == 0
    for method in ("GET", "DELETE"):
        resp = await client.request(method, f"{API}/api-keys/{data['id']}", headers=other)
        assert resp.status_code == 404
    assert (await client.get(f"{API}/api-keys/{data['id']}", headers=site_headers)).status_code == 200


async def test_role_of_another_site_is_refused(svc_app, client, site_headers, site_b):
    resp = await client.post(f"{API}/api-keys", json={"name": "k", "roleId": await role_id(svc_app, site_b, "admin")},
                             headers=site_headers)
    assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["roleId"]


@pytest.mark.parametrize(("body", "path"), [
    ({}, "name"),
    ({"name": ""}, "name"),
    ({"name": "   "}, "name"),
    ({"name": 5}, "name"),
    ({"name": "x" * 201}, "name"),
    ({"name": "k", "expiresAt": "2001-01-01T00:00:00Z"}, "expiresAt"),
    ({"name": "k", "expiresAt": "next tuesday"}, "expiresAt"),
    ({"name": "k", "expiresAt": 1234567890}, "expiresAt"),
    ({"name": "k", "expiresAt": "9999-12-31T23:59:59-05:00"}, "expiresAt"),
    ({"name": "k", "roleId": "\x00"}, "roleId"),
    ({"name": "k", "roleId": ["x"]}, "roleId"),
    ({"name": "k", "key": "svk_chosen"}, "key"),
    ({"name": "k", "siteId": "other"}, "siteId"),
])
async def test_bad_input_is_validation_failed(shared_site, body, path):
    client, site_headers = shared_site.app.client, shared_site.site_headers
    resp = await client.post(f"{API}/api-keys", json=body, headers=site_headers)
    assert resp.status_code == 400, resp.text
    assert resp.json()["errors"][0]["code"] == "VALIDATION_FAILED" and resp.json()["errors"][0]["path"] == [path]


async def test_key_routes_need_admin(client, site, make_member, login_as):
    member = await make_member(site)
    headers = {"Authorization": f"Bearer {(await login_as(member.email, site=site))['token']}", "X-Svc-Site": site}
    assert (await client.get(f"{API}/api-keys", headers=headers)).status_code == 403
    assert (await client.post(f"{API}/api-keys", json={"name": "k"}, headers=headers)).status_code == 403
    assert (await client.get(f"{API}/api-keys", headers={"X-Svc-Site": site})).status_code == 401


async def test_openapi_documents_the_routes(client):
    paths = (await client.get(f"{API}/openapi.json")).json()["paths"]
    for path in ("/api/v1/api-keys", "/api/v1/api-keys/{key_id}", "/api/v1/users", "/api/v1/users/{user_id}",
                 "/api/v1/users/invite", "/api/v1/auth/register", "/api/v1/auth/accept-invite"):
        assert path in paths
    assert paths["/api/v1/auth/register"]["post"]["security"] == [{}, {"bearer": []}]
