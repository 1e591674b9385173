"""Sites: instance-admin CRUD, validation, default site, deletion reaches every plugin."""

from __future__ import annotations

import pytest


async def test_default_site_exists_on_first_start(client, admin_headers):
    resp = await client.get("/api/v1/sites", headers=admin_headers)
    assert resp.status_code == 200
    ids = [s["id"] for s in resp.json()["data"]]
    assert "default" in ids
    assert resp.json()["meta"]["total"] == len(ids)


async def test_site_crud(client, admin_headers):
    resp = await client.post("/api/v1/sites", json={"id": "shop", "name": "Shop"}, headers=admin_headers)
    assert resp.status_code == 201
    site = resp.json()["data"]
    assert site["id"] == "shop" and site["name"] == "Shop" and site["createdAt"].endswith("Z")

    resp = await client.get("/api/v1/sites/shop", headers=admin_headers)
    assert resp.json()["data"]["name"] == "Shop"

    resp = await client.patch("/api/v1/sites/shop", json={"name": "The Shop"}, headers=admin_headers)
    assert resp.status_code == 200 and resp.json()["data"]["name"] == "The Shop"

    resp = await client.delete("/api/v1/sites/shop", headers=admin_headers)
    assert resp.status_code == 204
    assert resp.content == b""
    assert "content-type" not in resp.headers

    resp = await client.get("/api/v1/sites/shop", headers=admin_headers)
    assert resp.status_code == 404 and resp.json()["errors"][0]["code"] == "SITE_NOT_FOUND"
    resp = await client.get("/api/v1/auth/me", headers={**admin_headers, "X-Svc-Site": "shop"})
    assert resp.json()["errors"][0]["code"] == "SITE_NOT_FOUND"


async def test_duplicate_site_is_conflict(client, admin_headers, site):
    resp = await client.post("/api/v1/sites", json={"id": site}, headers=admin_headers)
    assert resp.status_code == 409
    assert resp.json()["errors"][0]["code"] == "CONFLICT"


@pytest.mark.parametrize("bad", ["", "Upper", "-lead", "a" * 64, "has space", "../x", "a/b", 5, None, "ü"])
async def test_bad_site_ids_are_rejected(shared_site, bad):
    resp = await shared_site.app.client.post("/api/v1/sites", json={"id": bad, "name": "x"},
                                             headers=shared_site.admin_headers)
    assert resp.status_code == 400
    err = resp.json()["errors"][0]
    assert err["code"] == "VALIDATION_FAILED" and err["path"] == ["id"]


async def test_unknown_keys_are_rejected(client, admin_headers):
    resp = await client.post("/api/v1/sites", json={"id": "ok", "owner": "me"}, headers=admin_headers)
    assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["owner"]


async def test_bad_name_is_rejected(client, admin_headers, site):
    resp = await client.patch(f"/api/v1/sites/{site}", json={"name": ""}, headers=admin_headers)
    assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["name"]
    resp = await client.patch(f"/api/v1/sites/{site}", json={"name": ["x"]}, headers=admin_headers)
    assert resp.status_code == 400


async def test_sites_need_the_instance_admin(client):
    for method, path in [("GET", "/api/v1/sites"), ("POST", "/api/v1/sites"), ("GET", "/api/v1/sites/default"),
                         ("PATCH", "/api/v1/sites/default"), ("DELETE", "/api/v1/sites/default")]:
        resp = await client.request(method, path, json={} if method in ("POST", "PATCH") else None)
        assert resp.status_code == 401, (method, path)
        assert resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"


async def test_list_pagination(client, admin_headers):
    for i in range(3):
        await client.post("/api/v1/sites", json={"id": f"p{i}"}, headers=admin_headers)
    resp = await client.get("/api/v1/sites?limit=2&page=2", headers=admin_headers)
    body = resp.json()
    assert len(body["data"]) == 2 and body["meta"]["offset"] == 2
    resp = await client.get("/api/v1/sites?limit=0", headers=admin_headers)
    assert resp.status_code == 400
    resp = await client.get("/api/v1/sites?limit=abc", headers=admin_headers)
    assert resp.status_code == 400


async def test_delete_site_calls_site_deleted_hooks(svc_app, admin_headers, site, temporary_plugin):
    from kernel import hookimpl

    seen = []

    class Recorder:
        @hookimpl
        def site_deleted(self, kernel, site_id, conn):
            seen.append(site_id)

    with temporary_plugin(svc_app.kernel, Recorder()):
        resp = await svc_app.client.delete(f"/api/v1/sites/{site}", headers=admin_headers)
    assert resp.status_code == 204
    assert seen == [site]


async def test_a_vetoing_site_created_hook_rolls_back(svc_app, admin_headers, temporary_plugin):
    from kernel import ApiError, hookimpl

    class Veto:
        @hookimpl
        async def site_created(self, kernel, site, conn):
            raise ApiError.validation("vetoed", path=["id"])

    with temporary_plugin(svc_app.kernel, Veto()):
        resp = await svc_app.client.post("/api/v1/sites", json={"id": "vetoed"}, headers=admin_headers)
    assert resp.status_code == 400
    resp = await svc_app.client.get("/api/v1/sites/vetoed", headers=admin_headers)
    assert resp.status_code == 404
