"""Revisions: written with every update (revert and promote too) in the write's transaction,
with who, when, the delta and the snapshot (an item's first update records its created state
first); staged revisions; revert."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import func, select

from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugins.access import api as access_api
from plugins.items.tables import revisions as revisions_table

FIELDS = {"title": "string", "body": "text", "n": "integer", "secret": "string"}

# Every test writes and reads in a site of its own: they share the module's app (``shared_site``),
# each in a new site of it (kernel/testing/shared.py: the harness's ``calls``, ``make_member`` and
# the items ``member`` go through these).

svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


async def _notes(calls: Calls, **meta) -> dict:
    await calls.collection("notes", FIELDS, **meta)
    return await calls.create("notes", {"id": "a", "title": "one", "n": 1})


async def _revs(calls: Calls, item: str = "a", **params) -> list[dict]:
    return await calls.ok("get", f"/items/notes/{item}/revisions", params=params)


async def _created(calls: Calls, item: str = "a") -> dict:
    """The ``create`` revision, which the item's first update writes (here a no-op PATCH)."""
    await calls.ok("patch", f"/items/notes/{item}", json={})
    revs = await _revs(calls, item)
    assert revs[-1]["kind"] == "create"
    return revs[-1]


async def test_create_writes_none_and_the_first_update_records_the_created_state(calls: Calls):
    item = await _notes(calls)
    assert await _revs(calls) == []
    me = (await calls.ok("get", "/auth/me"))["id"]
    before = dt.datetime.now(dt.UTC)
    await calls.ok("patch", "/items/notes/a", json={"title": "two", "body": "text"})
    revs = await _revs(calls)
    assert [r["kind"] for r in revs] == ["update", "create"]  # newest first
    update, create = revs
    assert update["actor"] == {"kind": "user", "userId": me, "apiKeyId": None, "impersonatorId": None}
    assert update["delta"] == {"title": {"from": "one", "to": "two"}, "body": {"from": None, "to": "text"}}
    assert update["data"]["title"] == "two" and update["data"]["n"] == 1 and update["data"]["id"] == "a"
    assert update["data"]["secret"] is None  # every field of the schema is in the snapshot
    assert update["staged"] is False and update["committedAt"] == update["createdAt"]
    created_at = dt.datetime.fromisoformat(update["createdAt"])
    assert before - dt.timedelta(seconds=5) <= created_at <= dt.datetime.now(dt.UTC)
    assert create["delta"]["title"] == {"from": None, "to": "one"} and create["data"]["title"] == "one"
    assert create["createdAt"] == item["createdAt"] and create["data"]["updatedAt"] == item["createdAt"]
    assert create["actor"] == {"kind": "user", "userId": me, "apiKeyId": None, "impersonatorId": None}
    await calls.ok("patch", "/items/notes/a", json={"n": 2})
    assert [r["kind"] for r in await _revs(calls)] == ["update", "update", "create"]
    assert update["collection"] == "notes" and update["item"] == "a" and update["origin"] is None
    one = await calls.ok("get", f"/items/notes/a/revisions/{update['id']}")
    assert one == update


async def test_status_changes_are_in_the_delta_and_put_too(calls: Calls):
    await _notes(calls)
    await calls.ok("put", "/items/notes/a", json={"title": "x", "status": "archived"})
    [latest, _] = await _revs(calls)
    assert latest["delta"] == {"title": {"from": "one", "to": "x"}, "n": {"from": 1, "to": None},
                               "status": {"from": "published", "to": "archived"}}


async def test_a_failed_update_leaves_no_revision(calls: Calls):
    await _notes(calls)
    await calls.err("patch", "/items/notes/a", 400, "VALIDATION_FAILED", json={"n": "not a number"})
    assert await _revs(calls) == []
    await calls.ok("patch", "/items/notes/a", json={"n": 2})
    await calls.err("patch", "/items/notes/a", 400, "VALIDATION_FAILED", json={"n": "not a number"})
    assert len(await _revs(calls)) == 2


