"""A member cannot learn through GraphQL that a field it may not read exists: such a field answers
exactly as a field that does not exist (same code, same message, no "Did you mean"), in queries,
mutations (selection and ``data``), subscriptions, ``filter`` and ``sort`` (the schema is the
site's; each member validates against it without the fields its read permissions hide)."""

from __future__ import annotations

import json
from typing import Any

import pytest_asyncio
from httpx_sse import aconnect_sse

from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugin_tests.graphql.conftest import gql, seed_blog

# Every test reads its own blog in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


@pytest_asyncio.fixture(loop_scope="module")  # graphql/conftest.py's, on the shared app's loop
async def blog(calls: Calls) -> Calls:
    await seed_blog(calls)
    return calls


# posts has title, views, author, meta and the o2m alias notes; the member reads title and author
# only, may create and update title only, and reads nothing of authors.
RULES = [{"collection": "posts", "action": "read", "fields": ["title", "author"]},
         {"collection": "posts", "action": "create", "fields": ["title"]},
         {"collection": "posts", "action": "update", "fields": ["title"]},
         {"collection": "notes", "action": "read"}]


def same(hidden: dict[str, Any], missing: dict[str, Any], hidden_name: str, missing_name: str) -> None:
    """The two answers are one answer with the names swapped."""
    assert "Did you mean" not in json.dumps(hidden)
    assert json.dumps(hidden).replace(hidden_name, "NAME") == json.dumps(missing).replace(missing_name, "NAME")


async def both(user: Calls, template: str, hidden: str = "views", missing: str = "nope") -> dict[str, Any]:
    a = await gql(user, template.replace("NAME", hidden))
    b = await gql(user, template.replace("NAME", missing))
    same(a, b, hidden, missing)
    return a


async def test_a_hidden_field_answers_as_a_missing_one_in_queries(blog: Calls, member):
    user = await member(RULES)
    body = await both(user, '{ posts { id NAME } }')
    assert body["data"] is None and body["errors"][0]["extensions"]["code"] == "VALIDATION"
    assert body["errors"][0]["message"] == "Cannot query field 'views' on type 'posts'."
    await both(user, '{ posts_by_id(id: "p1") { NAME } }')
    await both(user, '{ posts { NAME { id } } }')  # a selection under it: as unknown, not "a scalar"
    await both(user, '{ posts { NAME(limit: 1) } }')  # an argument: as unknown, not "unknown argument"
    await both(user, '{ posts { notes { id } NAME } }', hidden="status")  # a structural column
    await both(user, '{ posts { NAME } }', hidden="notes")  # an o2m alias
    # A collection it may not read at all: its fields are hidden too (id stays: the read is refused).
    await both(user, '{ posts { author { NAME } } }', hidden="name")
    await both(user, '{ authors { NAME } }', hidden="rank")
    assert (await gql(user, '{ authors { id } }'))["errors"][0]["extensions"]["code"] == "PERMISSION_DENIED"
    # What it may read still answers.
    body = await gql(user, '{ posts(sort: ["title"], limit: 1) { id title _data } }')
    assert body == {"data": {"posts": [{"id": "p1", "title": "Hello world",
                                        "_data": {"title": "Hello world", "author": "ann"}}]}}


async def test_fragments_and_aliases_do_not_tell_either(blog: Calls, member):
    user = await member(RULES)
    await both(user, '{ posts { ...f } } fragment f on posts { NAME }')
    await both(user, '{ posts { a: title a: NAME } }')


async def test_admins_see_the_whole_schema(blog: Calls):
    body = await gql(blog, '{ posts(sort: ["id"], limit: 1) { views status author { name } } }')
    assert body == {"data": {"posts": [{"views": 10, "status": "published", "author": {"name": "Ann"}}]}}


async def test_mutations_selection_and_data(blog: Calls, member):
    user = await member(RULES)
    await both(user, 'mutation { create_posts(data: {title: "x"}) { id NAME } }')
    await both(user, 'mutation { update_posts(id: "p1", data: {title: "x"}) { NAME } }')
    # data naming a field it may neither read nor write: as an unknown field (400), REST too.
    body = await both(user, 'mutation { create_posts(data: {title: "x", NAME: 1}) { id } }')
    assert body["errors"][0]["extensions"]["code"] == "VALIDATION", body
    body = await both(user, 'mutation { update_posts(id: "p1", data: {NAME: 1}) { id } }')
    assert body["errors"][0]["extensions"]["status"] == 400, body
    views = await user.err("post", "/items/posts", 400, "VALIDATION_FAILED", json={"title": "x", "views": 1})
    nope = await user.err("post", "/items/posts", 400, "VALIDATION_FAILED", json={"title": "x", "nope": 1})
    assert views["message"].replace("views", "N") == nope["message"].replace("nope", "N")
    # A field it may read but not write is no secret: that answer stays 403 field_policy.
    body = await gql(user, 'mutation { create_posts(data: {title: "x", author: "ann"}) { id } }')
    assert body["errors"][0]["extensions"]["reason"] == "field_policy"
    assert len((await blog.list("posts"))["data"]) == 3


async def test_filter_and_sort_arguments(blog: Calls, member):
    user = await member(RULES)
    body = await both(user, '{ posts(filter: {NAME: {_eq: 10}}) { id } }')
    assert body["data"] is None and body["errors"], body
    await both(user, '{ posts(filter: {_and: [{title: {_eq: "x"}}, {NAME: {_gt: 1}}]}) { id } }')
    await both(user, '{ posts(filter: {author: {NAME: {_eq: "Ann"}}}) { id } }', hidden="name")
    await both(user, '{ posts(sort: ["NAME"]) { id } }')
    await both(user, '{ posts(sort: ["-NAME"]) { id } }')
    await both(user, '{ notes(filter: {post: {NAME: {_eq: 1}}}) { id } }')


async def test_subscriptions(blog: Calls, member, svc_app):
    user = await member(RULES)
    answers = []
    for name in ("views", "nope"):
        query = f"subscription S {{ posts_events {{ action }} }} query Q {{ posts {{ {name} }} }}"
        async with aconnect_sse(svc_app.client, "POST", "/api/v1/graphql",
                                headers={**user.headers, "Accept": "text/event-stream"},
                                json={"query": query, "operationName": "S"}) as events:
            answers.append([(sse.event, sse.data) async for sse in events.aiter_sse()])
    assert answers[0][0][0] == "next" and "Cannot query field 'views'" in answers[0][0][1]
    assert json.dumps(answers[0]).replace("views", "N") == json.dumps(answers[1]).replace("nope", "N")
