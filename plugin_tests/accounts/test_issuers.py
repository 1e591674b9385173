"""Trusted external issuers, the admin CRUD: validation (422 with a path), duplicates (409),
unknown ids (404 NOT_FOUND), PATCH merging, tenancy and who may call it."""

from __future__ import annotations

import pytest
from issuer_kit import AUDIENCE, ISSUER, ISSUERS, add_role, issuer_body, unique

from kernel.testing import shared as testing_shared
from plugins.access.api import role_by_system_key

# The tests share the module's app, each in a new site of its own (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

JWKS = "https://idp.example.test/.well-known/jwks.json"
DROP = object()  # in a parametrized override: leave the key out (None means an explicit null)


async def create(client, headers, **overrides):
    resp = await client.post(ISSUERS, json=issuer_body(JWKS, **overrides), headers=headers)
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


async def test_create_fills_defaults_and_reads_back(client, site_headers):
    data = await create(client, site_headers, clockSkewSeconds=None, roleMapping=None)
    assert data["issuer"] == ISSUER and data["jwksUri"] == JWKS and data["discoveryUrl"] is None
    assert data["audience"] == AUDIENCE and data["algorithms"] == ["RS256", "ES256"]
    assert data["claimMapping"] == {"email": "email", "roles": "roles", "siteId": "siteId", "externalId": "sub"}
    assert data["roleMapping"] == {} and data["defaultRoleId"] is None
    assert data["jitProvisioning"] is False and data["enabled"] is True and data["clockSkewSeconds"] == 60
    got = await client.get(f"{ISSUERS}/{data['id']}", headers=site_headers)
    assert got.status_code == 200 and got.json()["data"] == data
    listed = await client.get(ISSUERS, headers=site_headers)
    assert listed.json()["data"] == [data]
    assert listed.json()["meta"]["total"] == 1


async def test_role_mapping_by_role_id_and_system_key(svc_app, client, site, site_headers):
    editor = await add_role(svc_app.kernel, site, "Editor")
    data = await create(client, site_headers, roleMapping={"editor": {"roleId": editor}, "staff": {"systemKey": "admin"}},
                        claimMapping={"roles": "realm_access.roles"}, audience=["a", "b"])
    assert data["roleMapping"] == {"editor": {"roleId": editor}, "staff": {"systemKey": "admin"}}
    assert data["claimMapping"]["roles"] == "realm_access.roles" and data["claimMapping"]["email"] == "email"
    assert data["audience"] == ["a", "b"]


@pytest.mark.parametrize(("overrides", "path"), [
    ({"algorithms": ["HS256"]}, ["algorithms", "0"]),
    ({"algorithms": ["RS256", "none"]}, ["algorithms", "1"]),
    ({"algorithms": ["EdDSA"]}, ["algorithms", "0"]),
    ({"algorithms": []}, ["algorithms"]),
    ({"algorithms": "RS256"}, ["algorithms"]),
    ({"algorithms": None}, ["algorithms"]),
    ({"clockSkewSeconds": 301}, ["clockSkewSeconds"]),
    ({"clockSkewSeconds": -1}, ["clockSkewSeconds"]),
    ({"clockSkewSeconds": "5"}, ["clockSkewSeconds"]),
    ({"clockSkewSeconds": True}, ["clockSkewSeconds"]),
    ({"jwksUri": "ftp://idp.example.test/keys"}, ["jwksUri"]),
    ({"jwksUri": "/relative/keys"}, ["jwksUri"]),
    ({"jwksUri": "https://user:pw@idp.example.test/keys"}, ["jwksUri"]),
    ({"jwksUri": "https://idp.example.test/a b"}, ["jwksUri"]),
    ({"jwksUri": "https://"}, ["jwksUri"]),
    ({"jwksUri": "https://idp.example.test:99999/keys"}, ["jwksUri"]),
    ({"jwksUri": 5}, ["jwksUri"]),
    ({"jwksUri": None}, ["jwksUri"]),
    ({"discoveryUrl": "https://idp.example.test/.well-known/openid-configuration"}, ["discoveryUrl"]),
    ({"jwksUri": DROP, "discoveryUrl": "javascript:alert(1)"}, ["discoveryUrl"]),
    ({"issuer": ""}, ["issuer"]),
    ({"issuer": None}, ["issuer"]),
    ({"issuer": "svc"}, ["issuer"]),
    ({"issuer": "bad\u0000issuer"}, ["issuer"]),
    ({"issuer": "x" * 501}, ["issuer"]),
    ({"audience": []}, ["audience"]),
    ({"audience": 5}, ["audience"]),
    ({"audience": ["ok", ""]}, ["audience", "1"]),
    ({"audience": None}, ["audience"]),
    ({"claimMapping": {"nickname": "x"}}, ["claimMapping", "nickname"]),
    ({"claimMapping": {"email": ""}}, ["claimMapping", "email"]),
    ({"claimMapping": "email"}, ["claimMapping"]),
    ({"roleMapping": {"editor": {"systemKey": "root"}}}, ["roleMapping", "editor", "systemKey"]),
    ({"roleMapping": {"editor": {"roleId": "r", "systemKey": "admin"}}}, ["roleMapping", "editor"]),
    ({"roleMapping": {"editor": {}}}, ["roleMapping", "editor"]),
    ({"roleMapping": {"editor": "admin"}}, ["roleMapping", "editor"]),
    ({"roleMapping": {"editor": {"roleId": "no-such-role"}}}, ["roleMapping", "editor", "roleId"]),
    ({"roleMapping": []}, ["roleMapping"]),
    ({"defaultRoleId": "no-such-role"}, ["defaultRoleId"]),
    ({"jitProvisioning": "yes"}, ["jitProvisioning"]),
    ({"enabled": 1}, ["enabled"]),
    ({"unknown": 1}, ["unknown"]),
])
async def test_bad_config_is_422_with_path(shared_site, overrides, path):
    client, site_headers = shared_site.app.client, shared_site.site_headers
    body = issuer_body(JWKS)
    for key, value in overrides.items():
        if value is DROP:
            body.pop(key, None)
        else:
            body[key] = value
    resp = await client.post(ISSUERS, json=body, headers=site_headers)
    assert resp.status_code == 422, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "VALIDATION_FAILED" and error["path"] == path


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b"", b"null", b'"issuer"'])
async def test_body_that_is_not_an_object_is_422(client, site_headers, raw):
    resp = await client.post(ISSUERS, content=raw, headers={**site_headers, "Content-Type": "application/json"})
    assert resp.status_code == 422 and resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"