async def test_pagination_and_total(calls: Calls):
    await _notes(calls)
    for i in range(4):
        await calls.ok("patch", "/items/notes/a", json={"n": 10 + i})
    full = await calls.ok("get", "/items/notes/a/revisions", full=True, params={"limit": 2, "page": 2})
    assert full["meta"] == {"total": 5, "limit": 2, "offset": 2}
    assert [r["data"]["n"] for r in full["data"]] == [11, 10]
    assert [r["data"]["n"] for r in await _revs(calls, limit=1, offset=0)] == [13]
    for bad in ({"limit": 0}, {"limit": 201}, {"page": "x"}, {"staged": "maybe"}):
        await calls.err("get", "/items/notes/a/revisions", 400, "VALIDATION_FAILED", params=bad)


async def test_staged_revision_does_not_touch_the_item_and_can_be_committed(calls: Calls):
    await _notes(calls)
    staged = await calls.ok("post", "/items/notes/a/revisions", status=201, json={"data": {"title": "next"}})
    assert staged["staged"] is True and staged["kind"] == "prepared" and staged["committedAt"] is None
    assert staged["data"]["title"] == "next" and staged["delta"] == {"title": {"from": "one", "to": "next"}}
    assert (await calls.get("notes", "a"))["title"] == "one"
    assert [r["id"] for r in await _revs(calls, staged="true")] == [staged["id"]]
    assert await _revs(calls, staged="false") == []
    # Staged content cannot go live: revert (and release pins) refuse it.
    err = await calls.err("post", "/items/notes/a/revert", 409, "REVISION_STAGED", json={"revisionId": staged["id"]})
    assert err["extensions"]["revisionId"] == staged["id"]
    committed = await calls.ok("post", f"/items/notes/a/revisions/{staged['id']}/commit")
    assert committed["staged"] is False and committed["committedAt"]
    await calls.err("post", f"/items/notes/a/revisions/{staged['id']}/commit", 409, "CONFLICT")
    assert (await calls.get("notes", "a"))["title"] == "one"
    item = await calls.ok("post", "/items/notes/a/revert", json={"revisionId": staged["id"]})
    assert item["title"] == "next"
    direct = await calls.ok("post", "/items/notes/a/revisions", status=201, json={"data": {"n": 5}, "staged": False})
    assert direct["staged"] is False and direct["committedAt"]


async def test_staged_revision_input_is_checked_like_a_patch(calls: Calls):
    await _notes(calls)
    url = "/items/notes/a/revisions"
    await calls.err("post", url, 400, "VALIDATION_FAILED", ["data", "n"], json={"data": {"n": "x"}})
    await calls.err("post", url, 400, "VALIDATION_FAILED", ["data", "nope"], json={"data": {"nope": 1}})
    await calls.err("post", url, 400, "VALIDATION_FAILED", ["data", "status"], json={"data": {"status": "x"}})
    await calls.err("post", url, 400, "VALIDATION_FAILED", ["data"], json={"data": [1]})
    await calls.err("post", url, 400, "VALIDATION_FAILED", ["data"], json={})
    await calls.err("post", url, 400, "VALIDATION_FAILED", ["staged"], json={"data": {}, "staged": "yes"})
    await calls.err("post", url, 400, "VALIDATION_FAILED", ["extra"], json={"data": {}, "extra": 1})
    await calls.err("post", url, 400, "VALIDATION_FAILED", json=[{"data": {}}])
    await calls.err("post", url, 400, "VALIDATION_FAILED", content=b"{not json")
    await calls.err("post", "/items/notes/missing/revisions", 404, "RECORD_NOT_FOUND", json={"data": {}})
    assert await _revs(calls) == []


async def test_revert_restores_content_and_writes_a_revision(calls: Calls):
    await _notes(calls)
    await calls.ok("patch", "/items/notes/a", json={"title": "changed", "body": "added", "n": 2})
    first = (await _revs(calls))[-1]
    full = await calls.ok("post", "/items/notes/a/revert", full=True, json={"revisionId": first["id"]})
    item = full["data"]
    assert item["title"] == "one" and item["n"] == 1 and item["body"] is None
    latest = (await _revs(calls))[0]
    assert full["meta"] == {"revisionId": latest["id"]}
    assert latest["kind"] == "revert" and latest["origin"] == {"revisionId": first["id"]}
    assert latest["delta"] == {"title": {"from": "changed", "to": "one"}, "body": {"from": "added", "to": None},
                               "n": {"from": 2, "to": 1}}


