"""One data path: GraphQL meets the items API's permissions, field masks, row conditions and
validation, nested reads included, and ``_data`` is masked as REST masks it."""

from __future__ import annotations

import pytest_asyncio

from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugin_tests.graphql.conftest import codes, gql, seed_blog

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


@pytest_asyncio.fixture(loop_scope="module")  # graphql/conftest.py's, on the shared app's loop
async def blog(calls: Calls) -> Calls:
    await seed_blog(calls)
    return calls


async def test_field_mask_and_data(blog: Calls, member):
    user = await member([{"collection": "posts", "action": "read", "fields": ["title", "author"]}])
    body = await gql(user, '{ posts(sort: ["id"]) { id title _data } }')
    assert body["data"]["posts"][0] == {"id": "p1", "title": "Hello world", "_data": {"title": "Hello world",
                                                                                       "author": "ann"}}
    rest = await user.get("posts", "p1")
    assert {k: v for k, v in rest.items() if k not in ("id", "status")} == body["data"]["posts"][0]["_data"]
    # A field it may not read answers as one that does not exist (test_graphql_probing.py).
    body = await gql(user, '{ posts { id views } }')
    assert body["data"] is None and codes(body) == ["VALIDATION"]
    # Nested: no read permission on authors: its fields are hidden too; REST's fields=author.name 403.
    body = await gql(user, '{ posts_by_id(id: "p1") { author { name } } }')
    assert body["data"] is None and codes(body) == ["VALIDATION"]
    await user.err("get", "/items/posts/p1", 403, "PERMISSION_DENIED", params={"fields": "author.name"})


async def test_row_conditions_and_writes(blog: Calls, member):
    user = await member([{"collection": "posts", "action": "read", "conditions": {"views": {"_gt": 100}}},
                         {"collection": "notes", "action": "read"}])
    body = await gql(user, '{ posts(sort: ["id"]) { id notes { id } } notes(sort: ["id"]) { id post { id } } }')
    assert body["data"]["posts"] == [{"id": "p2", "notes": [{"id": "n3"}]}, {"id": "p3", "notes": []}]
    assert body["data"]["notes"] == [{"id": "n1", "post": None}, {"id": "n2", "post": None},
                                     {"id": "n3", "post": {"id": "p2"}}]
    body = await gql(user, 'mutation { create_posts(data: {title: "x"}) { id } }')
    assert body["data"] is None and codes(body) == ["PERMISSION_DENIED"]
    body = await gql(user, 'mutation { delete_notes(id: "n1") }')
    assert codes(body) == ["PERMISSION_DENIED"]
    assert len((await blog.list("notes"))["data"]) == 3
    assert (await gql(user, '{ _collections }'))["data"]["_collections"] == ["notes", "posts"]


async def test_anonymous_uses_public_role(blog: Calls, anon_calls: Calls):
    body = await gql(anon_calls, "{ posts { id } }")
    assert body["data"] is None and codes(body) == ["PERMISSION_DENIED"]
    assert (await gql(anon_calls, "{ _collections }"))["data"] == {"_collections": []}


async def test_write_events_and_hooks(blog: Calls, record_events):
    recorder = record_events("posts.items.*")
    body = await gql(blog, 'mutation { create_posts(data: {title: "e"}) { id } }')
    new_id = body["data"]["create_posts"]["id"]
    await gql(blog, 'mutation($id: ID!) { update_posts(id: $id, data: {title: "f"}) { id } }', {"id": new_id})
    await gql(blog, 'mutation($id: ID!) { delete_posts(id: $id) }', {"id": new_id})
    assert [e for e, _, _ in recorder.events] == ["posts.items.create", "posts.items.update", "posts.items.delete"]


async def test_invalid_filter(blog: Calls):
    body = await gql(blog, '{ posts(filter: {views: {_nope: 1}}) { id } }')
    assert body["data"] is None and codes(body) == ["INVALID_FILTER"]
    body = await gql(blog, '{ posts(filter: 5) { id } }')
    assert codes(body) == ["VALIDATION"]
    body = await gql(blog, '{ posts(sort: ["nope"]) { id } }')
    assert codes(body) == ["VALIDATION"]
