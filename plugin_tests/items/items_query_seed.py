"""The blog every ``test_items_query_*`` module reads: authors <- posts.author (m2o), posts <-
remarks.post (m2o, with the o2m alias ``posts.comments``; ``comments`` is a reserved collection name)."""

from __future__ import annotations

from typing import Any

from kernel.testing import Calls

AUTHORS = [{"id": "ann", "name": "Ann", "email": "ann@example.com", "rank": 1},
           {"id": "bob", "name": "Bob", "email": "bob@example.com", "rank": 2},
           {"id": "cat", "name": "Cat", "email": "cat@example.com", "rank": 3}]
POSTS = [{"id": "p1", "title": "Hello", "views": 10, "category": "news", "author": "ann",
          "meta": {"kind": "a", "n": 1}, "tags": ["x", "y"]},
         {"id": "p2", "title": "World", "views": 30, "category": "tech", "author": "bob",
          "meta": {"kind": "b", "n": 2}, "tags": ["y"]},
         {"id": "p3", "title": "Again", "views": 20, "category": "news", "author": "ann", "tags": []},
         {"id": "p4", "title": "Orphan", "views": 5}]
COMMENTS = [{"id": "c1", "post": "p1", "body": "first", "score": 1},
            {"id": "c2", "post": "p1", "body": "second", "score": 5},
            {"id": "c3", "post": "p2", "body": "third", "score": 3},
            {"id": "c4", "post": "p1", "body": "fourth", "score": 2}]


async def blog(calls: Calls) -> None:
    await calls.collection("authors", {"name": "string", "email": "string", "rank": "integer"})
    await calls.collection("posts", {"title": "string", "views": "integer", "category": "string", "meta": "json",
                                     "tags": "json", "author": "string"})
    await calls.collection("remarks", {"body": "text", "post": "string", "score": "integer"})
    await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="authors")
    await calls.relation(type="m2o", collection="remarks", field="post", relatedCollection="posts",
                         relatedField="comments")
    await calls.create("authors", AUTHORS)
    await calls.create("posts", POSTS)
    await calls.create("remarks", COMMENTS)


def ids(body: dict[str, Any]) -> list[str]:
    return [item["id"] for item in body["data"]]
