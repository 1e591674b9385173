"""Aggregates through HTTP: the shapes of docs/decisions/items-query-semantics.md (Aggregates) with and
without ``groupBy``, both forms of
each parameter, filters applied first, groups paged by ``limit``/``offset``, no ``meta``."""

from __future__ import annotations

import json

import pytest

from kernel.testing import Calls


@pytest.fixture
def posts(shared_posts: Calls) -> Calls:
    """The blog, made once on the module's shared app (items/conftest.py): these tests only read it."""
    return shared_posts


async def agg(calls: Calls, collection: str = "posts", **params) -> list:
    body = await calls.list(collection, **params)
    assert "meta" not in body
    return body["data"]


async def test_shapes_without_group_by(posts: Calls):
    assert await agg(posts, **{"aggregate[count]": "*"}) == [{"count": 4}]
    assert await agg(posts, aggregate='{"count": "*"}') == [{"count": 4}]
    assert await agg(posts, aggregate='{"count": ["*"]}') == [{"count": 4}]
    assert await agg(posts, **{"aggregate[sum]": "views"}) == [{"sum": {"views": 65}}]
    assert await agg(posts, **{"aggregate[avg]": "views", "aggregate[max]": "views,title"}) == [
        {"avg": {"views": 16.25}, "max": {"views": 30, "title": "World"}}]
    # count of a field counts its values; beside "*" both appear.
    assert await agg(posts, **{"aggregate[count]": "category"}) == [{"count": {"category": 3}}]
    assert await agg(posts, **{"aggregate[count]": "*,category"}) == [{"count": {"*": 4, "category": 3}}]
    assert await agg(posts, **{"aggregate[countDistinct]": "category"}) == [{"countDistinct": {"category": 2}}]
    assert await agg(posts, **{"aggregate[count][]": "*"}) == [{"count": 4}]
    # The filter comes first; an empty set counts 0 and sums to null.
    assert await agg(posts, **{"aggregate[count]": "*", "filter[views][_gt]": "15"}) == [{"count": 2}]
    assert await agg(posts, **{"aggregate[sum]": "views", "filter[views][_gt]": "99"}) == [{"sum": {"views": None}}]


async def test_shapes_with_group_by(posts: Calls):
    expected = [{"category": None, "sum": {"views": 5}}, {"category": "news", "sum": {"views": 30}},
                {"category": "tech", "sum": {"views": 30}}]
    assert await agg(posts, **{"aggregate[sum]": "views", "groupBy": "category"}) == expected
    assert await agg(posts, **{"aggregate[sum]": "views", "groupBy[]": "category"}) == expected
    assert await agg(posts, aggregate=json.dumps({"sum": ["views"]}), groupBy='["category"]') == expected
    two = await agg(posts, **{"aggregate[count]": "*", "groupBy": "category,author"})
    assert two == [{"category": None, "author": None, "count": 1}, {"category": "news", "author": "ann", "count": 2},
                   {"category": "tech", "author": "bob", "count": 1}]
    # JSON paths group too (null and missing are one group); groupBy alone lists the groups.
    assert await agg(posts, **{"aggregate[count]": "*", "groupBy": "meta.kind"}) == [
        {"meta.kind": None, "count": 2}, {"meta.kind": "a", "count": 1}, {"meta.kind": "b", "count": 1}]
    assert await agg(posts, groupBy="category") == [{"category": None}, {"category": "news"}, {"category": "tech"}]
    # Groups are paged like items.
    assert await agg(posts, limit=1, offset=1, **{"aggregate[count]": "*", "groupBy": "category"}) == [
        {"category": "news", "count": 2}]
    assert await agg(posts, "remarks", **{"aggregate[max]": "score", "groupBy": "post"}) == [
        {"post": "p1", "max": {"score": 5}}, {"post": "p2", "max": {"score": 3}}]


async def test_bad_aggregates_are_400(posts: Calls):
    for params, path in (({"aggregate[sum]": "title"}, ["query", "aggregate", "sum"]),
                         ({"aggregate[median]": "views"}, ["query", "aggregate", "median"]),
                         ({"aggregate[count]": "*", "groupBy": "author.name"}, ["query", "groupBy", "author.name"]),
                         ({"aggregate[min]": "nope"}, ["query", "aggregate", "min"])):
        await posts.err("get", "/items/posts", 400, "VALIDATION_FAILED", path, params=params)
