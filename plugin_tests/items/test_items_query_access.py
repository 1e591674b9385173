"""Permissions in list queries: every name a filter, sort, groupBy or aggregate touches must be
readable (403 ``field_policy``, through relations too); row filters apply to lists, counts,
aggregates and nested reads; nested items are masked by their own collection's permission."""

from __future__ import annotations

import pytest
import pytest_asyncio
from items_query_seed import blog, ids

from kernel.testing import Calls, SharedSite
from kernel.testing import shared as testing_shared

# The tests share the module's app, each in a new site of its own (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

POSTS_FIELDS = ["title", "views", "author", "category", "comments"]  # an o2m alias is listed like a field


READER_RULES = [
    {"collection": "posts", "action": "read", "fields": POSTS_FIELDS},
    {"collection": "authors", "action": "read", "fields": ["name", "rank"], "conditions": {"rank": {"_lt": 2}}},
    {"collection": "remarks", "action": "read", "fields": ["*"], "conditions": {"score": {"_gt": 1}}},
]


@pytest_asyncio.fixture(loop_scope="module")  # on the shared app's loop
async def reader(calls: Calls, member) -> Calls:
    """A member who reads posts (no meta/tags), authors (no email; ranks below 3) and remarks
    (score above 1)."""
    await blog(calls)
    user, _ = await member(READER_RULES)
    return user


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_reader(shared_posts: Calls, shared_site: SharedSite) -> Calls:
    """The same reader, of the module's shared blog."""
    return await shared_site.member(READER_RULES)


HIDDEN = [
    ({"filter[meta][kind][_eq]": "a"}, "meta"),
    ({"filter": '{"_or": [{"title": {"_eq": "x"}}, {"tags": {"_null": true}}]}'}, "tags"),
    ({"filter[status][_eq]": "published"}, "status"),
    ({"sort": "-tags"}, "tags"),
    ({"sort": "title,createdAt"}, "createdAt"),
    ({"groupBy": "meta.kind", "aggregate[count]": "*"}, "meta"),
    ({"groupBy[]": "category", "aggregate[countDistinct]": "tags"}, "tags"),
    ({"aggregate[count]": "meta"}, "meta"),
    ({"aggregate": '{"max": "sort"}'}, "sort"),
    ({"fields": "title,tags"}, "tags"),
    # through relations
    ({"filter[author][email][_eq]": "ann@example.com"}, "email"),
    ({"filter[author.email][_nnull]": "true"}, "email"),
    ({"sort": "author.email"}, "email"),
    ({"fields": "author.email"}, "email"),
    ({"filter[comments][userCreated][_nnull]": "true", "fields": "title"}, None),
]


@pytest.mark.parametrize(("params", "field"), HIDDEN, ids=range(len(HIDDEN)))
async def test_hidden_fields_are_403_everywhere(shared_reader: Calls, params, field):
    reader = shared_reader
    if field is None:  # remarks are readable with every field: allowed
        await reader.ok("get", "/items/posts", params=params)
        return
    error = await reader.err("get", "/items/posts", 403, "PERMISSION_DENIED", params=params)
    assert error["extensions"] == {"code": "PERMISSION_DENIED", "reason": "field_policy", "field": field}


async def test_unreadable_collection_through_a_relation(calls: Calls, member):
    await blog(calls)
    user, _ = await member([{"collection": "posts", "action": "read"}])
    for params in ({"filter[author][name][_eq]": "Ann"}, {"sort": "author.name"}, {"fields": "author.name"},
                   {"fields": "comments.body"}, {"filter[comments][body][_eq]": "x"}, {"fields": "comments"}):
        await user.err("get", "/items/posts", 403, "PERMISSION_DENIED", params=params)
    # ``*.*`` reads what it may: the relations stay as stored (the o2m alias is absent).
    item = await user.get("posts", "p1", params={"fields": "*.*"})
    assert item["author"] == "ann" and "comments" not in item
    # The o2m foreign key must be readable to read the relation from the other side, and the
    # alias itself on this side.
    user2, _ = await member([{"collection": "posts", "action": "read"},
                             {"collection": "remarks", "action": "read", "fields": ["body"]}])
    error = await user2.err("get", "/items/posts", 403, "PERMISSION_DENIED", params={"fields": "comments.body"})
    assert error["extensions"]["field"] == "post"
    user3, _ = await member([{"collection": "posts", "action": "read", "fields": ["title"]},
                             {"collection": "remarks", "action": "read"}])
    error = await user3.err("get", "/items/posts", 403, "PERMISSION_DENIED", params={"fields": "comments.body"})
    assert error["extensions"]["field"] == "comments"


async def test_row_filters_apply_to_lists_counts_aggregates(reader: Calls):
    body = await reader.list("remarks", sort="id")
    assert ids(body) == ["c2", "c3", "c4"] and body["meta"]["total"] == 3
    assert (await reader.list("remarks", **{"aggregate[count]": "*"}))["data"] == [{"count": 3}]
    agg = await reader.list("remarks", **{"aggregate[sum]": "score", "groupBy": "post"})
    assert agg["data"] == [{"post": "p1", "sum": {"score": 7}}, {"post": "p2", "sum": {"score": 3}}]
    await reader.err("get", "/items/remarks/c1", 404, "RECORD_NOT_FOUND")
    # The filtered total with a row filter, past the end of the page too.
    body = await reader.list("remarks", limit=1, offset=5, **{"filter[score][_gte]": "2"})
    assert body["data"] == [] and body["meta"]["total"] == 3


async def test_nested_reads_are_masked_and_row_filtered(reader: Calls):
    body = await reader.list("posts", fields="title,author.*,comments.body")
    by_id = {p["id"]: p for p in body["data"]}
    # Authors: email masked; bob (rank 2) is outside the row filter, so null.
    assert by_id["p1"]["author"] == {"id": "ann", "name": "Ann", "rank": 1}
    assert by_id["p2"]["author"] is None and by_id["p4"]["author"] is None
    # Remarks: c1 (score 1) is invisible, so omitted.
    assert by_id["p1"]["comments"] == [{"id": "c2", "body": "second"}, {"id": "c4", "body": "fourth"}]
    assert by_id["p2"]["comments"] == [{"id": "c3", "body": "third"}]
    # Structural keys outside the rule's fields are masked like content (``*`` holds no alias).
    item = await reader.get("posts", "p1", params={"fields": "*"})
    assert set(item) == {"id", "title", "views", "author", "category"}
    # Filters and sorts through a relation see only what the caller may see.
    assert ids(await reader.list("posts", **{"filter[author][name][_eq]": "Bob"})) == []
    assert ids(await reader.list("posts", **{"filter[comments][body][_eq]": "first"})) == []
    assert ids(await reader.list("posts", sort="author.name,id")) == ["p2", "p4", "p1", "p3"]  # no visible author: NULL, first


async def test_public_role_reads_nested_with_its_own_rules(calls: Calls, anon_calls: Calls, public_grant):
    await blog(calls)
    await public_grant([{"collection": "posts", "action": "read", "fields": ["title", "author"]},
                        {"collection": "authors", "action": "read", "fields": ["name"]}])
    item = await anon_calls.get("posts", "p1", params={"fields": "title,author.*"})
    assert item == {"id": "p1", "title": "Hello", "author": {"id": "ann", "name": "Ann"}}
    await anon_calls.err("get", "/items/posts", 403, "PERMISSION_DENIED", params={"fields": "comments.body"})
    await anon_calls.err("get", "/items/remarks", 403, "PERMISSION_DENIED")
