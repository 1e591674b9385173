"""Config import validation: the result's error codes with paths, 422 on apply, and malformed
manifests answered 400 with the path of the offending part (never a 500)."""

from __future__ import annotations

import pytest

IMPORT = "/config/import"
V = "svc.config@v1"


def _m(**parts):
    return {"version": V, **parts}


async def _dry(calls, manifest, mode="merge"):
    return await calls.ok("post", f"{IMPORT}?dryRun=true&mode={mode}", json=manifest)


@pytest.mark.parametrize("version", ["svc.config@v2", None, 1, "", ["svc.config@v1"]])
async def test_unsupported_version(shared_site, version):
    calls = shared_site.calls
    manifest = {"collections": [{"name": "posts"}], "anything": "else"}
    if version is not None:
        manifest["version"] = version
    out = await _dry(calls, manifest)
    assert out["valid"] is False and out["diff"] is None
    assert [(e["code"], e["path"]) for e in out["errors"]] == [("UNSUPPORTED_MANIFEST_VERSION", ["version"])]
    error = await calls.err("post", IMPORT, 422, "VALIDATION_FAILED", ["version"], json=manifest)
    assert error["extensions"]["errors"] == out["errors"]


async def test_dangling_references(calls):
    await calls.collection("people")
    await calls.field("people", "name", "string")
    manifest = _m(
        collections=[{"name": "posts"}],
        fields=[{"collection": "posts", "field": "title", "type": "string"},
                {"collection": "posts", "field": "owner", "type": "uuid"},
                {"collection": "people", "field": "age", "type": "integer"},  # in the site: fine
                {"collection": "posts", "field": "links", "type": "json"},
                {"collection": "ghosts", "field": "boo", "type": "string"}],
        relations=[{"type": "m2o", "collection": "posts", "field": "owner", "relatedCollection": "nobody"},
                   {"type": "m2o", "collection": "posts", "field": "missing", "relatedCollection": "people"},
                   {"type": "o2m", "collection": "people", "field": "posts", "relatedCollection": "posts",
                    "relatedField": "nope"},
                   {"type": "m2a", "collection": "posts", "field": "links", "relatedCollections": ["people", "x"]}])
    out = await _dry(calls, manifest)
    assert out["valid"] is False and out["diff"] is None
    found = [(e["code"], e["path"]) for e in out["errors"]]
    assert found == [
        ("DANGLING_REFERENCE", ["fields", 4, "collection"]),
        ("DANGLING_REFERENCE", ["relations", 0, "relatedCollection"]),
        ("DANGLING_REFERENCE", ["relations", 1, "field"]),
        ("DANGLING_REFERENCE", ["relations", 2, "relatedField"]),
        ("DANGLING_REFERENCE", ["relations", 3, "relatedCollections", 1]),
    ]
    error = await calls.err("post", IMPORT, 422, "VALIDATION_FAILED", ["fields", "4", "collection"], json=manifest)
    assert error["extensions"]["errors"] == out["errors"]
    assert [c["name"] for c in await calls.ok("get", "/collections")] == ["people"]
    # replace-all deletes what the manifest leaves out, so a field of it dangles too.
    out = await _dry(calls, _m(fields=[{"collection": "people", "field": "age", "type": "integer"}]), "replace-all")
    assert [(e["code"], e["path"]) for e in out["errors"]] == [("DANGLING_REFERENCE", ["fields", 0, "collection"])]


async def test_duplicate_keys(calls):
    manifest = _m(
        collections=[{"name": "posts"}, {"name": "tags"}, {"name": "Posts"}],
        fields=[{"collection": "posts", "field": "title", "type": "string"},
                {"collection": "tags", "field": "title", "type": "string"},
                {"collection": "posts", "field": "TITLE", "type": "text"}],
        relations=[{"type": "m2m", "collection": "posts", "field": "tags", "relatedCollection": "tags"},
                   {"type": "m2m", "collection": "posts", "field": "tags", "relatedCollection": "posts"}],
        managedScopes=["schema", "schema"])
    out = await _dry(calls, manifest)
    assert [(e["code"], e["path"]) for e in out["errors"] if e["code"] == "DUPLICATE_KEY"] == [
        ("DUPLICATE_KEY", ["managedScopes", 1]),
        ("DUPLICATE_KEY", ["collections", 2, "name"]),
        ("DUPLICATE_KEY", ["fields", 2, "field"]),
        ("DUPLICATE_KEY", ["relations", 1, "field"]),
    ]


async def test_relation_rules_and_clashes_are_reported(calls):
    await calls.collection("posts")
    out = await _dry(calls, _m(
        collections=[{"name": "POSTS"}],
        fields=[{"collection": "posts", "field": "owner", "type": "json"},
                {"collection": "posts", "field": "Owner", "type": "json"}],
        relations=[{"type": "m2o", "collection": "posts", "field": "owner", "relatedCollection": "posts"}]))
    found = [(e["code"], e["path"]) for e in out["errors"]]
    assert ("CONFLICT", ["collections", 0, "name"]) in found
    assert ("DUPLICATE_KEY", ["fields", 1, "field"]) in found
    assert ("VALIDATION_FAILED", ["relations", 0, "field"]) in found


async def test_changes_that_break_an_unlisted_relation(calls):
    await calls.collection("people")
    await calls.collection("posts")
    await calls.field("posts", "author", "uuid", required=True)
    await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="people",
                         relatedField="posts")
    alias = _m(fields=[{"collection": "people", "field": "posts", "type": "string"}])
    out = await _dry(calls, alias)
    assert [(e["code"], e["path"]) for e in out["errors"]] == [("CONFLICT", ["fields", 0, "field"])]
    holder = _m(fields=[{"collection": "posts", "field": "author", "type": "json", "required": True}])
    out = await _dry(calls, holder)
    assert [(e["code"], e["path"]) for e in out["errors"]] == [("VALIDATION_FAILED", ["fields", 0])]


