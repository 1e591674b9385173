"""``POST /extensions/upload?replace=true`` upgrades an installed extension in place: same id,
still enabled in its sites, the new code answering at once; grants the new manifest no longer
asks for are dropped; bytes that cannot load disable it in its sites with the error; without
``replace`` the same name is 409, and with it a new name is created; another site's state is
untouched."""

from __future__ import annotations

from extension_bundles import ENV, ROUTE_CODE, enable, install, signed, upload, write_extension

from kernel.testing import Calls

PONG_TWO = ROUTE_CODE.replace('{"pong": True}', '{"pong": 2}')


async def test_upload_with_replace_upgrades_in_place(make_app, tmp_path):
    app = await make_app(env=ENV)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site_a, site_b = await app.create_site(admin), await app.create_site(admin, prefix="b")
    calls = Calls(app.client, {**admin, "X-Svc-Site": site_a})
    calls_b = Calls(app.client, {**admin, "X-Svc-Site": site_b})
    v1 = write_extension(tmp_path, "up-ext", ROUTE_CODE.replace("NAME", "up-ext"), ["routes", "flows"])
    ext = await install(app.client, admin, v1)
    await enable(calls, ext["id"], ["routes", "flows"])
    assert await calls.ok("get", "/ext/up-ext/ping") == {"pong": True}

    v2 = write_extension(tmp_path, "up-ext", PONG_TWO.replace("NAME", "up-ext"), ["routes"], version="1.1.0")
    bundle, signature = signed(v2)
    refused = await upload(app.client, admin, bundle, signature)
    assert (refused.status_code, refused.json()["errors"][0]["code"]) == (409, "EXTENSION_EXISTS")
    assert await calls.ok("get", "/ext/up-ext/ping") == {"pong": True}

    resp = await app.client.post("/api/v1/extensions/upload?replace=true", headers=admin,
                                 files={"bundle": ("ext.zip", bundle, "application/zip")},
                                 data={"signature": signature})
    assert resp.status_code == 200, resp.text
    assert (resp.json()["data"]["id"], resp.json()["data"]["version"]) == (ext["id"], "1.1.0")
    after = await calls.ok("get", f"/extensions/{ext['id']}")
    assert after["site"] == {"enabled": True, "grantedCapabilities": ["routes"], "failures": 0,
                             "disabledReason": None, "available": False, "maxCapabilities": []}
    assert await calls.ok("get", "/ext/up-ext/ping") == {"pong": 2}
    await calls_b.err("get", "/ext/up-ext/ping", 404, "NOT_FOUND")
    assert (await calls_b.ok("get", f"/extensions/{ext['id']}"))["site"]["enabled"] is False

    # Bytes that cannot load: stored, and disabled where they ran, saying why.
    broken = write_extension(tmp_path, "up-ext", "raise RuntimeError('boom')\n", ["routes"], version="1.2.0")
    bundle, signature = signed(broken)
    resp = await app.client.post("/api/v1/extensions/upload", params={"replace": "true"}, headers=admin,
                                 files={"bundle": ("ext.zip", bundle, "application/zip")},
                                 data={"signature": signature})
    assert resp.status_code == 200, resp.text
    site = (await calls.ok("get", f"/extensions/{ext['id']}"))["site"]
    assert site["enabled"] is False
    assert site["disabledReason"].startswith("load failed after the upgrade to 1.2.0:")
    assert "boom" in site["disabledReason"]
    await calls.err("get", "/ext/up-ext/ping", 404, "NOT_FOUND")
    await calls.err("post", f"/extensions/{ext['id']}/enable", 422, "EXTENSION_LOAD_FAILED")


    # replace is a boolean; with it, a name not installed yet is created (201).
    bundle, signature = signed(write_extension(tmp_path, "new-ext", ROUTE_CODE.replace("NAME", "new-ext"),
                                               ["routes"]))
    files = {"bundle": ("ext.zip", bundle, "application/zip")}
    resp = await app.client.post("/api/v1/extensions/upload?replace=maybe", headers=admin, files=files,
                                 data={"signature": signature})
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (400, "VALIDATION_FAILED")
    assert resp.json()["errors"][0]["path"] == ["query", "replace"]
    resp = await app.client.post("/api/v1/extensions/upload?replace=true", headers=admin, files=files,
                                 data={"signature": signature})
    assert resp.status_code == 201, resp.text
