"""A member sees only the schema its read permissions reach (Directus's rule): the collections,
fields, relations and bundles of the schema routes. Admins see everything."""

from __future__ import annotations

import pytest
import pytest_asyncio

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def schema(shared_site):
    calls = await shared_site.new_site("vis")
    await calls.collection("posts", {"title": "string", "secret_note": "text", "author": "uuid"})
    await calls.collection("people", {"name": "string", "salary": "integer"})
    await calls.collection("vault", {"code": "string"})
    await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="people")
    member = await _member(shared_site, calls, [
        {"collection": "posts", "action": "read", "fields": ["title", "author"]},
        {"collection": "people", "action": "read", "fields": ["name"]},
        # create on vault is no read: vault stays out of sight
        {"collection": "vault", "action": "create", "fields": ["*"]},
    ])
    return calls, member


async def _member(shared_site, admin, rules):
    from kernel.testing import Calls, new_member

    made = await new_member(shared_site.app, admin.headers["X-Svc-Site"], "subscriber")
    await admin.grant(rules, {"userId": made.id})
    shared_site.app.kernel.access.invalidate(admin.headers["X-Svc-Site"])
    return Calls(shared_site.app.client, made.headers)


async def test_member_lists_only_readable_collections_and_fields(schema):
    admin, member = schema
    assert {c["name"] for c in await admin.ok("get", "/collections")} == {"posts", "people", "vault"}
    assert {c["name"] for c in await member.ok("get", "/collections")} == {"posts", "people"}
    everything = {(f["collection"], f["field"]) for f in await member.ok("get", "/fields")}
    assert everything == {("posts", "title"), ("posts", "author"), ("people", "name")}
    answer = await member.ok("get", "/fields/posts", full=True)
    assert [f["field"] for f in answer["data"]] == ["title", "author"] and answer["meta"]["total"] == 2
    # the admin still sees every field
    assert {f["field"] for f in await admin.ok("get", "/fields/posts")} == {"title", "secret_note", "author"}


async def test_hidden_field_answers_like_a_missing_one(schema):
    admin, member = schema
    assert (await member.ok("get", "/fields/posts/title"))["field"] == "title"
    hidden = await member.err("get", "/fields/posts/secret_note", 404, "NOT_FOUND")
    missing = await member.err("get", "/fields/posts/no_such_field", 404, "NOT_FOUND")
    assert hidden["message"] == missing["message"].replace("no_such_field", "secret_note")
    assert (await admin.ok("get", "/fields/posts/secret_note"))["type"] == "text"


async def test_unreadable_collection_is_refused(schema):
    _admin, member = schema
    for path in ("/collections/vault", "/fields/vault", "/fields/vault/code", "/collections/vault/schema"):
        await member.err("get", path, 403, "PERMISSION_DENIED")
    # a collection that does not exist still says so (as the items routes do)
    await member.err("get", "/fields/nowhere", 404, "NOT_FOUND")
    await member.err("get", "/fields/nowhere/x", 404, "NOT_FOUND")


async def test_bundle_and_relations_are_masked(schema):
    admin, member = schema
    bundle = await member.ok("get", "/collections/posts/schema")
    assert [f["field"] for f in bundle["fields"]] == ["title", "author"]
    assert [r["field"] for r in bundle["relations"]] == ["author"]
    people = await member.ok("get", "/collections/people/schema")
    assert [f["field"] for f in people["fields"]] == ["name"]
    full = await admin.ok("get", "/collections/people/schema")
    assert {f["field"] for f in full["fields"]} == {"name", "salary"}
    rels = await member.ok("get", "/relations")
    assert [(r["collection"], r["field"]) for r in rels] == [("posts", "author")]


async def test_relation_through_a_hidden_field_is_hidden(shared_site, schema):
    admin, _ = schema
    await admin.field("people", "boss", "uuid")
    rel = await admin.relation(type="m2o", collection="people", field="boss", relatedCollection="vault")
    member = await _member(shared_site, admin, [{"collection": "people", "action": "read", "fields": ["name"]}])
    assert rel["id"] not in {r["id"] for r in await member.ok("get", "/relations")}
    await member.err("get", f"/relations/{rel['id']}", 404, "NOT_FOUND")
    assert (await admin.ok("get", f"/relations/{rel['id']}"))["field"] == "boss"


async def test_site_admin_sees_everything(shared_site, schema):
    admin, _ = schema
    site = admin.headers["X-Svc-Site"]
    from kernel.testing import Calls, new_member

    made = await new_member(shared_site.app, site, "admin")
    site_admin = Calls(shared_site.app.client, made.headers)
    assert {c["name"] for c in await site_admin.ok("get", "/collections")} == {"posts", "people", "vault"}
    assert "secret_note" in {f["field"] for f in await site_admin.ok("get", "/fields/posts")}


async def test_cross_tenant_member_sees_nothing_of_another_site(shared_site, schema):
    admin, member = schema
    other = await shared_site.new_site("vis2")
    await other.collection("elsewhere", {"x": "string"})
    headers = {**member.headers, "X-Svc-Site": other.headers["X-Svc-Site"]}
    resp = await shared_site.app.client.get("/api/v1/fields", headers=headers)
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (401, "UNAUTHENTICATED") and "elsewhere" not in resp.text
