"""Relations in list queries: filters across m2o and o2m, sort through m2o, nested reads
(``fields`` with dotted paths, ``*.*``, o2m ids) with ``deep``, the depth cap, one query per
relation, and tenancy (a relation never reaches another site's items)."""

from __future__ import annotations

import pytest_asyncio
from items_query_seed import blog, ids

from kernel.tenancy import scope
from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# The tests share the module's app, each in a new site of its own (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


@pytest_asyncio.fixture(loop_scope="module")  # items/conftest.py's, on the shared app's loop
async def posts(calls: Calls) -> Calls:
    await blog(calls)
    return calls


async def test_filters_across_relations(posts: Calls):
    assert ids(await posts.list("posts", **{"filter[author][name][_eq]": "Ann"})) == ["p1", "p3"]
    assert ids(await posts.list("posts", **{"filter[author.name][_eq]": "Bob"})) == ["p2"]
    assert ids(await posts.list("posts", filter='{"author": {"rank": {"_gte": 2}}}')) == ["p2"]
    # o2m: some remark matches.
    assert ids(await posts.list("posts", **{"filter[comments][body][_eq]": "third"})) == ["p2"]
    assert ids(await posts.list("posts", filter='{"comments": {"score": {"_gt": 4}}}')) == ["p1"]
    # Back through the m2o of the related side, and an operator on the m2o field itself.
    assert ids(await posts.list("remarks", **{"filter[post][author][name][_eq]": "Bob"})) == ["c3"]
    assert ids(await posts.list("posts", **{"filter[author][_null]": "true"})) == ["p4"]
    body = await posts.list("posts", **{"filter[author][name][_starts_with]": "A", "aggregate[count]": "*"})
    assert body["data"] == [{"count": 2}]


async def test_sort_through_m2o(posts: Calls):
    # Nulls first ascending: the post without an author comes first; views break the tie.
    assert ids(await posts.list("posts", sort="author.name,-views")) == ["p4", "p3", "p1", "p2"]
    assert ids(await posts.list("posts", sort="-author.rank,id")) == ["p2", "p1", "p3", "p4"]
    assert ids(await posts.list("remarks", sort="post.author.name,-score")) == ["c2", "c4", "c1", "c3"]


async def test_nested_m2o_and_o2m(posts: Calls):
    body = await posts.list("posts", fields="title,author.name", limit=2)
    assert body["data"] == [{"id": "p1", "title": "Hello", "author": {"id": "ann", "name": "Ann"}},
                            {"id": "p2", "title": "World", "author": {"id": "bob", "name": "Bob"}}]
    orphan = await posts.get("posts", "p4", params={"fields": "author.*"})
    assert orphan == {"id": "p4", "author": None}
    full = await posts.get("posts", "p1", params={"fields": "author.*"})
    assert full["author"]["email"] == "ann@example.com" and full["author"]["status"] == "published"
    body = await posts.list("posts", fields="id,comments.body,comments.score", limit=2)
    assert body["data"] == [{"id": "p1", "comments": [{"id": "c1", "body": "first", "score": 1},
                                                      {"id": "c2", "body": "second", "score": 5},
                                                      {"id": "c4", "body": "fourth", "score": 2}]},
                            {"id": "p2", "comments": [{"id": "c3", "body": "third", "score": 3}]}]
    # An o2m alias alone: the related ids; a post without remarks: an empty list.
    assert (await posts.get("posts", "p3", params={"fields": "comments"})) == {"id": "p3", "comments": []}
    assert (await posts.get("posts", "p1", params={"fields": "comments"}))["comments"] == ["c1", "c2", "c4"]
    # Two levels: remark -> post -> author; and back down post -> remarks -> post.
    remark = await posts.get("remarks", "c3", params={"fields": "body,post.title,post.author.name"})
    assert remark == {"id": "c3", "body": "third", "post": {"id": "p2", "title": "World",
                                                            "author": {"id": "bob", "name": "Bob"}}}
    item = await posts.get("posts", "p2", params={"fields": "comments.post.title"})
    assert item == {"id": "p2", "comments": [{"id": "c3", "post": {"id": "p2", "title": "World"}}]}


async def test_star_star_reads_every_relation_one_level(posts: Calls):
    item = await posts.get("posts", "p2", params={"fields": "*.*"})
    assert item["title"] == "World" and item["meta"] == {"kind": "b", "n": 2}
    assert item["author"]["name"] == "Bob" and item["author"]["rank"] == 2
    assert [c["body"] for c in item["comments"]] == ["third"] and item["comments"][0]["post"] == "p2"
    # ``*`` is every field of its level: ``*.name`` is all of the post, its relations with their name.
    item = await posts.get("posts", "p2", params={"fields": "*.name"})
    assert item["title"] == "World" and item["author"] == {"id": "bob", "name": "Bob"}
    assert item["comments"] == [{"id": "c3"}]
    item = await posts.get("posts", "p2", params={"fields": "title,author.*"})
    assert set(item) == {"id", "title", "author"} and item["author"]["email"] == "bob@example.com"


