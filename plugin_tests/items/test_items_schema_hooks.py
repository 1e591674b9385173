"""Schema changes against stored items: type conversion or veto, field drop, required and
unique over existing data, defaults of new fields, and the expression indexes."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from kernel.db.meta import now_utc
from kernel.tenancy.scope import SiteDB
from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugins.items.tables import items
from plugins.items.upkeep.indexes import index_name
from plugins.schema.api import get_schema

# Every test but the indexes' (a setting of its own) writes and reads in a site of its own: they
# share the module's app, each in a new site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

# the field holds data: dropping it with its values is asked for (DELETE /fields answers 409 otherwise)
DESTRUCTIVE = {"allowDestructive": "true"}


async def test_type_change_converts(calls: Calls):
    await calls.collection("nums", {"n": "integer"})
    await calls.create("nums", [{"id": "a", "n": 1}, {"id": "b", "n": 20}, {"id": "c"}])
    await calls.ok("patch", "/fields/nums/n", json={"type": "string"})
    assert [(await calls.get("nums", i)).get("n") for i in "abc"] == ["1", "20", None]
    await calls.ok("patch", "/fields/nums/n", json={"type": "float"})
    assert (await calls.get("nums", "b"))["n"] == 20.0
    assert (await calls.list("nums", sort="-n"))["data"][-1]["id"] == "c"  # nulls last descending


async def test_type_change_veto(calls: Calls):
    await calls.collection("words", {"w": "string"})
    await calls.create("words", [{"id": "ok", "w": "12"}, {"id": "bad", "w": "twelve"}])
    err = await calls.err("patch", "/fields/words/w", 409, "CONFLICT", json={"type": "integer"})
    assert err["extensions"]["nonConvertible"] == [{"id": "bad", "value": "twelve"}]
    assert err["extensions"]["count"] == 1
    assert (await calls.ok("get", "/fields/words/w"))["type"] == "string"
    assert (await calls.get("words", "ok"))["w"] == "12"  # nothing converted


async def test_type_change_respects_new_options(calls: Calls):
    await calls.collection("texts", {"t": "text"})
    await calls.create("texts", {"id": "long", "t": "x" * 300})
    await calls.err("patch", "/fields/texts/t", 409, "CONFLICT", json={"type": "string"})
    await calls.ok("patch", "/fields/texts/t", json={"type": "string", "options": {"maxLength": 1000}})
    assert (await calls.get("texts", "long"))["t"] == "x" * 300


async def test_field_delete_strips_values(calls: Calls):
    await calls.collection("cards", {"a": "string", "b": "string"})
    await calls.create("cards", {"id": "c", "a": "x", "b": "y"})
    err = await calls.err("delete", "/fields/cards/b", 409, "DESTRUCTIVE_BLOCKED")
    assert err["extensions"]["changes"] == [{"resource": "fields", "action": "delete", "collection": "cards",
                                             "field": "b", "hasData": True}]
    assert (await calls.get("cards", "c"))["b"] == "y"  # nothing dropped
    await calls.ok("delete", "/fields/cards/b", status=204, params=DESTRUCTIVE)
    assert "b" not in await calls.get("cards", "c")
    await calls.ok("post", "/fields/cards", status=201, json={"field": "b", "type": "integer"})
    assert "b" not in await calls.get("cards", "c")  # the old text never comes back as an integer


async def test_field_delete_agrees_with_the_config_dry_run(calls: Calls):
    """DELETE /fields calls destructive what the config import's dry run does: a field with
    values (409 without allowDestructive), not an empty one nor one whose items are deleted."""
    await calls.collection("tags", {"label": "string", "empty": "string", "gone": "string"})
    await calls.create("tags", [{"id": "t1", "label": "x"}, {"id": "t2", "gone": "y"}])
    await calls.ok("delete", "/items/tags/t2", status=204)
    manifest = await calls.ok("get", "/config/export", params={"scope": "schema"})
    manifest["fields"] = [f for f in manifest["fields"] if f["collection"] != "tags" or f["field"] == "gone"]
    dry = await calls.ok("post", "/config/import", params={"dryRun": "true", "mode": "replace-all"}, json=manifest)
    flagged = {c["field"] for c in dry["diff"]["destructive"] if c["collection"] == "tags"}
    assert flagged == {"label"}
    await calls.ok("delete", "/fields/tags/empty", status=204)
    await calls.ok("delete", "/fields/tags/gone", status=204)  # only a deleted item held it
    await calls.err("delete", "/fields/tags/label", 409, "DESTRUCTIVE_BLOCKED")
    await calls.err("delete", "/fields/tags/label", 400, "VALIDATION_FAILED", params={"allowDestructive": "maybe"})
    await calls.ok("delete", "/fields/tags/label", status=204, params=DESTRUCTIVE)


async def test_bundle_apply_that_drops_a_field_with_data_needs_the_flag(calls: Calls):
    await calls.collection("briefs", {"a": "string", "b": "string"})
    await calls.create("briefs", {"id": "x", "b": "kept"})
    bundle = await calls.ok("get", "/collections/briefs/schema")
    bundle["fields"] = [f for f in bundle["fields"] if f["field"] != "b"]
    await calls.err("put", "/collections/briefs/schema", 409, "DESTRUCTIVE_BLOCKED", json=bundle)
    assert (await calls.get("briefs", "x"))["b"] == "kept"
    await calls.ok("put", "/collections/briefs/schema", json=bundle, params=DESTRUCTIVE)
    assert "b" not in await calls.get("briefs", "x")


async def test_required_over_existing_items(calls: Calls):
    await calls.collection("people", {"name": "string"})
    await calls.create("people", [{"id": "p1", "name": "x"}, {"id": "p2"}])
    err = await calls.err("patch", "/fields/people/name", 409, "CONFLICT", ["required"], json={"required": True})
    assert err["extensions"]["missing"] == ["p2"]
    await calls.ok("patch", "/fields/people/name", json={"required": True, "options": {"default": "anon"}})
    assert (await calls.get("people", "p2"))["name"] == "anon"
    assert (await calls.get("people", "p1"))["name"] == "x"


async def test_new_fields_and_existing_items(calls: Calls):
    await calls.collection("boxes", {"label": "string"})
    await calls.create("boxes", {"id": "b1"})
    await calls.err("post", "/fields/boxes", 409, "CONFLICT", ["required"],
                    json={"field": "size", "type": "integer", "required": True})
    await calls.ok("post", "/fields/boxes", status=201, json={"field": "size", "type": "integer", "required": True,
                                                              "options": {"default": 3}})
    assert (await calls.get("boxes", "b1"))["size"] == 3


async def test_unique_over_existing_items(calls: Calls):
    await calls.collection("users2", {"email": "string"})
    await calls.create("users2", [{"id": "u1", "email": "a"}, {"id": "u2", "email": "a"}, {"id": "u3"}])
    err = await calls.err("patch", "/fields/users2/email", 409, "CONFLICT", ["options", "unique"],
                          json={"options": {"unique": True}})
    assert err["extensions"]["duplicates"] == [{"ids": ["u1", "u2"]}]
    await calls.ok("patch", "/items/users2/u2", json={"email": "b"})
    await calls.ok("patch", "/fields/users2/email", json={"options": {"unique": True}})
    await calls.err("post", "/items/users2", 409, "CONFLICT", ["email"], json={"email": "a"})


async def _indexes(app: Any) -> dict[str, str]:
    async with app.kernel.db.connect() as conn:
        if app.kernel.db.dialect == "postgresql":
            rows = await conn.execute(text("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'svc_items'"))
        else:
            rows = await conn.execute(text("SELECT name, sql FROM sqlite_master WHERE type = 'index' "
                                           "AND tbl_name = 'svc_items'"))
        return {name: sql or "" for name, sql in rows}


async def test_indexed_fields_get_expression_indexes(make_app):
    # Indexes with the field, whatever the collection holds (the default waits for 1,000 items:
    # test_items_lazy_indexes.py).
    svc_app = await make_app(env={"SVC_ITEMS_INDEX_MIN_ITEMS": "0"})
    admin = {"Authorization": f"Bearer {await svc_app.login()}"}
    site = await svc_app.create_site(admin)
    calls = Calls(svc_app.client, {**admin, "X-Svc-Site": site})
    await calls.collection("shop", {"price": {"type": "decimal", "options": {"indexed": True}},
                                    "sku": {"type": "string", "options": {"unique": True}},
                                    "plain": {"type": "string", "options": {"indexed": False}},
                                    "views": "integer", "name": "string", "body": "text", "meta": "json",
                                    "long": {"type": "string", "options": {"maxLength": 2000}}})
    coll = (await get_schema(svc_app.kernel, site)).collection("shop")
    found = await _indexes(svc_app)
    price, sku = index_name(coll.id, "price"), index_name(coll.id, "sku")
    assert "NUMERIC" in found[price].upper() and "price" in found[price] and "deleted_at IS NULL" in found[price]
    assert "UNIQUE" in found[sku].upper() and index_name(coll.id, "plain") not in found
    # Short scalar fields are indexed by default; long text, JSON and long strings are not.
    assert index_name(coll.id, "views") in found and index_name(coll.id, "name") in found
    assert not {index_name(coll.id, f) for f in ("body", "meta", "long")} & set(found)
    await calls.ok("patch", "/fields/shop/price", json={"type": "string"})
    assert "NUMERIC" not in (await _indexes(svc_app))[price].upper()  # rebuilt for the new comparison
    await calls.ok("patch", "/fields/shop/price", json={"options": {"indexed": False}})
    assert price not in await _indexes(svc_app)
    await calls.ok("patch", "/fields/shop/plain", json={"options": {}})  # back to its type's default
    assert index_name(coll.id, "plain") in await _indexes(svc_app)
    await calls.ok("delete", "/fields/shop/sku", status=204, params=DESTRUCTIVE)
    assert sku not in await _indexes(svc_app)


async def test_unique_index_backs_up_the_check(calls: Calls, svc_app, site):
    """Two writers that both checked before either wrote: the database refuses the second."""
    await calls.collection("codes", {"code": {"type": "string", "options": {"unique": True}}})
    await calls.create("codes", {"id": "one", "code": "X"})
    coll = (await get_schema(svc_app.kernel, site)).collection("codes")
    now = now_utc()
    with pytest.raises(IntegrityError):
        async with svc_app.kernel.db.begin() as conn:
            await SiteDB(site, conn).insert(items, {"collection_id": coll.id, "id": "two", "status": "published",
                                                    "data": {"code": "X"}, "created_at": now, "updated_at": now})
