"""Queries and mutations over the generated schema: lists with every argument, detail, nested
m2o/o2m, ``_data``, ``_collections``, create/update/delete through the items API."""

from __future__ import annotations

import pytest_asyncio

from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugin_tests.graphql.conftest import codes, gql, seed_blog

# The tests share the module's app, each in a new site of its own (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


@pytest_asyncio.fixture(loop_scope="module")  # graphql/conftest.py's, on the shared app's loop
async def blog(calls: Calls) -> Calls:
    await seed_blog(calls)
    return calls


async def test_list_with_filter_sort_limit(blog: Calls):
    body = await gql(blog, "{ posts(limit: 25, filter: {views: {_gt: 500}}, sort: [\"-views\"]) { id title views } }")
    assert body == {"data": {"posts": [{"id": "p3", "title": "Third", "views": 900},
                                       {"id": "p2", "title": "Second post", "views": 600}]}}
    body = await gql(blog, "query($f: JSON, $n: Int) { posts(filter: $f, limit: $n, offset: 1, sort: [\"id\"]) { id } }",
                     {"f": {"views": {"_lt": 1000}}, "n": 1})
    assert body["data"]["posts"] == [{"id": "p2"}]


async def test_detail_nested_and_data(blog: Calls):
    body = await gql(blog, """{ posts_by_id(id: "p1") { id title author { name rank } notes(limit: 1, offset: 1) { body }
                                 _data } }""")
    post = body["data"]["posts_by_id"]
    assert post["author"] == {"name": "Ann", "rank": 1}
    assert post["notes"] == [{"body": "second"}]
    assert post["_data"] == {"title": "Hello world", "views": 10, "author": "ann", "meta": {"k": 1}}
    body = await gql(blog, '{ posts_by_id(id: "p3") { author { name } notes { id } } }')
    assert body["data"]["posts_by_id"] == {"author": None, "notes": []}
    body = await gql(blog, '{ posts_by_id(id: "nope") { id } }')
    assert body["data"] == {"posts_by_id": None} and codes(body) == ["NOT_FOUND"]


async def test_collections_and_structural_columns(blog: Calls):
    body = await gql(blog, "{ _collections posts(limit: 1, sort: [\"id\"]) { id status sort createdAt updatedAt userCreated } }")
    assert body["data"]["_collections"] == ["authors", "notes", "posts"]
    row = body["data"]["posts"][0]
    assert row["id"] == "p1" and row["createdAt"].endswith("Z") and isinstance(row["userCreated"], str)


async def test_mutations_create_update_delete(blog: Calls):
    body = await gql(blog, 'mutation { create_posts(data: {title: "New", views: 1, author: "bob"}, status: "draft") '
                           '{ id title status author { name } } }')
    created = body["data"]["create_posts"]
    assert created["title"] == "New" and created["status"] == "draft" and created["author"] == {"name": "Bob"}
    body = await gql(blog, "mutation($id: ID!, $d: JSON) { update_posts(id: $id, data: $d) { id views } }",
                     {"id": created["id"], "d": {"views": 7}})
    assert body["data"]["update_posts"] == {"id": created["id"], "views": 7}
    body = await gql(blog, "mutation($id: ID!) { delete_posts(id: $id) }", {"id": created["id"]})
    assert body == {"data": {"delete_posts": True}}
    await blog.err("get", f"/items/posts/{created['id']}", 404, "RECORD_NOT_FOUND")
    # Validation of the items API, with its path.
    body = await gql(blog, 'mutation { create_posts(data: {views: "many"}) { id } }')
    assert codes(body) == ["VALIDATION"] and body["errors"][0]["extensions"]["status"] == 400


async def test_search(blog: Calls):
    body = await gql(blog, '{ posts(search: "post") { id } }')
    assert body["data"]["posts"] == [{"id": "p2"}]
    body = await gql(blog, '{ posts(search: "world", filter: {views: {_gt: 100}}) { id } }')
    assert body["data"]["posts"] == []


async def test_singleton_read_and_upsert(calls: Calls):
    await calls.collection("home", {"title": {"type": "string", "options": {"default": "Home"}},
                                    "motto": "string"}, singleton=True)
    body = await gql(calls, "{ home { id title motto } }")
    assert body == {"data": {"home": {"id": None, "title": "Home", "motto": None}}}
    body = await gql(calls, 'mutation { update_home(data: {motto: "hi"}) { id motto } }')
    first = body["data"]["update_home"]
    assert first["id"] and first["motto"] == "hi"
    body = await gql(calls, 'mutation { update_home(data: {title: "Start"}) { id title motto } }')
    assert body["data"]["update_home"] == {"id": first["id"], "title": "Start", "motto": "hi"}
    assert (await calls.ok("get", "/items/home"))["title"] == "Start"
    # No list, detail, create or delete for a singleton.
    for query in ('{ home_by_id(id: "x") { id } }', 'mutation { create_home(data: {}) { id } }',
                  'mutation { delete_home(id: "x") }', "{ home(limit: 1) { id } }"):
        assert codes(await gql(calls, query)) == ["VALIDATION"], query