async def test_deep_on_o2m(posts: Calls):
    def one(body):
        return body["data"][0]["comments"]

    base = {"fields": "id,comments.id", "filter[id][_eq]": "p1"}
    assert one(await posts.list("posts", **base, **{"deep[comments][_sort]": "-score"})) == [
        {"id": "c2"}, {"id": "c4"}, {"id": "c1"}]
    assert one(await posts.list("posts", **base, **{"deep[comments][_limit]": "2", "deep[comments][_offset]": "1"})) == [
        {"id": "c2"}, {"id": "c4"}]
    assert one(await posts.list("posts", **base, **{"deep[comments][_page]": "2", "deep[comments][_limit]": "2"})) == [
        {"id": "c4"}]
    assert one(await posts.list("posts", **base, **{"deep[comments][_filter][score][_gt]": "1"})) == [
        {"id": "c2"}, {"id": "c4"}]
    assert one(await posts.list("posts", **base, deep='{"comments": {"_filter": {"body": {"_contains": "ir"}}}}')) == [
        {"id": "c1"}, {"id": "c3"}][:1]
    # Limits apply per parent, in one query for the whole page.
    body = await posts.list("posts", fields="id,comments.id", **{"deep[comments][_limit]": "1"})
    assert [len(p["comments"]) for p in body["data"]] == [1, 1, 0, 0]
    # deep on an m2o: its filter hides the related item (null), like a row filter.
    body = await posts.list("posts", fields="id,author.name", **{"deep[author][_filter][rank][_eq]": "2"})
    assert [p["author"] for p in body["data"]] == [None, {"id": "bob", "name": "Bob"}, None, None]
    # get-one takes deep too.
    item = await posts.get("posts", "p1", params={"fields": "comments.body", "deep[comments][_limit]": "1",
                                                  "deep[comments][_sort]": "-body"})
    assert item == {"id": "p1", "comments": [{"id": "c2", "body": "second"}]}


async def test_depth_cap_and_bad_paths(posts: Calls):
    ok = await posts.get("remarks", "c1", params={"fields": "post.comments.post.title"})
    assert ok["post"]["comments"][0]["post"]["title"] == "Hello"
    assert (await posts.get("remarks", "c1", params={"fields": "*.*.*.*"}))["post"]["comments"][0]["post"]["id"] == "p1"
    for fields in ("post.comments.post.author.name", "*.*.*.*.*"):
        await posts.err("get", "/items/remarks", 400, "VALIDATION_FAILED", ["query", "fields"], params={"fields": fields})
    await posts.err("get", "/items/posts", 400, "VALIDATION_FAILED", ["query", "fields"], params={"fields": "views.x"})
    await posts.err("get", "/items/posts", 400, "VALIDATION_FAILED", ["query", "deep", "title"],
                    params={"deep[title][_limit]": "1"})


async def test_one_query_per_relation(posts: Calls, monkeypatch):
    await posts.create("remarks", [{"post": f"p{i % 4 + 1}", "body": str(i), "score": i} for i in range(40)])
    statements: list[str] = []
    real = scope.SiteDB.execute

    async def counted(self, stmt, args=None):
        statements.append(str(stmt))
        return await real(self, stmt, args)

    monkeypatch.setattr(scope.SiteDB, "execute", counted)
    body = await posts.list("posts", fields="title,author.name,comments.body,comments.post.author.name", meta="none")
    assert len(body["data"]) == 4 and len(body["data"][0]["comments"]) == 13
    # The page, the authors, the remarks, the remarks' posts, those posts' authors.
    assert len(statements) == 5, statements


async def test_relations_stay_in_their_site(posts: Calls, calls_b: Calls):
    await blog(calls_b)
    await calls_b.ok("patch", "/items/authors/ann", json={"name": "Ann of B"})
    await calls_b.create("authors", {"id": "zed", "name": "Zed"})
    await calls_b.create("remarks", {"id": "cb", "post": "p3", "body": "from b"})
    await posts.ok("patch", "/items/posts/p4", json={"author": "zed"})
    item = await posts.get("posts", "p1", params={"fields": "author.name"})
    assert item["author"] == {"id": "ann", "name": "Ann"}
    assert (await posts.get("posts", "p4", params={"fields": "author.name"}))["author"] is None
    assert (await posts.get("posts", "p3", params={"fields": "comments.body"}))["comments"] == []
    assert ids(await posts.list("posts", **{"filter[author][name][_eq]": "Zed"})) == []
    assert ids(await posts.list("posts", **{"filter[comments][body][_eq]": "from b"})) == []
    assert ids(await posts.list("posts", sort="author.name")) == ["p4", "p1", "p3", "p2"]
