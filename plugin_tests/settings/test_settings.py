"""``/settings``: undeclared and declared keys, who reads what, the cache every worker drops,
bad input, and site B never seeing site A's settings."""

from __future__ import annotations

import asyncio

from kernel.testing import shared as testing_shared
from plugins.settings import store
from plugins.settings.api import get_setting

# Every test but two writes and reads in sites of its own: they share the module's app (conftest.py's
# ``shared_site``, with the settings tests' settings), each in new sites of it
# (kernel/testing/shared.py); the demo keys are registered for one test at a time. The key cap's
# test changes an instance setting and the Redis test needs two workers: apps of their own.
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def test_read_write_and_unset(calls, calls_b, site, svc_app, demo_keys):
    assert await calls.ok("get", "/settings") == {}
    assert await calls.ok("put", "/settings/theme.color", json={"value": {"a": [1, 2]}}) == \
        {"key": "theme.color", "value": {"a": [1, 2]}}
    patched = await calls.ok("patch", "/settings", json={"demo_limit": 5, "demo.main": [" home ", "blog"],
                                                          "flag": False})
    assert patched == {"theme.color": {"a": [1, 2]}, "demo_limit": 5, "demo.main": ["home", "blog"], "flag": False}
    assert await calls.ok("get", "/settings/flag") == {"key": "flag", "value": False}
    assert await get_setting(svc_app.kernel, site, "demo.main") == ["home", "blog"]
    # null unsets; an unset key is 404 and get_setting falls back to its default.
    assert await calls.ok("patch", "/settings", json={"flag": None}) == \
        {"theme.color": {"a": [1, 2]}, "demo_limit": 5, "demo.main": ["home", "blog"]}
    await calls.err("get", "/settings/flag", 404, "RECORD_NOT_FOUND")
    assert await get_setting(svc_app.kernel, site, "flag", "dflt") == "dflt"
    assert await calls.ok("put", "/settings/demo_limit", json={"value": None}) == {"key": "demo_limit", "value": None}
    # Site B sees, reads and counts nothing of A's, and its writes stay in B.
    assert await calls_b.ok("get", "/settings") == {}
    await calls_b.err("get", "/settings/theme.color", 404, "RECORD_NOT_FOUND")
    await calls_b.ok("put", "/settings/theme.color", json={"value": "b"})
    assert (await calls.ok("get", "/settings/theme.color"))["value"] == {"a": [1, 2]}
    assert await calls_b.ok("post", "/settings/export") | {"exportedAt": None} == \
        {"version": "svc.settings@v1", "exportedAt": None, "settings": {"theme.color": "b"}}


async def test_declared_keys_are_validated_by_their_owner(calls, demo_keys):
    err = await calls.err("put", "/settings/demo_limit", 400, "VALIDATION_FAILED", path_is=["demo_limit"],
                          json={"value": 0})
    assert "demo_limit" in err["message"] and "positive integer" in err["message"]
    await calls.err("put", "/settings/demo_limit", 400, "VALIDATION_FAILED", json={"value": True})
    await calls.err("put", "/settings/demo.x", 400, "VALIDATION_FAILED", path_is=["demo.x"], json={"value": [1]})
    # One bad key in a PATCH writes nothing.
    await calls.err("patch", "/settings", 400, "VALIDATION_FAILED", path_is=["demo_limit"],
                    json={"ok": 1, "demo_limit": "x"})
    assert await calls.ok("get", "/settings") == {}
    # The bare prefix is no key of the prefix's owner: it is stored as plain JSON.
    await calls.ok("put", "/settings/demo.", json={"value": 3})


async def test_bad_input(make_app):
    svc_app, [calls] = await testing_shared.own_app(make_app)  # it lowers the instance's key cap
    for key in ("bad%20key", "x" * 101, "sp@ce"):
        await calls.err("put", f"/settings/{key}", 400, "VALIDATION_FAILED", json={"value": 1})
        await calls.err("get", f"/settings/{key}", 400, "VALIDATION_FAILED")
    await calls.err("patch", "/settings", 400, "VALIDATION_FAILED", path_is=["a b"], json={"a b": 1})
    await calls.err("patch", "/settings", 400, "VALIDATION_FAILED", path_is=["export"], json={"export": 1})
    await calls.err("patch", "/settings", 400, "VALIDATION_FAILED", json=[1])
    await calls.err("patch", "/settings", 400, "VALIDATION_FAILED", content=b"{not json")
    await calls.err("put", "/settings/k", 400, "VALIDATION_FAILED", path_is=["value"], json={})
    await calls.err("put", "/settings/k", 400, "VALIDATION_FAILED", path_is=["other"], json={"value": 1, "other": 2})
    await calls.err("put", "/settings/k", 400, "VALIDATION_FAILED", json={"value": "x" * 70_000})
    await calls.err("put", "/settings/export", 405)
    svc_app.kernel.settings.values["settings_max_keys"] = 2
    await calls.ok("patch", "/settings", json={"a": 1, "b": 2})
    await calls.err("put", "/settings/c", 400, "VALIDATION_FAILED", json={"value": 3})
    await calls.ok("put", "/settings/b", json={"value": 4})  # an update needs no room


