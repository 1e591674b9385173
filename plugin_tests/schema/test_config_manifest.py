"""The config manifest: export shape, round trip, dry run, idempotence, modes, risk, destructive
changes and transactional apply."""

from __future__ import annotations

from kernel import ApiError
from kernel.testing import shared as testing_shared
from plugins.schema import api

# Every test writes and reads in sites of its own: they share the module's app, each in new sites
# of it (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

IMPORT = "/config/import"


async def _blog(calls):
    await calls.collection("authors", icon="person")
    await calls.collection("articles", displayName="Articles", versioning=True, meta={"hidden": True})
    await calls.field("authors", "name", "string", required=True)
    await calls.field("articles", "title", "string", required=True, options={"maxLength": 80})
    await calls.field("articles", "author", "uuid")
    await calls.field("articles", "tags", "json")
    await calls.relation(type="m2o", collection="articles", field="author", relatedCollection="authors",
                         relatedField="articles")
    await calls.relation(type="m2m", collection="articles", field="tags", relatedCollection="authors")


async def _version(svc_app, site):
    async with svc_app.kernel.db.connect() as conn:
        return (await api.load_schema(conn, site)).version


def _schema_events(recorder):
    return [e for e, _, _ in recorder.events if e.startswith(("collections.", "fields.", "relations.", "schema."))]


def _without_time(manifest):
    return {k: v for k, v in manifest.items() if k != "exportedAt"}


async def test_export_shape(calls):
    await _blog(calls)
    data = await calls.ok("get", "/config/export")
    assert data["version"] == "svc.config@v1" and data["exportedAt"].endswith("Z")
    assert data["webhooks"] == [] and data["settings"] == []
    # schema, then the sections some installed plugin provides (settings, webhooks: the cdc plugin)
    assert data["managedScopes"][0] == "schema" and set(data["managedScopes"]) <= {"schema", "settings", "webhooks"}
    assert data["collections"][0] == {
        "name": "articles", "label": "Articles", "versioning": True, "icon": None, "note": None,
        "singleton": False, "status_field": None, "sort_field": None, "editorialWorkflow": False,
        "requireSeparateReviewer": False, "personalData": False, "editorialPublish": "release",
        "hidden": True}
    assert [(f["collection"], f["field"]) for f in data["fields"]] == [
        ("articles", "title"), ("articles", "author"), ("articles", "tags"), ("authors", "name")]
    assert data["fields"][0] == {"collection": "articles", "field": "title", "type": "string", "interface": None,
                                 "display": None, "options": {"maxLength": 80}, "required": True, "sort": 1}
    assert data["relations"][0] == {"type": "m2o", "collection": "articles", "field": "author",
                                    "relatedCollection": "authors", "relatedCollections": None,
                                    "relatedField": "articles", "onDelete": "set null"}
    assert all("id" not in r for r in data["relations"])
    for scope in ("settings", "webhooks"):
        part = await calls.ok("get", f"/config/export?scope={scope}")
        assert part["collections"] == part["fields"] == part["relations"] == []
        assert part["managedScopes"] in ([], [scope])
    schema_only = _without_time(await calls.ok("get", "/config/export?scope=schema"))
    assert schema_only == {**_without_time(data), "managedScopes": ["schema"]}
    await calls.err("get", "/config/export?scope=items", 400, "VALIDATION_FAILED", ["query", "scope"])


async def test_round_trip_into_an_empty_site(svc_app, site_b, calls, calls_b, recorder):
    await _blog(calls)
    exported = await calls.ok("get", "/config/export")
    recorder.events.clear()
    dry = await calls_b.ok("post", IMPORT + "?dryRun=true", json=exported)
    assert _schema_events(recorder) == [] and await _version(svc_app, site_b) == 0
    assert dry == {"valid": True, "errors": [], "diff": dry["diff"]}
    assert dry["diff"]["collections"] == {"create": 2, "update": 0, "delete": 0, "unchanged": 0}
    assert dry["diff"]["fields"]["create"] == 4 and dry["diff"]["relations"]["create"] == 2
    assert dry["diff"]["risk"] == "low" and dry["diff"]["destructive"] == []
    assert await calls_b.ok("get", "/collections") == []  # the dry run wrote nothing
    done = await calls_b.ok("post", IMPORT, json=exported)
    assert done["applied"] == {"created": 8, "updated": 0, "deleted": 0}
    again = await calls_b.ok("get", "/config/export")
    assert _without_time(again) == _without_time(exported)


