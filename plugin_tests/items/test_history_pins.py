"""Pins: a holder's lock on one field. Other writers changing it get 409 CONFLICT with
``extensions.pinnedBy``; the holder writes freely; release by holder or admin; expiry."""

from __future__ import annotations

import datetime as dt

from kernel.db.meta import now_utc
from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugins.items.tables import pins as pins_table

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

P = "/items/notes/a/pins"
RULES = [{"collection": "notes", "action": a} for a in ("read", "update")]


async def _notes(calls: Calls) -> None:
    await calls.collection("notes", {"title": "string", "n": "integer", "secret": "string"}, versioning=True)
    await calls.create("notes", {"id": "a", "title": "one", "n": 1})


def _soon(seconds: int = 3600) -> str:
    return (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)).isoformat()


async def test_a_pin_blocks_other_writers_not_its_holder(calls: Calls, member):
    await _notes(calls)
    editor, editor_id = await member(RULES)
    other, _ = await member(RULES)
    pin = await editor.ok("post", P, status=201, json={"field": "title", "reason": "legal review"})
    assert pin["field"] == "title" and pin["pinnedBy"] == {"kind": "user", "id": editor_id}
    assert pin["reason"] == "legal review" and pin["expiresAt"] is None and pin["createdAt"]
    err = await other.err("patch", "/items/notes/a", 409, "CONFLICT", ["title"], json={"title": "x"})
    assert err["extensions"]["pinnedBy"] == {"kind": "user", "id": editor_id}
    await calls.err("put", "/items/notes/a", 409, "CONFLICT", json={"title": "admin too"})
    # Other fields, and the same value, are fine.
    await other.ok("patch", "/items/notes/a", json={"n": 2, "title": "one"})
    assert (await editor.ok("patch", "/items/notes/a", json={"title": "mine"}))["title"] == "mine"
    assert len(await calls.ok("get", "/items/notes/a/revisions")) == 3  # the refused writes left none
    assert await other.ok("get", P) == [pin]
    assert await other.ok("get", f"{P}/title") == pin


async def test_revert_and_promote_meet_pins_too(calls: Calls, member):
    await _notes(calls)
    await calls.ok("patch", "/items/notes/a", json={"title": "two"})
    first = (await calls.ok("get", "/items/notes/a/revisions"))[-1]
    await calls.ok("post", "/items/notes/a/versions", status=201, json={"key": "v"})
    await calls.ok("patch", "/items/notes/a/versions/v", json={"data": {"title": "three"}})
    editor, _ = await member(RULES)
    await editor.ok("post", P, status=201, json={"field": "title"})
    await calls.err("post", "/items/notes/a/revert", 409, "CONFLICT", json={"revisionId": first["id"]})
    await calls.err("post", "/items/notes/a/versions/v/promote", 409, "CONFLICT")
    assert (await calls.get("notes", "a"))["title"] == "two"
    # Versions themselves are not main: editing them is not blocked.
    await calls.ok("patch", "/items/notes/a/versions/v", json={"data": {"title": "four"}})


async def test_release_by_holder_or_admin_only(calls: Calls, member):
    await _notes(calls)
    editor, _ = await member(RULES)
    other, _ = await member(RULES)
    await editor.ok("post", P, status=201, json={"field": "title"})
    err = await other.err("delete", f"{P}/title", 403, "PERMISSION_DENIED")
    assert err["extensions"]["reason"] == "not_pin_holder"
    await editor.ok("delete", f"{P}/title", status=204)
    await editor.err("delete", f"{P}/title", 404, "NOT_FOUND")
    await other.ok("patch", "/items/notes/a", json={"title": "free"})
    await editor.ok("post", P, status=201, json={"field": "n"})
    await calls.ok("delete", f"{P}/n", status=204)  # a site admin may release anyone's pin
    assert await calls.ok("get", P) == []


async def test_taken_pins_and_renewal(calls: Calls, member):
    await _notes(calls)
    editor, editor_id = await member(RULES)
    other, _ = await member(RULES)
    await editor.ok("post", P, status=201, json={"field": "title"})
    err = await other.err("post", P, 409, "CONFLICT", json={"field": "title"})
    assert err["extensions"]["pinnedBy"]["id"] == editor_id
    renewed = await editor.ok("post", P, status=201, json={"field": "title", "reason": "again",
                                                          "expiresAt": _soon()})
    assert renewed["reason"] == "again" and renewed["expiresAt"]


async def test_expired_pins_lapse(svc_app, site, calls: Calls, member):
    await _notes(calls)
    editor, _ = await member(RULES)
    other, other_id = await member(RULES)
    await editor.ok("post", P, status=201, json={"field": "title", "expiresAt": _soon(60)})
    async with svc_app.kernel.db.begin() as conn:  # let it expire without waiting a minute
        await conn.execute(pins_table.update().where(pins_table.c.site_id == site)
                           .values(expires_at=now_utc() - dt.timedelta(seconds=1)))
    assert await calls.ok("get", P) == []
    await calls.err("get", f"{P}/title", 404, "NOT_FOUND")
    await other.ok("patch", "/items/notes/a", json={"title": "after expiry"})
    taken = await other.ok("post", P, status=201, json={"field": "title"})
    assert taken["pinnedBy"]["id"] == other_id


