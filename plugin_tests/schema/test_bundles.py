"""Schema bundles: export, apply (idempotent, diff-aware, one transaction) and diff.

The tests share the module's app, each in new sites (kernel/testing/shared.py); the ``recorder``
and the filters a test puts on the app's bus come off when it ends."""

from __future__ import annotations

from kernel import ApiError
from kernel.testing import shared as testing_shared
from plugins.schema import api

svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def _blog(calls):
    await calls.collection("authors", icon="person")
    await calls.collection("articles", displayName="Articles", note="n")
    await calls.field("authors", "name", "string", required=True)
    await calls.field("articles", "title", "string", required=True, options={"maxLength": 80})
    await calls.field("articles", "author", "uuid")
    await calls.field("articles", "tags", "json")
    await calls.relation(type="m2o", collection="articles", field="author", relatedCollection="authors",
                         relatedField="articles")


async def _version(svc_app, site):
    async with svc_app.kernel.db.connect() as conn:
        return (await api.load_schema(conn, site)).version


def _schema_events(recorder):
    return [e for e, _, _ in recorder.events if e.startswith(("collections.", "fields.", "relations.", "schema."))]


async def test_export_shape(calls):
    await _blog(calls)
    bundle = await calls.ok("get", "/collections/articles/schema")
    assert set(bundle) == {"collection", "fields", "relations"}
    assert bundle["collection"]["name"] == "articles"
    assert bundle["collection"]["meta"]["displayName"] == "Articles"
    assert [f["field"] for f in bundle["fields"]] == ["title", "author", "tags"]
    assert bundle["fields"][0] == {"field": "title", "type": "string", "interface": None, "display": None,
                                   "options": {"maxLength": 80}, "required": True, "sort": 1}
    assert bundle["relations"] == [{"type": "m2o", "collection": "articles", "field": "author",
                                    "relatedCollection": "authors", "relatedCollections": None,
                                    "relatedField": "articles", "onDelete": "set null"}]
    # The relation touches authors too, so it is in that bundle as well.
    assert (await calls.ok("get", "/collections/authors/schema"))["relations"] == bundle["relations"]
    await calls.err("get", "/collections/nothing/schema", 404, "NOT_FOUND")


async def test_apply_into_another_site_round_trips(calls, calls_b):
    await _blog(calls)
    authors = await calls.ok("get", "/collections/authors/schema")
    articles = await calls.ok("get", "/collections/articles/schema")
    # authors' bundle names a relation from articles, which site B does not have yet.
    await calls_b.err("put", "/collections/authors/schema", 400, "VALIDATION_FAILED",
                      ["relations", "0", "collection"], json=authors)
    out = await calls_b.ok("put", "/collections/authors/schema", json={**authors, "relations": []})
    assert out["applied"] == {"created": 2, "updated": 0, "deleted": 0, "unchanged": 0}
    out = await calls_b.ok("put", "/collections/articles/schema", json=articles)
    assert out["applied"] == {"created": 5, "updated": 0, "deleted": 0, "unchanged": 0}
    assert out["diff"]["relations"]["create"] == [{"collection": "articles", "field": "author"}]
    assert await calls_b.ok("get", "/collections/articles/schema") == articles
    assert await calls_b.ok("get", "/collections/authors/schema") == authors
    # Site A is untouched by all of that.
    assert [c["name"] for c in await calls.ok("get", "/collections")] == ["articles", "authors"]


async def test_second_apply_changes_nothing(svc_app, site, calls, recorder):
    await _blog(calls)
    bundle = await calls.ok("get", "/collections/articles/schema")
    version = await _version(svc_app, site)
    recorder.events.clear()
    for _ in range(2):
        out = await calls.ok("put", "/collections/articles/schema", json=bundle)
        assert out["applied"] == {"created": 0, "updated": 0, "deleted": 0, "unchanged": 5}
        assert out["diff"]["risk"] == "low"
        assert out["diff"]["fields"]["unchanged"] == [{"collection": "articles", "field": f}
                                                      for f in ("title", "author", "tags")]
    assert _schema_events(recorder) == []
    assert await _version(svc_app, site) == version


async def test_apply_creates_updates_and_deletes(svc_app, site, calls, recorder):
    await _blog(calls)
    bundle = await calls.ok("get", "/collections/articles/schema")
    bundle["collection"]["meta"]["icon"] = "article"
    title, author, _tags = bundle["fields"]
    title["options"] = {"maxLength": 120}
    bundle["fields"] = [title, author, {"field": "body", "type": "text"}]  # tags dropped, body added
    bundle["relations"][0]["onDelete"] = "restrict"
    recorder.events.clear()
    out = await calls.ok("put", "/collections/articles/schema", json=bundle)
    assert out["applied"] == {"created": 1, "updated": 3, "deleted": 1, "unchanged": 1}
    diff = out["diff"]
    assert diff["risk"] == "high"
    assert diff["collections"]["update"] == [{"collection": "articles", "changes": {
        "icon": {"from": None, "to": "article"}}}]
    assert diff["fields"]["update"] == [{"collection": "articles", "field": "title", "changes": {
        "options": {"from": {"maxLength": 80}, "to": {"maxLength": 120}}}}]
    assert diff["fields"]["delete"] == [{"collection": "articles", "field": "tags"}]
    assert diff["relations"]["update"][0]["changes"] == {"onDelete": {"from": "set null", "to": "restrict"}}
    events = [e for e in _schema_events(recorder) if e != "schema.changed"]
    assert sorted(events) == sorted(["collections.update", "fields.delete", "fields.create", "fields.update",
                                     "relations.update"])
    now = await calls.ok("get", "/collections/articles/schema")
    assert [f["field"] for f in now["fields"]] == ["title", "author", "body"]
    assert now["relations"][0]["onDelete"] == "restrict"
    # Applying the result again is a no-op.
    again = await calls.ok("put", "/collections/articles/schema", json=now)
    assert again["applied"]["unchanged"] == 5 and sum(again["applied"].values()) == 5