async def test_missing_key_source_is_422(client, site_headers):
    body = issuer_body(JWKS)
    del body["jwksUri"]
    resp = await client.post(ISSUERS, json=body, headers=site_headers)
    assert resp.status_code == 422 and resp.json()["errors"][0]["path"] == ["jwksUri"]


async def test_default_role_must_not_grant_admin(svc_app, client, site, site_headers):
    async with svc_app.kernel.db.connect() as conn:
        admin_role = await role_by_system_key(conn, site, "admin")
    resp = await client.post(ISSUERS, json=issuer_body(JWKS, defaultRoleId=admin_role["id"]), headers=site_headers)
    assert resp.status_code == 422 and resp.json()["errors"][0]["path"] == ["defaultRoleId"]
    powerful = await add_role(svc_app.kernel, site, "Powerful", admin=True)
    resp = await client.post(ISSUERS, json=issuer_body(JWKS, defaultRoleId=powerful), headers=site_headers)
    assert resp.status_code == 422
    viewer = await add_role(svc_app.kernel, site, "Viewer")
    assert (await create(client, site_headers, defaultRoleId=viewer))["defaultRoleId"] == viewer


async def test_duplicate_issuer_is_409(client, site_headers):
    await create(client, site_headers)
    resp = await client.post(ISSUERS, json=issuer_body(JWKS, audience="other"), headers=site_headers)
    assert resp.status_code == 409 and resp.json()["errors"][0]["code"] == "ISSUER_ALREADY_EXISTS"
    other = await create(client, site_headers, issuer="https://other.example.test/")
    resp = await client.patch(f"{ISSUERS}/{other['id']}", json={"issuer": ISSUER}, headers=site_headers)
    assert resp.status_code == 409 and resp.json()["errors"][0]["code"] == "ISSUER_ALREADY_EXISTS"


@pytest.mark.parametrize("issuer_id", ["0190c0de-0000-7000-8000-000000000000", "nope", "x" * 300, "a%00b", "%20"])
async def test_unknown_id_is_404_not_found(client, site_headers, issuer_id):
    for method, kwargs in (("GET", {}), ("PATCH", {"json": {"enabled": False}}), ("DELETE", {})):
        resp = await client.request(method, f"{ISSUERS}/{issuer_id}", headers=site_headers, **kwargs)
        assert resp.status_code == 404, (method, resp.text)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"