async def test_second_import_changes_nothing(svc_app, site, calls, recorder):
    await _blog(calls)
    exported = await calls.ok("get", "/config/export")
    version = await _version(svc_app, site)
    recorder.events.clear()
    for mode in ("merge", "replace-managed", "replace-all"):
        out = await calls.ok("post", f"{IMPORT}?mode={mode}", json=exported)
        assert out["applied"] == {"created": 0, "updated": 0, "deleted": 0}
        assert out["diff"]["fields"] == {"create": 0, "update": 0, "delete": 0, "unchanged": 4}
        assert out["diff"]["risk"] == "low"
    assert _schema_events(recorder) == [] and await _version(svc_app, site) == version


def _manifest(**parts):
    return {"version": "svc.config@v1", **parts}


async def test_modes(calls):
    await _blog(calls)
    await calls.collection("pages")
    await calls.field("pages", "slug", "slug")
    only_articles = _manifest(
        collections=[{"name": "articles", "label": "Articles", "versioning": True, "hidden": True}],
        fields=[{"collection": "articles", "field": "title", "type": "string", "required": True,
                 "options": {"maxLength": 80}, "sort": 1}],
        managedScopes=["collection:articles"])
    merge = await calls.ok("post", IMPORT + "?dryRun=true&mode=merge", json=only_articles)
    assert merge["diff"]["collections"] == {"create": 0, "update": 0, "delete": 0, "unchanged": 1}
    assert merge["diff"]["fields"]["delete"] == 0 and merge["diff"]["risk"] == "low"
    managed = await calls.ok("post", IMPORT + "?dryRun=true&mode=replace-managed", json=only_articles)
    # articles' other fields go, with the relations they hold; authors and pages are not managed.
    assert managed["diff"]["fields"]["delete"] == 2 and managed["diff"]["relations"]["delete"] == 2
    assert managed["diff"]["collections"]["delete"] == 0
    assert managed["diff"]["changes"]["fields"]["delete"] == [{"collection": "articles", "field": "author"},
                                                              {"collection": "articles", "field": "tags"}]
    everything = await calls.ok("post", IMPORT + "?dryRun=true&mode=replace-all", json=only_articles)
    assert everything["diff"]["collections"]["delete"] == 2
    assert everything["diff"]["changes"]["collections"]["delete"] == [{"collection": "authors"},
                                                                      {"collection": "pages"}]
    schema_scope = await calls.ok("post", IMPORT + "?dryRun=true&mode=replace-managed",
                                  json={**only_articles, "managedScopes": ["schema"]})
    assert schema_scope["diff"]["collections"] == everything["diff"]["collections"]
    out = await calls.ok("post", IMPORT + "?mode=replace-managed", json=only_articles)
    assert out["applied"] == {"created": 0, "updated": 0, "deleted": 4}
    assert [f["field"] for f in await calls.ok("get", "/fields/articles")] == ["title"]
    assert [c["name"] for c in await calls.ok("get", "/collections")] == ["articles", "authors", "pages"]
    out = await calls.ok("post", IMPORT + "?mode=replace-all", json=only_articles)
    assert out["applied"] == {"created": 0, "updated": 0, "deleted": 2}
    assert [c["name"] for c in await calls.ok("get", "/collections")] == ["articles"]


async def test_risk_levels(calls):
    await _blog(calls)
    exported = await calls.ok("get", "/config/export")

    async def risk(manifest, mode="merge"):
        return (await calls.ok("post", f"{IMPORT}?dryRun=true&mode={mode}", json=manifest))["diff"]["risk"]

    assert await risk(exported) == "low"
    assert await risk({**exported, "collections": [*exported["collections"], {"name": "new_one"}]}) == "low"
    renamed = [{**exported["collections"][0], "label": "Posts"}, exported["collections"][1]]
    assert await risk({**exported, "collections": renamed}) == "medium"
    assert await risk({**exported, "fields": exported["fields"][:-1]}, "replace-all") == "high"
    retyped = [{**exported["fields"][0], "type": "text"}, *exported["fields"][1:]]
    assert await risk({**exported, "fields": retyped}) == "high"
    widened = [{**exported["relations"][0], "onDelete": "cascade"}, exported["relations"][1]]
    assert await risk({**exported, "relations": widened}) == "high"