async def test_who_reads_what(calls, site, make_member, demo_keys):
    await calls.ok("patch", "/settings", json={"demo.main": ["a"], "private": 1, "demo_token": "tok-123"})
    member = await make_member(site, "subscriber")
    headers = {"headers": member.headers}
    assert await calls.ok("get", "/settings", **headers) == {"demo.main": ["a"]}
    assert await calls.ok("get", "/settings/demo.main", **headers) == {"key": "demo.main", "value": ["a"]}
    await calls.err("get", "/settings/private", 403, "PERMISSION_DENIED", **headers)
    await calls.err("get", "/settings/nothing", 403, "PERMISSION_DENIED", **headers)
    await calls.err("put", "/settings/demo.main", 403, "PERMISSION_DENIED", json={"value": []}, **headers)
    await calls.err("patch", "/settings", 403, "PERMISSION_DENIED", json={}, **headers)
    await calls.err("post", "/settings/export", 403, "PERMISSION_DENIED", **headers)
    await calls.err("get", "/settings", 401, "UNAUTHENTICATED", headers={"Authorization": ""})


async def test_secret_keys_are_sealed_never_shown_nor_exported(calls, calls_b, site, svc_app, demo_keys):
    assert await calls.ok("put", "/settings/demo_token", json={"value": "tok-123"}) == \
        {"key": "demo_token", "value": {"hasSecret": True}}
    assert (await calls.ok("get", "/settings"))["demo_token"] == {"hasSecret": True}
    assert await get_setting(svc_app.kernel, site, "demo_token") == "tok-123"
    async with svc_app.kernel.db.connect() as conn:
        from kernel.tenancy.scope import SiteDB

        db = SiteDB(site, conn)
        row = await db.one(db.select(store.settings).where(store.settings.c.key == "demo_token"))
    assert row["value"] is None and "tok-123" not in row["sealed"]
    await calls.ok("put", "/settings/plain", json={"value": 1})
    bundle = await calls.ok("post", "/settings/export")
    assert bundle["settings"] == {"plain": 1} and "tok-123" not in repr(bundle)


async def test_export_apply_round_trip(calls, calls_b, demo_keys):
    await calls.ok("patch", "/settings", json={"demo.main": ["a"], "x": {"deep": [1]}, "n": 3})
    bundle = await calls.ok("post", "/settings/export")
    await calls_b.ok("put", "/settings/only_b", json={"value": True})
    assert await calls_b.ok("post", "/settings/apply", json=bundle) == {"applied": ["demo.main", "n", "x"],
                                                                        "removed": []}
    assert await calls_b.ok("get", "/settings") == {"demo.main": ["a"], "x": {"deep": [1]}, "n": 3, "only_b": True}
    assert await calls_b.ok("post", "/settings/apply", params={"mode": "replace"}, json=bundle) == \
        {"applied": ["demo.main", "n", "x"], "removed": ["only_b"]}
    assert await calls_b.ok("get", "/settings") == bundle["settings"]
    # Bad bundles write nothing.
    for body, path in (({"settings": []}, ["settings"]), ({"version": "v9", "settings": {}}, ["version"]),
                       ({"settings": {}, "extra": 1}, ["extra"]),
                       ({"settings": {"demo.main": "no", "fine": 1}}, ["demo.main"])):
        await calls_b.err("post", "/settings/apply", 400, "VALIDATION_FAILED", path_is=path, json=body)
    await calls_b.err("post", "/settings/apply", 400, "VALIDATION_FAILED", path_is=["mode"],
                      params={"mode": "all"}, json=bundle)
    assert "fine" not in await calls_b.ok("get", "/settings")
    assert await calls.ok("get", "/settings") == bundle["settings"]  # A untouched


async def test_a_change_drops_the_cached_value(calls, site, svc_app, recorder):
    kernel = svc_app.kernel
    cache = kernel.site_caches["settings"]
    cache.ttl = 3600.0
    assert await get_setting(kernel, site, "k") is None
    await calls.ok("put", "/settings/k", json={"value": 1})
    assert await get_setting(kernel, site, "k") == 1
    assert cache.contains(site, "k")
    await calls.ok("put", "/settings/k", json={"value": 2})
    assert await get_setting(kernel, site, "k") == 2
    assert recorder.named("settings.changed")[-1] == {"siteId": site, "keys": ["k"]}


async def test_another_worker_hears_the_change_through_redis(make_app, tmp_path, redis_url):
    one = await make_app(data_dir=tmp_path / "shared", redis_url=redis_url)
    two = await make_app(data_dir=tmp_path / "shared", redis_url=redis_url)
    two.kernel.site_caches["settings"].ttl = 3600.0  # only the bus can make it fresh
    headers = {"Authorization": f"Bearer {await one.login()}", "X-Svc-Site": "default"}
    put = await one.client.put("/api/v1/settings/k", json={"value": 1}, headers=headers)
    assert put.status_code == 200
    assert await get_setting(two.kernel, "default", "k") == 1
    heard = asyncio.Event()
    two.kernel.bus.on_action("settings.changed", lambda e, p, c: heard.set() if c.remote else None)
    await one.client.put("/api/v1/settings/k", json={"value": 2}, headers=headers)
    await asyncio.wait_for(heard.wait(), 5)
    assert await get_setting(two.kernel, "default", "k") == 2
