"""Schema writes emit filter events inside the transaction and action events after commit, bump
the site's schema version and leave audit records with names only."""

from __future__ import annotations

from kernel import ApiError
from kernel.policy import audit
from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new site
# of it (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site = testing_shared.site

SCHEMA_ACTIONS = ("collections.", "fields.", "relations.", "schema.changed")


def schema_events(recorder):
    return [(e, p) for e, p, _ in recorder.events if e.startswith(SCHEMA_ACTIONS)]


async def test_collection_events(calls, recorder, site):
    await calls.collection("articles", icon="a")
    await calls.ok("patch", "/collections/articles", json={"icon": "b"})
    await calls.ok("delete", "/collections/articles", status=204)
    await calls.ok("post", "/collections/articles/restore")
    events = [(e, p) for e, p in schema_events(recorder) if e != "schema.changed"]
    names = [e for e, _ in events]
    assert names == ["collections.create", "collections.update", "collections.delete", "collections.create"]
    create, update, delete, restore = (p for _, p in events)
    assert create == {"siteId": site, "collection": "articles",
                      "after": {"name": "articles", "meta": {**create["after"]["meta"], "icon": "a"}}}
    assert update["before"]["meta"]["icon"] == "a" and update["after"]["meta"]["icon"] == "b"
    assert delete == {"siteId": site, "collection": "articles", "before": update["after"]}
    assert restore["restored"] is True and restore["after"]["meta"]["icon"] == "b"
    for _, _, ctx in recorder.events:
        assert ctx.site_id == site and ctx.conn is None  # actions run after commit


async def test_field_and_relation_events(calls, recorder, site):
    await calls.collection("a")
    await calls.collection("b")
    recorder.events.clear()
    await calls.field("a", "ref", "uuid")
    await calls.ok("patch", "/fields/a/ref", json={"interface": "select"})
    rel = await calls.relation(type="m2o", collection="a", field="ref", relatedCollection="b")
    await calls.ok("patch", f"/relations/{rel['id']}", json={"onDelete": "cascade"})
    await calls.ok("delete", f"/relations/{rel['id']}", status=204)
    await calls.ok("delete", "/fields/a/ref", status=204)
    events = [(e, p) for e, p in schema_events(recorder) if e != "schema.changed"]
    assert [e for e, _ in events] == ["fields.create", "fields.update", "relations.create", "relations.update",
                                      "relations.delete", "fields.delete"]
    f_create, f_update, r_create, r_update, r_delete, f_delete = (p for _, p in events)
    assert f_create == {"siteId": site, "collection": "a", "field": "ref", "after": {
        "field": "ref", "type": "uuid", "interface": None, "display": None, "options": {}, "required": False,
        "sort": 1}}
    assert f_update["before"]["interface"] is None and f_update["after"]["interface"] == "select"
    assert r_create["relationId"] == rel["id"] and r_create["field"] == "ref"
    assert r_create["after"]["relatedCollection"] == "b" and "createdAt" not in r_create["after"]
    assert r_update["before"]["onDelete"] == "set null" and r_update["after"]["onDelete"] == "cascade"
    assert r_delete["before"]["onDelete"] == "cascade" and "after" not in r_delete
    assert f_delete["before"]["field"] == "ref"


async def test_filters_run_inside_the_transaction_and_may_veto(svc_app, calls, site):
    seen = []

    def veto_drafts(event, payload, ctx):
        seen.append((event, ctx.conn is not None))
        if payload["collection"].startswith("draft"):
            raise ApiError.validation("no drafts", path=["name"])

    off = svc_app.kernel.bus.on_filter("collections.*", veto_drafts)
    try:
        await calls.err("post", "/collections", 400, "VALIDATION_FAILED", ["name"], json={"name": "drafts"})
        await calls.collection("posts")
    finally:
        off()
    assert seen == [("collections.create", True), ("collections.create", True)]
    assert [c["name"] for c in await calls.ok("get", "/collections")] == ["posts"]


async def test_versions_bump_once_per_change_and_not_on_failure(svc_app, calls, recorder, site):
    await calls.collection("a")
    await calls.field("a", "x", "string")
    await calls.err("post", "/collections", 409, json={"name": "a"})
    await calls.err("post", "/fields/a", 409, json={"field": "x", "type": "string"})
    await calls.ok("delete", "/fields/a/x", status=204)
    versions = [p["version"] for e, p in schema_events(recorder) if e == "schema.changed"]
    assert versions == [1, 2, 3]
    assert all(p["siteId"] == site for e, p in schema_events(recorder) if e == "schema.changed")
    from plugins.schema import api

    assert (await api.get_schema(svc_app.kernel, site)).version == 3


async def test_failed_writes_emit_nothing(calls, recorder):
    await calls.err("post", "/collections", 400, json={"name": "items"})
    await calls.err("delete", "/collections/nothing", 404)
    assert schema_events(recorder) == []


async def test_audit_records_name_the_change(svc_app, calls, site):
    await calls.collection("a")
    await calls.field("a", "x", "string", options={"default": "secret-ish value"})
    await calls.ok("delete", "/fields/a/x", status=204)
    async with svc_app.kernel.db.connect() as conn:
        entries, _ = await audit.list_entries(conn, site, limit=50)
    mine = [(e["action"], e["target"]["type"], e["target"]["id"], e["details"]) for e in reversed(entries)
            if e["action"].startswith("schema.")]
    assert mine == [
        ("schema.collection.create", "collection", "a", {"collection": "a"}),
        ("schema.field.create", "field", "a.x", {"collection": "a", "field": "x"}),
        ("schema.field.delete", "field", "a.x", {"collection": "a", "field": "x"}),
    ]
    assert all(e["actor"]["kind"] == "user" and e["requestId"] for e in entries if e["action"].startswith("schema."))
