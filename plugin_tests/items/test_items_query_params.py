"""The list parameters through HTTP, each in the spec's form and in Directus's JSON form:
filter, sort, page/limit/offset, meta, fields, deep; a Directus client's requests as its SDK
sends them; hostile query strings are a 4xx, never a 500."""

from __future__ import annotations

import json

import pytest
from items_query_seed import ids

from kernel.testing import Calls


async def test_filter_bracket_and_json_forms(posts: Calls):
    assert ids(await posts.list("posts", **{"filter[category][_eq]": "news"})) == ["p1", "p3"]
    assert ids(await posts.list("posts", filter=json.dumps({"category": {"_eq": "news"}}))) == ["p1", "p3"]
    # Both present: the JSON form wins (rule 3).
    both = {"filter": json.dumps({"views": {"_gte": 20}}), "filter[category][_eq]": "news"}
    assert ids(await posts.list("posts", **both)) == ["p2", "p3"]
    # Logical groups with an index segment; bracket values are coerced (20 is a number).
    body = await posts.list("posts", **{"filter[_or][0][views][_gt]": "20", "filter[_or][1][title][_eq]": "Orphan"})
    assert ids(body) == ["p2", "p4"] and body["meta"]["total"] == 2
    assert ids(await posts.list("posts", **{"filter[views][_between]": "10,20"})) == ["p1", "p3"]
    assert ids(await posts.list("posts", **{"filter[category][_in]": "tech,none"})) == ["p2"]
    assert ids(await posts.list("posts", **{"filter[category][_null]": "true"})) == ["p4"]
    # Dotted JSON paths and JSON operators.
    assert ids(await posts.list("posts", **{"filter[meta.kind][_eq]": "b"})) == ["p2"]
    assert ids(await posts.list("posts", filter='{"meta": {"n": {"_gte": 1}}}')) == ["p1", "p2"]
    assert ids(await posts.list("posts", filter='{"tags": {"_json_contains": ["y"]}}')) == ["p1", "p2"]
    assert ids(await posts.list("posts", **{"filter[meta][_has_key]": "n"})) == ["p1", "p2"]
    # A malformed bracket key is ignored (rule 4); malformed JSON is 400 VALIDATION.
    assert ids(await posts.list("posts", **{"filter[views][_gt": "1"})) == ["p1", "p2", "p3", "p4"]
    await posts.err("get", "/items/posts", 400, "VALIDATION", ["query", "filter"], params={"filter": "{nope"})
    await posts.err("get", "/items/posts", 400, "VALIDATION_FAILED", params={"filter[nope][_eq]": "1"})


async def test_sort_forms(posts: Calls):
    expected = ["p2", "p3", "p1", "p4"]
    assert ids(await posts.list("posts", sort="-views")) == expected
    # p4 has no category: NULL sorts first.
    assert ids(await posts.list("posts", **{"sort[]": ["category", "-views"]})) == ["p4", "p3", "p1", "p2"]
    assert ids(await posts.list("posts", sort="category,-views")) == ["p4", "p3", "p1", "p2"]
    assert ids(await posts.list("posts", sort='["category", "-views"]')) == ["p4", "p3", "p1", "p2"]
    # Keys after id change nothing (ids are unique).
    assert ids(await posts.list("posts", sort="-id,views")) == ["p4", "p3", "p2", "p1"]
    assert ids(await posts.list("posts", sort="meta.n")) == ["p3", "p4", "p1", "p2"]  # no meta.n first