async def test_destructive_changes_need_allow_destructive(svc_app, calls):
    await _blog(calls)
    exported = await calls.ok("get", "/config/export")
    retyped = [{**exported["fields"][0], "type": "text"}, *exported["fields"][1:]]
    widened = [{**exported["relations"][0], "onDelete": "cascade"}, exported["relations"][1]]
    manifest = {**exported, "fields": retyped, "relations": widened}
    dry = await calls.ok("post", IMPORT + "?dryRun=true", json=manifest)
    assert dry["diff"]["destructive"] == [
        {"resource": "fields", "action": "type_change", "collection": "articles", "field": "title",
         "from": "string", "to": "text"},
        {"resource": "relations", "action": "onDelete_widening", "collection": "articles", "field": "author",
         "from": "set null", "to": "cascade"}]
    error = await calls.err("post", IMPORT, 409, "DESTRUCTIVE_BLOCKED", json=manifest)
    assert error["extensions"]["changes"] == dry["diff"]["destructive"]
    assert (await calls.ok("get", "/fields/articles/title"))["type"] == "string"
    out = await calls.ok("post", IMPORT + "?allowDestructive=true", json=manifest)
    assert out["applied"] == {"created": 0, "updated": 2, "deleted": 0}
    assert (await calls.ok("get", "/fields/articles/title"))["type"] == "text"


async def test_drops_are_destructive_only_with_data(svc_app, calls):
    await _blog(calls)
    exported = await calls.ok("get", "/config/export")
    smaller = {**exported, "collections": exported["collections"][:1], "relations": [],
               "fields": [f for f in exported["fields"] if f["collection"] == "articles" and f["field"] != "tags"]}
    # No data anywhere (nobody answers schema.data_check): drops are high risk, not blocked.
    dry = await calls.ok("post", IMPORT + "?dryRun=true&mode=replace-all", json=smaller)
    assert dry["diff"]["risk"] == "high" and dry["diff"]["destructive"] == []
    seen = []

    def items_say(event, payload, ctx):  # what the items plugin answers
        seen.append((payload["siteId"], [dict(t) for t in payload["targets"]], ctx.conn is not None))
        for target in payload["targets"]:
            target["hasData"] = target["collection"] == "authors" or target.get("field") == "tags"

    off = svc_app.kernel.bus.on_filter("schema.data_check", items_say)
    try:
        dry = await calls.ok("post", IMPORT + "?dryRun=true&mode=replace-all", json=smaller)
        assert dry["diff"]["destructive"] == [
            {"resource": "collections", "action": "delete", "collection": "authors", "hasData": True},
            {"resource": "fields", "action": "delete", "collection": "articles", "field": "tags", "hasData": True}]
        targets = seen[0][1]
        assert [t["collection"] for t in targets] == ["authors", "articles"] and seen[0][2] is True
        assert targets[0]["collectionId"] and "field" not in targets[0] and targets[1]["field"] == "tags"
        error = await calls.err("post", IMPORT + "?mode=replace-all", 409, "DESTRUCTIVE_BLOCKED", json=smaller)
        assert len(error["extensions"]["changes"]) == 2
        assert len(await calls.ok("get", "/collections")) == 2
        out = await calls.ok("post", IMPORT + "?mode=replace-all&allowDestructive=true", json=smaller)
        assert out["applied"]["deleted"] == 4  # authors, articles.tags and the two relations
    finally:
        off()
    assert [c["name"] for c in await calls.ok("get", "/collections")] == ["articles"]


async def test_a_late_failure_leaves_nothing_changed(svc_app, site_b, calls, calls_b, recorder):
    await _blog(calls)
    exported = await calls.ok("get", "/config/export")
    version = await _version(svc_app, site_b)

    def refuse_the_last_relation(event, payload, ctx):
        if payload["field"] == "tags":
            raise ApiError(409, "CONFLICT", "refused by a plugin", path=["field"])

    off = svc_app.kernel.bus.on_filter("relations.create", refuse_the_last_relation)
    recorder.events.clear()
    try:
        await calls_b.err("post", IMPORT, 409, "CONFLICT", json=exported)
    finally:
        off()
    assert await calls_b.ok("get", "/collections") == [] and await calls_b.ok("get", "/relations") == []
    assert _schema_events(recorder) == []
    assert await _version(svc_app, site_b) == version == 0