async def test_revert_keeps_fields_created_after_the_revision(calls: Calls):
    await _notes(calls)
    first = await _created(calls)
    await calls.ok("post", "/fields/notes", status=201, json={"field": "later", "type": "string"})
    await calls.ok("patch", "/items/notes/a", json={"later": "kept", "title": "x"})
    item = await calls.ok("post", "/items/notes/a/revert", json={"revisionId": first["id"]})
    assert item["later"] == "kept" and item["title"] == "one"


async def test_revert_bad_input(calls: Calls):
    await _notes(calls)
    await calls.create("notes", {"id": "b", "title": "b"})
    other = await _created(calls, "b")
    url = "/items/notes/a/revert"
    await calls.err("post", url, 404, "NOT_FOUND", json={"revisionId": other["id"]})  # another item's
    await calls.err("post", url, 404, "NOT_FOUND", json={"revisionId": "0190b0b0-0000-7000-8000-000000000000"})
    await calls.err("post", url, 404, "NOT_FOUND", json={"revisionId": "x" * 500})
    await calls.err("post", url, 400, "VALIDATION_FAILED", ["revisionId"], json={"revisionId": 5})
    await calls.err("post", url, 400, "VALIDATION_FAILED", ["revisionId"], json={})
    await calls.err("post", url, 400, "VALIDATION_FAILED", ["other"], json={"revisionId": "x", "other": 1})
    await calls.err("post", url, 400, "VALIDATION_FAILED", json="text")
    await calls.err("get", f"/items/notes/a/revisions/{other['id']}", 404, "NOT_FOUND")
    await calls.err("post", f"/items/notes/a/revisions/{other['id']}/commit", 404, "NOT_FOUND")
    await calls.err("post", "/items/notes/missing/revert", 404, "RECORD_NOT_FOUND", json={"revisionId": "x"})
    await calls.err("get", "/items/nothing/a/revisions", 404, "NOT_FOUND")


async def test_revisions_are_masked_and_need_permissions(calls: Calls, member):
    await _notes(calls)
    await calls.ok("patch", "/items/notes/a", json={"secret": "s", "title": "t"})
    reader, _ = await member([{"collection": "notes", "action": "read", "fields": ["title"]}])
    [latest, _] = await reader.ok("get", "/items/notes/a/revisions")
    assert latest["delta"] == {"title": {"from": "one", "to": "t"}}
    assert latest["data"] == {"id": "a", "title": "t"}
    nobody, _ = await member([])
    await nobody.err("get", "/items/notes/a/revisions", 403, "PERMISSION_DENIED")
    await reader.err("post", "/items/notes/a/revert", 403, "PERMISSION_DENIED", json={"revisionId": latest["id"]})
    await reader.err("post", "/items/notes/a/revisions", 403, "PERMISSION_DENIED", json={"data": {}})
    await reader.err("post", f"/items/notes/a/revisions/{latest['id']}/commit", 403, "PERMISSION_DENIED")


async def test_revert_goes_through_the_field_policy(calls: Calls, member):
    await _notes(calls)
    await calls.ok("patch", "/items/notes/a", json={"title": "new", "n": 9})
    first = (await _revs(calls))[-1]
    editor, user_id = await member([{"collection": "notes", "action": "read"},
                                    {"collection": "notes", "action": "update", "fields": ["n"]}])
    err = await editor.err("post", "/items/notes/a/revert", 403, "PERMISSION_DENIED", json={"revisionId": first["id"]})
    assert err["extensions"]["reason"] == "field_policy"
    await calls.ok("patch", "/items/notes/a", json={"title": "one"})
    item = await editor.ok("post", "/items/notes/a/revert", json={"revisionId": first["id"]})
    assert item["n"] == 1
    assert (await _revs(calls))[0]["actor"]["userId"] == user_id