async def test_paging_and_meta(posts: Calls):
    body = await posts.list("posts", limit=2, page=2)
    assert ids(body) == ["p3", "p4"] and body["meta"] == {"total": 4, "limit": 2, "offset": 2}
    body = await posts.list("posts", limit=1, offset=1, meta="none")
    assert ids(body) == ["p2"] and body["meta"] == {"limit": 1, "offset": 1}
    for meta in ("total_count", "filter_count", "*"):
        assert (await posts.list("posts", meta=meta, limit=1))["meta"]["total"] == 4
    # The total is the filtered one, also past the end of the list.
    body = await posts.list("posts", offset=10, **{"filter[category][_eq]": "news"})
    assert body["data"] == [] and body["meta"] == {"total": 2, "limit": 25, "offset": 10}
    body = await posts.list("posts", limit=1, **{"filter[category][_eq]": "news"})
    assert ids(body) == ["p1"] and body["meta"]["total"] == 2
    for bad in ({"limit": "0"}, {"limit": "201"}, {"offset": "-1"}, {"page": "0"}, {"meta": "everything"}):
        await posts.err("get", "/items/posts", 400, "VALIDATION_FAILED", ["query", next(iter(bad))], params=bad)


async def test_fields_forms(posts: Calls):
    want = [{"id": "p1", "title": "Hello", "views": 10}]
    assert (await posts.list("posts", fields="title,views", limit=1))["data"] == want
    assert (await posts.list("posts", **{"fields[]": ["title", "views"]}, limit=1))["data"] == want
    assert (await posts.list("posts", fields='["title", "views"]', limit=1))["data"] == want
    item = (await posts.list("posts", fields="*", limit=1))["data"][0]
    assert item["meta"] == {"kind": "a", "n": 1} and item["status"] == "published" and "createdAt" in item
    assert await posts.get("posts", "p2", params={"fields": "title"}) == {"id": "p2", "title": "World"}
    await posts.err("get", "/items/posts/p2", 400, "VALIDATION_FAILED", ["query", "fields"], params={"fields": "x"})
    # A one-item read ignores the list parameters it has no use for.
    assert (await posts.get("posts", "p2", params={"limit": "x", "sort": "nope"}))["id"] == "p2"


async def test_deep_forms(posts: Calls):
    bracket = {"fields": "id,comments.id", "deep[comments][_limit]": "1", "deep[comments][_sort]": "-score"}
    as_json = {"fields": "id,comments.id", "deep": json.dumps({"comments": {"_limit": 1, "_sort": ["-score"]}})}
    for params in (bracket, as_json):
        body = await posts.list("posts", **params, **{"filter[id][_eq]": "p1"})
        assert body["data"] == [{"id": "p1", "comments": [{"id": "c2"}]}]
    # The spec's unprefixed spelling.
    body = await posts.list("posts", **{"filter[id][_eq]": "p1", "deep[comments][fields]": "body",
                                        "deep[comments][limit]": "1"})
    assert body["data"][0]["comments"] == [{"id": "c1", "body": "first"}]


async def test_directus_client_requests(posts: Calls):
    """What the Directus SDK sends: JSON filter/deep/aggregate, ``fields[]``/``groupBy[]``, a
    ``Content-Type: application/json`` header on GET."""
    headers = {"Content-Type": "application/json"}
    params = [("fields[]", "id"), ("fields[]", "title"), ("fields[]", "author.name"),
              ("filter", json.dumps({"_and": [{"views": {"_gte": 10}}, {"author": {"name": {"_eq": "Ann"}}}]})),
              ("sort[]", "-views"), ("limit", "10"), ("meta", "total_count"),
              ("deep", json.dumps({"author": {"_filter": {"rank": {"_lt": 5}}}}))]
    resp = await posts.call("get", "/items/posts", params=params, headers=headers)
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"data": [{"id": "p3", "title": "Again", "author": {"id": "ann", "name": "Ann"}},
                                    {"id": "p1", "title": "Hello", "author": {"id": "ann", "name": "Ann"}}],
                           "meta": {"total": 2, "limit": 10, "offset": 0}}
    resp = await posts.call("get", "/items/posts", headers=headers,
                            params={"aggregate": json.dumps({"count": "*"}), "groupBy[]": "category"})
    assert resp.json()["data"] == [{"category": None, "count": 1}, {"category": "news", "count": 2},
                                   {"category": "tech", "count": 1}]
    resp = await posts.call("get", "/items/posts/p1", headers=headers, params={"fields": "title"})
    assert resp.json()["data"] == {"id": "p1", "title": "Hello"}
    resp = await posts.call("delete", "/items/posts/p4", headers=headers)
    assert resp.status_code == 204 and resp.content == b"" and "content-type" not in resp.headers


