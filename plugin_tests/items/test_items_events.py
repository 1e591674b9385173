"""Item events: filters inside the transaction (modify, veto), actions after commit."""

from __future__ import annotations

from kernel import ApiError
from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


async def test_actions_carry_before_and_after(calls: Calls, recorder):
    await calls.collection("docs", {"title": "string"})
    item = await calls.create("docs", {"id": "d1", "title": "a"})
    await calls.ok("patch", "/items/docs/d1", json={"title": "b"})
    await calls.ok("delete", "/items/docs/d1", status=204)
    names = [e for e, _, _ in recorder.events]
    assert names == ["items.create", "docs.items.create", "items.update", "docs.items.update",
                     "items.delete", "docs.items.delete"]
    created, updated, deleted = (recorder.named(f"items.{op}")[0] for op in ("create", "update", "delete"))
    assert created["after"] == item and "before" not in created and created["collection"] == "docs"
    assert updated["before"]["title"] == "a" and updated["after"]["title"] == "b" and updated["id"] == "d1"
    assert deleted["before"]["title"] == "b" and "after" not in deleted
    assert created["siteId"] and created["principal"]["kind"] == "user"


async def test_filter_modifies_incoming_data(calls: Calls, svc_app):
    await calls.collection("docs", {"title": "string", "slug": "slug"})

    def add_slug(event, payload, ctx):
        assert ctx.conn is not None  # inside the write's transaction
        after = dict(payload["after"])
        after["slug"] = after["title"].lower().replace(" ", "-")
        return {**payload, "after": after}

    off = svc_app.kernel.bus.on_filter("docs.items.create", add_slug)
    try:
        item = await calls.create("docs", {"title": "Hello World"})
    finally:
        off()
    assert item["slug"] == "hello-world"
    assert (await calls.get("docs", item["id"]))["slug"] == "hello-world"


async def test_filter_output_is_validated(calls: Calls, svc_app):
    await calls.collection("docs", {"n": "integer"})

    def corrupt(event, payload, ctx):
        payload["after"]["n"] = "not a number"

    off = svc_app.kernel.bus.on_filter("items.update", corrupt)
    try:
        item = await calls.create("docs", {"n": 1})
        await calls.err("patch", f"/items/docs/{item['id']}", 400, "VALIDATION_FAILED", ["n"], json={"n": 2})
    finally:
        off()
    assert (await calls.get("docs", item["id"]))["n"] == 1


async def test_veto_rolls_back_the_whole_request(calls: Calls, svc_app, recorder):
    await calls.collection("docs", {"title": "string"})
    await calls.create("docs", {"id": "keep", "title": "x"})

    def veto(event, payload, ctx):
        if (payload.get("after") or payload.get("before") or {}).get("title") == "forbidden":
            raise ApiError(409, "CONFLICT", "vetoed by a test")

    off = svc_app.kernel.bus.on_filter("items.*", veto)
    try:
        await calls.err("post", "/items/docs", 409, "CONFLICT", json=[{"title": "ok"}, {"title": "forbidden"}])
        await calls.err("patch", "/items/docs/keep", 409, "CONFLICT", json={"title": "forbidden"})
    finally:
        off()
    assert [i["id"] for i in (await calls.list("docs"))["data"]] == ["keep"]
    assert (await calls.get("docs", "keep"))["title"] == "x"
    assert [p["id"] for p in recorder.named("items.create")] == ["keep"] and recorder.named("items.update") == []


async def test_delete_veto_keeps_cascade_undone(calls: Calls, svc_app):
    await calls.collection("owners", {"n": "string"})
    await calls.collection("pets", {"owner": "string"})
    await calls.relation(type="m2o", collection="pets", field="owner", relatedCollection="owners",
                         onDelete="cascade")
    await calls.create("owners", {"id": "o"})
    await calls.create("pets", {"id": "p", "owner": "o"})

    def protect_pets(event, payload, ctx):
        raise ApiError(409, "CONFLICT", "pets stay")

    off = svc_app.kernel.bus.on_filter("pets.items.delete", protect_pets)
    try:
        await calls.err("delete", "/items/owners/o", 409, "CONFLICT")
    finally:
        off()
    assert (await calls.get("owners", "o"))["id"] == "o" and (await calls.get("pets", "p"))["owner"] == "o"
