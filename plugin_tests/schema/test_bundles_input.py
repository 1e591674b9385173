"""Bundles: bad input is a 4xx with a path (never a 500), admin-only writes, and tenancy.

The tests share the module's app, each in new sites (kernel/testing/shared.py); the one that
needs a body limit of its own starts its app."""

from __future__ import annotations

import pytest
import pytest_asyncio

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


@pytest_asyncio.fixture(loop_scope="module")
async def member_calls(svc_app, site, make_member):
    """The conftest's subscriber of ``site``, on the module's event loop (its app is the shared one)."""
    member = await make_member(site, "subscriber")
    return Calls(svc_app.client, member.headers)

FIELD = {"field": "title", "type": "string"}
M2O = {"type": "m2o", "collection": "posts", "field": "owner", "relatedCollection": "people"}

BAD_BUNDLES = [
    ({"bogus": 1}, ["bogus"]),
    ({"collection": "posts"}, ["collection"]),
    ({"collection": {"name": "other"}}, ["collection", "name"]),
    ({"collection": {"name": "posts", "meta": {"bogus": 1}}}, ["collection", "meta", "bogus"]),
    ({"collection": {"name": "posts", "singleton": "yes"}}, ["collection", "singleton"]),
    ({"collection": {"name": "posts", "fields": []}}, ["collection", "fields"]),
    ({"fields": {"title": FIELD}}, ["fields"]),
    ({"fields": ["title"]}, ["fields", "0"]),
    ({"fields": [{"field": "a'; DROP TABLE x;--", "type": "string"}]}, ["fields", "0", "field"]),
    ({"fields": [{"field": "../etc", "type": "string"}]}, ["fields", "0", "field"]),
    ({"fields": [{"field": "id", "type": "string"}]}, ["fields", "0", "field"]),
    ({"fields": [{"field": "x", "type": "varchar"}]}, ["fields", "0", "type"]),
    ({"fields": [{"field": "x"}]}, ["fields", "0", "type"]),
    ({"fields": [{"field": "x", "type": "string", "required": "no"}]}, ["fields", "0", "required"]),
    ({"fields": [{"field": "x", "type": "string", "options": {"maxLength": -1}}]},
     ["fields", "0", "options", "maxLength"]),
    ({"fields": [{"field": "x", "type": "integer", "options": {"default": "seven"}}]},
     ["fields", "0", "options", "default"]),
    ({"fields": [FIELD, {**FIELD, "field": "Title"}]}, ["fields", "1", "field"]),
    ({"fields": [{"field": f"f{i}", "type": "string"} for i in range(501)]}, ["fields"]),
    ({"relations": [{**M2O, "collection": "people", "relatedCollection": "tags"}]}, ["relations", "0"]),
    ({"relations": [{**M2O, "type": "m3x"}]}, ["relations", "0", "type"]),
    ({"relations": [{**M2O, "onDelete": "explode"}]}, ["relations", "0", "onDelete"]),
    ({"relations": [{**M2O, "type": "o2m"}]}, ["relations", "0", "relatedField"]),
    ({"relations": [{**M2O, "relatedCollections": ["people"]}]}, ["relations", "0", "relatedCollections"]),
    ({"relations": [{**M2O, "id": "abc"}]}, ["relations", "0", "id"]),
    ({"relations": [{**M2O, "relatedCollection": "nobody"}]}, ["relations", "0", "relatedCollection"]),
    ({"relations": [{**M2O, "field": "missing"}]}, ["relations", "0", "field"]),
    ({"fields": [{"field": "owner", "type": "json"}], "relations": [M2O]}, ["relations", "0", "field"]),
    ({"relations": [M2O, M2O]}, ["relations", "1", "field"]),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def people_and_posts(shared_site):
    """The module's shared site with ``people`` and ``posts`` (an ``owner`` uuid field)."""
    calls = shared_site.calls
    await calls.collection("people")
    await calls.ok("put", "/collections/posts/schema", json={"fields": [{"field": "owner", "type": "uuid"}]})
    return calls


@pytest.mark.parametrize(("bundle", "path"), BAD_BUNDLES)
async def test_bad_bundles_point_at_the_offending_part(people_and_posts, bundle, path):
    calls = people_and_posts
    before = await calls.ok("get", "/collections/posts/schema")
    body = {"fields": [{"field": "owner", "type": "uuid"}], **bundle}
    for method, route in (("put", "/collections/posts/schema"), ("post", "/collections/diff")):
        if route.endswith("diff"):
            body = {"collection": {"name": "posts"}, **body} if "collection" not in body else body
            if body["collection"] == {"name": "other"}:
                continue  # the diff takes its name from the bundle
        error = await calls.err(method, route, 400, "VALIDATION_FAILED", path, json=body)
        assert error["message"]
    assert await calls.ok("get", "/collections/posts/schema") == before


@pytest.mark.parametrize("name", ["items", "svc_x", "a%2Fb", "a'%20OR%201=1--", "x" * 100, "%00", "a.b"])
async def test_odd_or_reserved_names(calls, name):
    resp = await calls.call("put", f"/collections/{name}/schema", json={})
    # %2F decodes to a '/': no such route, 404; every other odd name is refused by name, 400.
    assert resp.status_code == (404 if "%2F" in name else 400), resp.text
    if resp.status_code == 400:
        assert resp.json()["errors"][0]["path"][:2] == ["collection", "name"]
    resp = await calls.call("get", f"/collections/{name}/schema")
    assert resp.status_code == 404, resp.text


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b"null", b'"text"', b"\xff\xfe", b"1e999", b""])
async def test_malformed_bodies(calls, raw):
    for method, route in (("put", "/collections/posts/schema"), ("post", "/collections/diff")):
        resp = await calls.call(method, route, content=raw, headers={"Content-Type": "application/json"})
        assert resp.status_code == 400, resp.text
        assert resp.json()["errors"][0]["path"] == ["body"]