async def test_relations_absent_from_the_bundle_are_deleted(calls):
    await _blog(calls)
    bundle = await calls.ok("get", "/collections/authors/schema")
    out = await calls.ok("put", "/collections/authors/schema", json={**bundle, "relations": []})
    assert out["applied"]["deleted"] == 1
    assert await calls.ok("get", "/relations") == []
    # A bundle never deletes other collections or their fields.
    assert [f["field"] for f in await calls.ok("get", "/fields/articles")] == ["title", "author", "tags"]


async def test_parts_left_out_are_left_alone(calls, recorder):
    await _blog(calls)
    bundle = await calls.ok("get", "/collections/articles/schema")
    recorder.events.clear()
    out = await calls.ok("put", "/collections/articles/schema", json={})
    assert out["applied"] == {"created": 0, "updated": 0, "deleted": 0, "unchanged": 1}
    assert _schema_events(recorder) == []
    out = await calls.ok("put", "/collections/articles/schema", json={"collection": {"name": "articles"}})
    assert out["diff"]["collections"]["update"][0]["changes"] == {
        "displayName": {"from": "Articles", "to": None}, "note": {"from": "n", "to": None}}
    now = await calls.ok("get", "/collections/articles/schema")
    assert now["fields"] == bundle["fields"] and now["relations"] == bundle["relations"]
    out = await calls.ok("put", "/collections/articles/schema", json={"relations": []})
    assert out["applied"] == {"created": 0, "updated": 0, "deleted": 1, "unchanged": 1}
    assert (await calls.ok("get", "/collections/articles/schema"))["fields"] == bundle["fields"]


async def test_creates_a_missing_collection_with_defaults(calls):
    out = await calls.ok("put", "/collections/pages/schema", json={
        "fields": [{"field": "slug", "type": "slug", "required": True}, {"field": "body", "type": "text"}]})
    assert out["applied"]["created"] == 3
    bundle = await calls.ok("get", "/collections/pages/schema")
    assert bundle["collection"]["meta"]["singleton"] is False
    assert [(f["field"], f["sort"]) for f in bundle["fields"]] == [("slug", 1), ("body", 2)]


async def test_diff_writes_nothing(svc_app, site, calls, recorder):
    await _blog(calls)
    version = await _version(svc_app, site)
    recorder.events.clear()
    diff = await calls.ok("post", "/collections/diff", json={
        "collection": {"name": "articles", "meta": {"displayName": "Articles", "note": "n"}},
        "fields": [{"field": "title", "type": "text", "required": True}, {"field": "extra", "type": "integer"}]})
    assert diff["collections"] == {"create": [], "update": [], "delete": [],
                                   "unchanged": [{"collection": "articles"}]}
    assert diff["fields"]["create"] == [{"collection": "articles", "field": "extra"}]
    assert diff["fields"]["update"] == [{"collection": "articles", "field": "title", "changes": {
        "type": {"from": "string", "to": "text"}, "options": {"from": {"maxLength": 80}, "to": {}}}}]
    assert {f["field"] for f in diff["fields"]["delete"]} == {"author", "tags"}
    assert diff["relations"]["delete"] == [{"collection": "articles", "field": "author"}]
    assert diff["risk"] == "high"
    new = await calls.ok("post", "/collections/diff", json={"collection": {"name": "fresh"}})
    assert new["collections"]["create"] == [{"collection": "fresh"}] and new["risk"] == "low"
    assert _schema_events(recorder) == [] and await _version(svc_app, site) == version
    assert [c["name"] for c in await calls.ok("get", "/collections")] == ["articles", "authors"]


async def test_a_vetoed_part_rolls_back_everything(svc_app, calls, recorder):
    await _blog(calls)
    bundle = await calls.ok("get", "/collections/articles/schema")
    before = bundle
    changed = {**bundle, "collection": {"name": "articles", "meta": {"icon": "x"}},
               "fields": [{**bundle["fields"][0], "type": "text"}, *bundle["fields"][1:2],
                          {"field": "new_one", "type": "string"}]}

    def holds_data(event, payload, ctx):  # what the items plugin does when values exist
        raise ApiError(409, "CONFLICT", "tags holds data", path=["field"])

    off = svc_app.kernel.bus.on_filter("fields.delete", holds_data)
    recorder.events.clear()
    try:
        await calls.err("put", "/collections/articles/schema", 409, "CONFLICT", json=changed)
    finally:
        off()
    assert _schema_events(recorder) == []
    assert await calls.ok("get", "/collections/articles/schema") == before
    type_veto = svc_app.kernel.bus.on_filter(
        "fields.type_change", lambda e, p, c: (_ for _ in ()).throw(ApiError(409, "CONFLICT", "no")))
    try:
        await calls.err("put", "/collections/articles/schema", 409, json={**changed, "fields": [
            *changed["fields"], bundle["fields"][2]]})
    finally:
        type_veto()
    assert await calls.ok("get", "/collections/articles/schema") == before