async def test_sections_with_their_provider(calls):
    # settings and webhooks come with their plugins (a section with no provider is refused:
    # plugin_tests/settings/test_settings_disabled.py)
    out = await _dry(calls, _m(settings=[{"key": "menu.main", "value": []}], webhooks=[]))
    assert out["valid"] is True and out["diff"]["settings"]["create"] == 1
    assert (await _dry(calls, _m(settings=[], webhooks=[])))["valid"] is True


MALFORMED = [
    (["not", "an", "object"], ["body"]),
    ({"version": V, "extra": 1}, ["extra"]),
    ({"version": V, "collections": {"posts": {}}}, ["collections"]),
    ({"version": V, "collections": ["posts"]}, ["collections", "0"]),
    ({"version": V, "collections": [{"label": "no name"}]}, ["collections", "0", "name"]),
    ({"version": V, "collections": [{"name": "posts", "label": 5}]}, ["collections", "0", "label"]),
    ({"version": V, "collections": [{"name": "posts", "versioning": "yes"}]}, ["collections", "0", "versioning"]),
    ({"version": V, "collections": [{"name": "posts", "displayName": "P"}]}, ["collections", "0", "displayName"]),
    ({"version": V, "collections": [{"name": "posts", "permissions": []}]}, ["collections", "0", "permissions"]),
    ({"version": V, "collections": [{"name": "../../etc/passwd"}]}, ["collections", "0", "name"]),
    ({"version": V, "collections": [{"name": "x'; DROP TABLE svc_sites;--"}]}, ["collections", "0", "name"]),
    ({"version": V, "collections": [{"name": "items"}]}, ["collections", "0", "name"]),
    ({"version": V, "fields": [{"field": "x", "type": "string"}]}, ["fields", "0", "collection"]),
    ({"version": V, "fields": [{"collection": "a/b", "field": "x", "type": "string"}]}, ["fields", "0", "collection"]),
    ({"version": V, "fields": [{"collection": "a", "field": "x;", "type": "string"}]}, ["fields", "0", "field"]),
    ({"version": V, "fields": [{"collection": "a", "field": "x", "type": 7}]}, ["fields", "0", "type"]),
    ({"version": V, "fields": [{"collection": "a", "field": "x", "type": "string", "secret": 1}]},
     ["fields", "0", "secret"]),
    ({"version": V, "fields": [{"collection": "a", "field": "x", "type": "float", "options": {"min": "lots"}}]},
     ["fields", "0", "options", "min"]),
    ({"version": V, "relations": [{"type": "m2o", "collection": "a", "field": "x"}]},
     ["relations", "0", "relatedCollection"]),
    ({"version": V, "relations": [{"type": "m2o", "collection": "a", "field": "x", "relatedCollection": "b",
                                   "id": "0190"}]}, ["relations", "0", "id"]),
    ({"version": V, "managedScopes": "schema"}, ["managedScopes"]),
    ({"version": V, "managedScopes": ["everything"]}, ["managedScopes", "0"]),
    ({"version": V, "managedScopes": ["collection:../x"]}, ["managedScopes", "0"]),
    ({"version": V, "settings": "menu"}, ["settings"]),
    ({"version": V, "webhooks": [1]}, ["webhooks", "0"]),
    ({"version": V, "exportedAt": 5}, ["exportedAt"]),
    ({"version": V, "roles": []}, ["roles"]),
    ({"version": V, "items": []}, ["items"]),
    ({"version": V, "collections": [{"name": f"c{i}"} for i in range(2_001)]}, ["collections"]),
    ({"version": V, "relations": [{}] * 5_001}, ["relations"]),
]


@pytest.mark.parametrize(("manifest", "path"), MALFORMED)
async def test_malformed_manifests_are_400_with_a_path(shared_site, manifest, path):
    calls = shared_site.calls
    for query in ("?dryRun=true", ""):
        error = await calls.err("post", IMPORT + query, 400, "VALIDATION_FAILED", path, json=manifest)
        assert error["message"]
    assert await calls.ok("get", "/collections") == []


async def test_field_cap(calls):
    fields = [{"collection": "a", "field": "f", "type": "string"}] * 20_001
    await calls.err("post", IMPORT + "?dryRun=true", 400, "VALIDATION_FAILED", ["fields"],
                    json={"version": V, "fields": fields})


@pytest.mark.parametrize("query", ["mode=replace", "mode=", "dryRun=maybe", "allowDestructive=2", "mode=MERGE"])
async def test_bad_query_parameters(calls, query):
    resp = await calls.call("post", f"{IMPORT}?{query}", json={"version": V})
    if query == "mode=":
        assert resp.status_code == 200  # empty is the default, merge
        return
    assert resp.status_code == 400, resp.text
    assert resp.json()["errors"][0]["path"][0] == "query"


@pytest.mark.parametrize("raw", [b"not json", b"null", b'"text"', b"\xff\xfe", b"", b"{\"version\": "])
async def test_malformed_bodies(shared_site, raw):
    resp = await shared_site.calls.call("post", IMPORT, content=raw, headers={"Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["body"]


async def test_oversized_manifest_is_413(make_app):
    app = await make_app(max_body_bytes=4096)
    token = await app.login()
    headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": "default"}
    body = {"version": V, "collections": [{"name": f"c{i}", "note": "x" * 100} for i in range(100)]}
    resp = await app.client.post("/api/v1/config/import", json=body, headers=headers)
    assert resp.status_code == 413 and resp.json()["errors"][0]["code"] == "PAYLOAD_TOO_LARGE"