async def test_a_name_clash_is_a_409(calls):
    await calls.collection("posts")
    await calls.err("put", "/collections/Posts/schema", 409, "CONFLICT", ["collection", "name"], json={})
    await calls.err("put", "/collections/posts/schema", 409, "CONFLICT", ["relations", "0", "field"], json={
        "fields": [{"field": "owner", "type": "uuid"}, {"field": "people", "type": "string"}],
        "relations": [{"type": "o2m", "collection": "posts", "field": "people", "relatedCollection": "posts",
                       "relatedField": "owner"}]})


async def test_oversized_bundle_is_413(make_app):
    app = await make_app(max_body_bytes=4096)
    token = await app.login()
    headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": "default"}
    body = {"fields": [{"field": f"f{i}", "type": "string", "interface": "x" * 50} for i in range(100)]}
    resp = await app.client.put("/api/v1/collections/posts/schema", json=body, headers=headers)
    assert resp.status_code == 413 and resp.json()["errors"][0]["code"] == "PAYLOAD_TOO_LARGE"


async def test_writes_are_for_admins(calls, member_calls, anon_calls):
    await calls.ok("put", "/collections/posts/schema", json={"fields": [FIELD]})
    # reads: a signed-in member that may read the collection (test_schema_visibility.py)
    await member_calls.err("get", "/collections/posts/schema", 403, "PERMISSION_DENIED")
    subscriber = next(r for r in await calls.ok("get", "/roles") if r.get("systemKey") == "subscriber")
    await calls.grant([{"collection": "posts", "action": "read", "fields": ["*"]}], {"roleId": subscriber["id"]})
    bundle = await member_calls.ok("get", "/collections/posts/schema")
    assert bundle["fields"][0]["field"] == "title"
    await anon_calls.err("get", "/collections/posts/schema", 401, "UNAUTHENTICATED")
    for who, status, code in ((member_calls, 403, "PERMISSION_DENIED"), (anon_calls, 401, "UNAUTHENTICATED")):
        await who.err("put", "/collections/posts/schema", status, code, json={"fields": []})
        await who.err("post", "/collections/diff", status, code, json={"collection": {"name": "posts"}})
    assert (await calls.ok("get", "/collections/posts/schema"))["fields"] == bundle["fields"]


async def test_sites_are_independent(calls, calls_b):
    await calls.ok("put", "/collections/posts/schema", json={"fields": [FIELD]})
    await calls_b.err("get", "/collections/posts/schema", 404, "NOT_FOUND")
    diff = await calls_b.ok("post", "/collections/diff", json={"collection": {"name": "posts"}, "fields": [FIELD]})
    assert diff["collections"]["create"] == [{"collection": "posts"}]
    assert diff["fields"]["create"] == [{"collection": "posts", "field": "title"}]
    out = await calls_b.ok("put", "/collections/posts/schema", json={"fields": [{"field": "other", "type": "text"}]})
    assert out["applied"]["created"] == 2
    assert [f["field"] for f in (await calls.ok("get", "/collections/posts/schema"))["fields"]] == ["title"]
    await calls_b.ok("put", "/collections/posts/schema", json={"fields": []})
    assert [f["field"] for f in (await calls.ok("get", "/collections/posts/schema"))["fields"]] == ["title"]
    assert (await calls_b.ok("get", "/collections/posts/schema"))["fields"] == []