async def test_api_key_and_impersonation_are_recorded(svc_app, site, calls: Calls, member):
    await _notes(calls)
    async with svc_app.kernel.db.connect() as conn:
        admin_role = await access_api.role_by_system_key(conn, site, "admin")
    key = await calls.ok("post", "/api-keys", status=201, json={"name": "ci", "roleId": admin_role["id"]})
    by_key = Calls(svc_app.client, {"Authorization": f"Bearer {key['key']}", "X-Svc-Site": site})
    await by_key.ok("patch", "/items/notes/a", json={"n": 2})
    actor = (await _revs(calls))[0]["actor"]
    assert actor["kind"] == "api_key" and actor["apiKeyId"] == key["id"]
    _, user_id = await member([{"collection": "notes", "action": "read"}, {"collection": "notes", "action": "update"}])
    token = (await calls.ok("post", f"/users/{user_id}/impersonate"))["token"]
    admin_id = (await calls.ok("get", "/auth/me"))["id"]
    posing = Calls(svc_app.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": site})
    await posing.ok("patch", "/items/notes/a", json={"n": 3})
    actor = (await _revs(calls))[0]["actor"]
    assert actor["userId"] == user_id and actor["impersonatorId"] == admin_id


async def test_creates_write_no_revision_rows(svc_app, site, calls: Calls):
    await calls.collection("notes", FIELDS)
    await calls.create("notes", [{"id": f"i{i}", "title": "t"} for i in range(5)])

    async def count() -> int:  # the site's rows (the module's other tests wrote in other sites)
        async with svc_app.kernel.db.connect() as conn:
            query = select(func.count()).select_from(revisions_table).where(revisions_table.c.site_id == site)
            return (await conn.execute(query)).scalar()

    assert await count() == 0
    await calls.ok("patch", "/items/notes/i3", json={"n": 1})
    assert await count() == 2


async def test_set_null_updates_carry_their_cause(calls: Calls):
    await calls.collection("authors", {"name": "string"})
    await calls.collection("posts", {"author": "string"})
    await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="authors",
                         onDelete="set null")
    await calls.create("authors", {"id": "au", "name": "first"})
    await calls.create("posts", {"id": "p", "author": "au"})
    await calls.ok("delete", "/items/authors/au", status=204)
    [latest, _] = await calls.ok("get", "/items/posts/p/revisions")
    assert latest["kind"] == "update" and latest["delta"] == {"author": {"from": "au", "to": None}}
    assert latest["origin"]["cause"]["id"] == "au"


async def test_a_reused_id_after_hard_delete_starts_a_clean_history(calls: Calls):
    await calls.collection("authors", {"name": "string"})
    await calls.collection("posts", {"author": "string", "title": "string"}, versioning=True)
    rel = await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="authors",
                               onDelete="restrict")
    await calls.create("authors", {"id": "au"})
    await calls.create("posts", {"id": "p", "author": "au", "title": "old"})
    await calls.ok("patch", "/items/posts/p", json={"title": "older"})
    await calls.ok("post", "/items/posts/p/versions", status=201, json={"key": "v1"})
    await calls.ok("post", "/items/posts/p/pins", status=201, json={"field": "title"})
    await calls.ok("post", "/items/authors/au/resolve-dependents",
                   json={"action": "delete", "relation": rel["id"], "hard": True})
    await calls.create("posts", {"id": "p", "title": "new"})
    assert await calls.ok("get", "/items/posts/p/revisions") == []
    await calls.ok("patch", "/items/posts/p", json={"title": "newer"})
    revs = await calls.ok("get", "/items/posts/p/revisions")
    assert [(r["kind"], r["data"]["title"]) for r in revs] == [("update", "newer"), ("create", "new")]
    assert await calls.ok("get", "/items/posts/p/versions") == []
    assert await calls.ok("get", "/items/posts/p/pins") == []


async def test_pinnable_revision_for_releases(svc_app, site, calls: Calls):
    from kernel.auth.principal import Principal
    from kernel.base.errors import ApiError
    from plugins.items.history.revisions import pinnable_revision
    from plugins.items.service import acting_context

    await _notes(calls)
    await calls.ok("patch", "/items/notes/a", json={"title": "two"})
    committed = (await _revs(calls))[0]
    staged = await calls.ok("post", "/items/notes/a/revisions", status=201, json={"data": {"title": "three"}})
    ctx = acting_context(svc_app.kernel, site, Principal(kind="user", is_instance_admin=True))
    found = await pinnable_revision(ctx, "notes", "a", committed["id"])
    assert found["id"] == committed["id"] and found["data"]["title"] == "two" and found["restore"] == {}
    with pytest.raises(ApiError) as raised:
        await pinnable_revision(ctx, "notes", "a", staged["id"])
    assert (raised.value.status, raised.value.code) == (409, "REVISION_STAGED")
    with pytest.raises(ApiError) as raised:
        await pinnable_revision(ctx, "notes", "a", "0190b0b0-0000-7000-8000-000000000000")
    assert (raised.value.status, raised.value.code) == (404, "NOT_FOUND")