HOSTILE = [
    {"filter": "{"}, {"filter": "[1]"}, {"filter": "1"}, {"filter": '{"views": 1}'}, {"filter": '{"views": {"_gt": []}}'},
    {"filter": '{"_and": {}}'}, {"filter": "{" * 5000 + "}" * 5000}, {"filter": '{"a": {"_eq": "\\u0000"}}'},
    {"filter": json.dumps({"title": {"_in": ["x"] * 5000}})}, {"filter": '{"views": {"_gt": 1e999}}'},
    {"filter[views][_gt]": "x" * 20_000}, {"filter[" + "a." * 20 + "b][_eq]": "1"},
    {"filter[views][_nope]": "1"}, {"filter[title][_eq]": "\x00"}, {"filter[author][name][email][_eq]": "1"},
    {"filter[comments][_eq]": "1"}, {"filter": json.dumps({"author": {"author": {"author": {"author": {"id": {"_eq": 1}}}}}})},
    {"sort": "comments.body"}, {"sort": "author.nope"}, {"sort": "meta.a..b"}, {"sort": "\x00"},
    {"aggregate[nope]": "*"}, {"aggregate[sum]": "*"}, {"aggregate[sum]": "title"}, {"aggregate[sum]": "author.rank"},
    {"aggregate": "{"}, {"aggregate": "[1]"}, {"aggregate": '{"count": 1}'}, {"groupBy": "author.name"},
    {"groupBy": "a" * 300}, {"aggregate[count]": "*", "groupBy": "nope"},
    {"deep": "{"}, {"deep": "[]"}, {"deep": '{"comments": 1}'}, {"deep[comments][_limit]": "0"},
    {"deep[comments][_limit]": "x"}, {"deep[comments][_filter]": "{"}, {"deep[nope][_limit]": "1"},
    {"deep[comments][_sort]": "nope", "fields": "comments.body"}, {"deep": json.dumps({"a": {"b": {"c": {"d": {"e": {}}}}}})},
    {"fields": "*.*.*.*.*"}, {"fields": "comments.post.comments.post.title"}, {"fields": "title.x"},
    {"fields": "author.nope"}, {"fields": "a" * 30_000}, {"limit": "1e3"}, {"page": "-1"},
    {"offset": "9" * 40}, {"meta": "none,total_count"},
]


@pytest.mark.parametrize("params", HOSTILE, ids=range(len(HOSTILE)))
async def test_hostile_query_strings_are_400(shared_posts: Calls, params):
    posts = shared_posts
    resp = await posts.call("get", "/items/posts", params=params)
    assert resp.status_code == 400, (params, resp.text)
    assert resp.json()["errors"][0]["code"] in ("VALIDATION", "VALIDATION_FAILED")
    resp = await posts.call("get", "/items/posts/p1", params=params)
    # One item takes the read options (deep, fields) and refuses them alike; the listing's own
    # parameters (limit, page, offset, meta, filter, sort ...) do not apply to it and are ignored.
    expected = 400 if any(key.startswith(("deep", "fields")) for key in params) else 200
    assert resp.status_code == expected, (params, resp.text)


@pytest.mark.parametrize("query", ["fields=%ED%A0%80", "filter=%FF%FE", "filter[title][_eq]=%ED%A0%80", "sort=%C0",
                                   "deep=%7B%22comments%22%3A%7B%22_limit%22%3A%22%ED%A0%80%22%7D%7D",
                                   "filter=" + "%5B" * 3000])
async def test_raw_query_strings_never_500(shared_posts: Calls, query):
    resp = await shared_posts.call("get", f"/items/posts?{query}")
    # Bad UTF-8 is decoded with replacement characters: as a name (field, sort, filter key) or
    # the filter's JSON it is refused; as a filter's value it is a plain value matching nothing.
    expected = 200 if query.startswith("filter[title][_eq]=") else 400
    assert resp.status_code == expected, (query, resp.text)
