"""Singletons: GET /items/{c} is the one item (defaults before the first write), PATCH upserts."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


async def test_singleton_lifecycle(calls: Calls):
    await calls.collection("settings_page", {"title": {"type": "string", "options": {"default": "Home"}},
                                             "motto": "string"}, singleton=True)
    empty = await calls.ok("get", "/items/settings_page", full=True)
    assert empty["data"]["id"] is None and empty["data"]["title"] == "Home" and "meta" not in empty
    created = await calls.ok("patch", "/items/settings_page", json={"motto": "hi"})
    assert created["id"] and created["motto"] == "hi" and created["title"] == "Home"
    updated = await calls.ok("patch", "/items/settings_page", json={"title": "Start"})
    assert updated["id"] == created["id"] and updated["motto"] == "hi" and updated["title"] == "Start"
    assert (await calls.ok("get", "/items/settings_page"))["title"] == "Start"
    assert (await calls.get("settings_page", created["id"]))["title"] == "Start"
    await calls.err("post", "/items/settings_page", 409, "CONFLICT", json={"motto": "again"})
    await calls.err("post", "/items/settings_page", 400, "VALIDATION_FAILED", ["body"], json=[{"motto": "x"}])
    await calls.ok("delete", f"/items/settings_page/{created['id']}", status=204)
    assert (await calls.ok("get", "/items/settings_page"))["id"] is None
    again = await calls.create("settings_page", {"motto": "fresh"})
    assert again["id"] != created["id"]


async def test_patch_on_a_collection_path_needs_a_singleton(calls: Calls):
    await calls.collection("plain", {"a": "string"})
    await calls.err("patch", "/items/plain", 405, "METHOD_NOT_ALLOWED", json={"a": "x"})


async def test_singleton_validates_like_create(calls: Calls):
    await calls.collection("cfg", {"must": {"type": "string", "required": True}}, singleton=True)
    await calls.err("patch", "/items/cfg", 400, "VALIDATION_FAILED", ["must"], json={})
    item = await calls.ok("patch", "/items/cfg", json={"must": "x"})
    assert item["must"] == "x"
    await calls.ok("patch", "/items/cfg", json={})  # an update needs nothing more