async def test_patch_merges_and_revalidates(client, site_headers):
    data = await create(client, site_headers, jitProvisioning=True, clockSkewSeconds=30)
    url = f"{ISSUERS}/{data['id']}"
    resp = await client.patch(url, json={"clockSkewSeconds": 120, "audience": ["x", "y"]}, headers=site_headers)
    assert resp.status_code == 200, resp.text
    patched = resp.json()["data"]
    assert patched["clockSkewSeconds"] == 120 and patched["audience"] == ["x", "y"]
    assert patched["jitProvisioning"] is True and patched["jwksUri"] == JWKS and patched["createdAt"] == data["createdAt"]
    discovery = "https://idp.example.test/.well-known/openid-configuration"
    resp = await client.patch(url, json={"discoveryUrl": discovery}, headers=site_headers)
    assert resp.status_code == 200 and resp.json()["data"]["jwksUri"] is None
    assert resp.json()["data"]["discoveryUrl"] == discovery
    for bad, path in (({"algorithms": ["HS512"]}, ["algorithms", "0"]), ({"clockSkewSeconds": 301}, ["clockSkewSeconds"]),
                      ({"discoveryUrl": None}, ["jwksUri"]), ({"issuer": None}, ["issuer"]),
                      ({"enabled": None}, ["enabled"]), ({"id": "x"}, ["id"])):
        resp = await client.patch(url, json=bad, headers=site_headers)
        assert resp.status_code == 422, (bad, resp.text)
        assert resp.json()["errors"][0]["path"] == path
    resp = await client.patch(url, json={"claimMapping": None, "enabled": False}, headers=site_headers)
    assert resp.json()["data"]["claimMapping"]["externalId"] == "sub" and resp.json()["data"]["enabled"] is False
    after = (await client.get(url, headers=site_headers)).json()["data"]
    assert after["clockSkewSeconds"] == 120 and after["algorithms"] == ["RS256", "ES256"]


async def test_delete_then_404(client, site_headers):
    data = await create(client, site_headers)
    resp = await client.delete(f"{ISSUERS}/{data['id']}", headers=site_headers)
    assert resp.status_code == 204 and resp.content == b""
    assert (await client.get(f"{ISSUERS}/{data['id']}", headers=site_headers)).status_code == 404
    assert (await client.get(ISSUERS, headers=site_headers)).json()["data"] == []


async def test_pagination(client, site_headers):
    for i in range(3):
        await create(client, site_headers, issuer=f"https://idp{i}.example.test/")
    resp = await client.get(ISSUERS, params={"limit": 2, "page": 2}, headers=site_headers)
    assert resp.status_code == 200
    assert len(resp.json()["data"]) == 1
    assert resp.json()["meta"]["total"] == 3 and resp.json()["meta"]["offset"] == 2
    for bad in ({"limit": 0}, {"limit": 201}, {"offset": -1}, {"limit": "x"}):
        resp = await client.get(ISSUERS, params=bad, headers=site_headers)
        assert resp.status_code == 422 and resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"


async def test_cross_tenant(svc_app, client, site, site_headers, admin_headers, make_member):
    other = unique("iss-b")
    resp = await client.post("/api/v1/sites", json={"id": other, "name": "B"}, headers=admin_headers)
    assert resp.status_code == 201
    b_headers = {**admin_headers, "X-Svc-Site": other}
    theirs = await create(client, b_headers)
    ours = await create(client, site_headers)  # the same issuer may be trusted by both sites
    admin_a = await make_member(site, role="admin")
    token = await svc_app.login(admin_a.email, admin_a.password, site=site)
    a_headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": site}
    listed = (await client.get(ISSUERS, headers=a_headers)).json()["data"]
    assert [i["id"] for i in listed] == [ours["id"]]
    url = f"{ISSUERS}/{theirs['id']}"
    assert (await client.get(url, headers=a_headers)).status_code == 404
    assert (await client.patch(url, json={"enabled": False}, headers=a_headers)).status_code == 404
    assert (await client.delete(url, headers=a_headers)).status_code == 404
    # Naming site B with a site-A login: not an admin there.
    b_as_a = {**a_headers, "X-Svc-Site": other}
    assert (await client.get(url, headers=b_as_a)).status_code == 401
    # Site B's issuer is untouched; even the instance admin addressing site A cannot reach it.
    assert (await client.get(url, headers=site_headers)).status_code == 404
    assert (await client.get(url, headers=b_headers)).json()["data"]["enabled"] is True
    # A role of site B cannot be mapped in site A.
    b_role = await add_role(svc_app.kernel, other, "Editor B")
    resp = await client.post(ISSUERS, json=issuer_body(JWKS, issuer="https://x.test/",
                                                       roleMapping={"e": {"roleId": b_role}}), headers=site_headers)
    assert resp.status_code == 422 and resp.json()["errors"][0]["path"] == ["roleMapping", "e", "roleId"]


async def test_non_admin_is_403_and_anonymous_401(svc_app, client, site, make_member):
    member = await make_member(site, role="subscriber")
    token = await svc_app.login(member.email, member.password, site=site)
    headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": site}
    assert (await client.get(ISSUERS, headers=headers)).status_code == 403
    resp = await client.post(ISSUERS, json=issuer_body(JWKS), headers=headers)
    assert resp.status_code == 403 and resp.json()["errors"][0]["code"] == "PERMISSION_DENIED"
    assert (await client.get(ISSUERS, headers={"X-Svc-Site": site})).status_code == 401


async def test_site_is_required(client, admin_headers):
    resp = await client.get(ISSUERS, headers=admin_headers)
    assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["headers", "X-Svc-Site"]