async def test_api_keys_hold_pins_and_anonymous_cannot(svc_app, site, calls: Calls, public_grant, anon_calls):
    await _notes(calls)
    roles = await calls.ok("get", "/roles")
    admin_role = next(r for r in roles if r.get("systemKey") == "admin")
    key = await calls.ok("post", "/api-keys", status=201, json={"name": "bot", "roleId": admin_role["id"]})
    bot = Calls(svc_app.client, {"Authorization": f"Bearer {key['key']}", "X-Svc-Site": site})
    pin = await bot.ok("post", P, status=201, json={"field": "n"})
    assert pin["pinnedBy"] == {"kind": "api_key", "id": key["id"]}
    await bot.ok("patch", "/items/notes/a", json={"n": 5})
    await calls.err("patch", "/items/notes/a", 409, "CONFLICT", json={"n": 6})
    await public_grant(RULES)
    await anon_calls.err("post", P, 401, "UNAUTHENTICATED", json={"field": "title"})


async def test_permissions_and_field_policy(calls: Calls, member):
    await _notes(calls)
    reader, _ = await member([{"collection": "notes", "action": "read", "fields": ["title"]}])
    await reader.err("post", P, 403, "PERMISSION_DENIED", json={"field": "title"})
    limited, _ = await member([{"collection": "notes", "action": "read"},
                               {"collection": "notes", "action": "update", "fields": ["n"]}])
    err = await limited.err("post", P, 403, "PERMISSION_DENIED", json={"field": "title"})
    assert err["extensions"]["reason"] == "field_policy"
    await limited.ok("post", P, status=201, json={"field": "n"})
    await calls.ok("post", P, status=201, json={"field": "secret"})
    # The reader sees pins on fields it may read only.
    assert [p["field"] for p in await reader.ok("get", P)] == []
    await reader.err("get", f"{P}/secret", 404, "NOT_FOUND")
    assert [p["field"] for p in await calls.ok("get", P)] == ["n", "secret"]
    nobody, _ = await member([])
    await nobody.err("get", P, 403, "PERMISSION_DENIED")
    await nobody.err("delete", f"{P}/n", 403, "PERMISSION_DENIED")


async def test_bad_input(calls: Calls):
    await _notes(calls)
    for body, path in (({"field": "ghost"}, ["field"]), ({"field": "id"}, ["field"]), ({"field": 3}, ["field"]),
                       ({}, ["field"]), ({"field": "title", "reason": 5}, ["reason"]),
                       ({"field": "title", "reason": "r" * 501}, ["reason"]),
                       ({"field": "title", "expiresAt": "tomorrow"}, ["expiresAt"]),
                       ({"field": "title", "expiresAt": "2001-01-01T00:00:00Z"}, ["expiresAt"]),
                       ({"field": "title", "expiresAt": 123}, ["expiresAt"]),
                       ({"field": "title", "expiresAt": "9999-12-31T23:59:59-14:00"}, ["expiresAt"]),
                       ({"field": "title", "holder": "x"}, ["holder"])):
        await calls.err("post", P, 400, "VALIDATION_FAILED", path, json=body)
    await calls.err("post", P, 400, "VALIDATION_FAILED", json=["title"])
    await calls.err("get", f"{P}/ghost", 404, "NOT_FOUND")
    await calls.err("delete", f"{P}/title", 404, "NOT_FOUND")
    await calls.err("get", "/items/notes/zzz/pins", 404, "RECORD_NOT_FOUND")
    await calls.err("post", "/items/notes/zzz/pins", 404, "RECORD_NOT_FOUND", json={"field": "title"})


async def test_server_code_pins_and_writes_as_a_release(svc_app, site, calls: Calls):
    from kernel.auth.principal import Principal
    from plugins.items.history import pins
    from plugins.items.service import acting_context, update_item

    await _notes(calls)
    ctx = acting_context(svc_app.kernel, site, Principal(kind="user", is_instance_admin=True))
    pin = await pins.create_pin(ctx, "notes", "a", {"field": "title", "reason": "release r1"},
                                holder=("release", "r1"))
    assert pin["pinnedBy"] == {"kind": "release", "id": "r1"}
    err = await calls.err("patch", "/items/notes/a", 409, "CONFLICT", json={"title": "x"})
    assert err["extensions"]["pinnedBy"] == {"kind": "release", "id": "r1"}
    assert (await update_item(ctx, "notes", "a", {"title": "published"}, cause="release:r1"))["title"] == "published"
    err = await calls.err("patch", "/items/notes/a", 409, "CONFLICT", json={"title": "y"})
    await calls.ok("delete", f"{P}/title", status=204)
