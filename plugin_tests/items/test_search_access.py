"""GET /search and permissions, tenancy and hostile input: what a caller may not read is never
found, never highlighted, never counted."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from kernel.testing import Calls


async def search(calls: Calls, q: str, **params: Any) -> dict[str, Any]:
    return await calls.ok("get", "/search", full=True, params={"q": q, **params})


def ids(answer: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in answer["data"]]


async def _setup(calls: Calls) -> None:
    await calls.collection("posts", {"title": "string", "secret": "text", "owner_note": "string"})
    await calls.collection("vault", {"title": "string"})
    await calls.create("posts", [
        {"id": "p1", "title": "Pho in Hanoi", "secret": "zebra password", "status": "published"},
        {"id": "p2", "title": "Draft about pho", "status": "draft"},
    ])
    await calls.create("vault", {"id": "v1", "title": "Pho vault zebra"})


async def test_public_role_sees_only_granted_collections(calls: Calls, anon_calls: Calls, public_grant):
    await _setup(calls)
    assert (await search(anon_calls, "pho"))["meta"]["total"] == 0
    await public_grant([{"collection": "posts", "action": "read", "fields": ["title", "status"],
                         "conditions": {"status": {"_eq": "published"}}}])
    answer = await search(anon_calls, "pho")
    assert [(h["collection"], h["id"]) for h in answer["data"]] == [("posts", "p1")]
    assert answer["meta"]["total"] == 1
    assert answer["data"][0]["item"] == {"id": "p1", "title": "Pho in Hanoi", "status": "published"}
    await anon_calls.err("get", "/search", 403, "PERMISSION_DENIED", params={"q": "pho", "collection": "vault"})


async def test_hidden_fields_never_match_or_show(calls: Calls, member):
    await _setup(calls)
    user, _ = await member([{"collection": "posts", "action": "read", "fields": ["title"]}])
    for q in ("zebra", "password", "hanoi zebra", "zeb"):
        answer = await search(user, q)
        assert answer["data"] == [] and answer["meta"]["total"] == 0, q
    [hit] = (await search(user, "hanoi"))["data"]
    assert hit["item"] == {"id": "p1", "title": "Pho in Hanoi"}
    assert set(hit["highlights"]) == {"title"}
    # The admin finds it by the hidden field, so the index does hold it.
    assert sorted(ids(await search(calls, "zebra"))) == ["p1", "v1"]


async def test_a_hidden_field_never_completes_an_and(calls: Calls, member):
    await _setup(calls)
    user, _ = await member([{"collection": "posts", "action": "read", "fields": ["title", "secret"]}])
    assert ids(await search(user, "hanoi zebra")) == ["p1"]
    user2, _ = await member([{"collection": "posts", "action": "read", "fields": ["title", "owner_note"]}])
    assert ids(await search(user2, "hanoi zebra")) == []


async def test_row_conditions_are_respected(calls: Calls, member):
    await _setup(calls)
    user, user_id = await member([
        {"collection": "posts", "action": "read", "conditions": {"userCreated": {"_eq": "$CURRENT_USER"}}},
        {"collection": "posts", "action": "create"},
    ])
    assert ids(await search(user, "pho")) == []
    await user.create("posts", {"id": "mine", "title": "My pho"})
    answer = await search(user, "pho")
    assert ids(answer) == ["mine"] and answer["meta"]["total"] == 1
    assert answer["data"][0]["item"]["userCreated"] == user_id


async def test_cross_tenant(calls: Calls, calls_b: Calls, svc_app: Any, site_b: str, admin_headers):
    await calls.collection("posts", {"title": "string"})
    await calls_b.collection("posts", {"title": "string"})
    await calls.create("posts", [{"id": "same", "title": "Phở Hà Nội"}, {"id": "only-a", "title": "Phở only in A"}])
    await calls_b.create("posts", {"id": "same", "title": "Phở Hà Nội in B"})
    answer = await search(calls_b, "pho")
    assert [(h["id"], h["item"]["title"]) for h in answer["data"]] == [("same", "Phở Hà Nội in B")]
    assert answer["meta"]["total"] == 1
    assert ids(await search(calls_b, "only")) == []
    assert ids(await search(calls_b, "pho", collection="posts")) == ["same"]
    assert sorted(ids(await search(calls, "pho"))) == ["only-a", "same"]
    # Deleting site B's item leaves site A's item of the same id alone.
    await calls_b.ok("delete", "/items/posts/same", status=204)
    assert ids(await search(calls_b, "pho")) == []
    assert sorted(ids(await search(calls, "pho ha"))) == ["same"]


HOSTILE = [
    '"', '""', "'", "*", "pho*", "*pho", ":", "title:pho", "title : pho", "body:zebra", "NEAR(pho hanoi)",
    "NEAR", "pho AND", "AND", "OR", "NOT", "pho OR zebra", "pho NOT hanoi", "(", ")", "(pho", "pho)",
    "{title}: pho", "^pho", "+pho -hanoi", "pho & zebra", "pho | zebra", "!pho", "pho:*", "'pho':*",
    "\\", "\\'", "%", "_", "pho%", "\x00", "pho\x00hanoi", "' OR 1=1 --", "\"; DROP TABLE svc_items; --",
    "🍜", "ｐｈｏ", "ﬁ", "a" * 200, "a " * 100, " ".join(["pho"] * 66),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def searchable(shared_site: Any) -> Calls:
    calls = shared_site.calls
    await calls.collection("posts", {"title": "string", "body": "text"})
    await calls.create("posts", [{"id": "p1", "title": "Pho in Hanoi", "body": "zebra"},
                                 {"id": "p2", "title": "near and or not"}])
    return calls


@pytest.mark.parametrize("q", HOSTILE)
async def test_query_syntax_is_literal_never_a_500(searchable: Calls, q: str):
    resp = await searchable.call("get", "/search", params={"q": q})
    # Every query is a literal search (200) except those past the 200-character bound on ``q``.
    assert resp.status_code == (400 if len(q) > 200 else 200), resp.text
    if resp.status_code == 200:
        body = resp.json()
        assert body["meta"]["total"] == len(body["data"])
        assert all(h["id"] in ("p1", "p2") for h in body["data"])


async def test_operator_words_are_plain_words(calls: Calls):
    await calls.collection("posts", {"title": "string", "body": "text"})
    await calls.create("posts", [{"id": "p1", "title": "Pho in Hanoi", "body": "zebra"},
                                 {"id": "p2", "title": "rock and roll, near or not"}])
    assert ids(await search(calls, "rock AND roll")) == ["p2"]
    assert ids(await search(calls, "NEAR")) == ["p2"]
    assert ids(await search(calls, "pho OR zebra")) == []  # OR is a word that p1 lacks
    assert ids(await search(calls, "hanoi:pho")) == ["p1"]  # the ":" separates two words
    assert ids(await search(calls, "title:pho")) == []  # no column filters: "title" is a word
    assert ids(await search(calls, '"pho" (hanoi)')) == ["p1"]
    assert ids(await search(calls, "ｐｈｏ")) == ["p1"]  # full-width letters fold (NFKD)
    assert (await search(calls, "*:()"))["meta"] == {"total": 0, "limit": 25, "offset": 0}


async def test_compiled_row_filters_with_operators_and_relations(calls: Calls, member):
    await calls.collection("authors", {"name": "string", "rank": "integer"})
    await calls.collection("posts", {"title": "string", "views": "integer", "author": "string"})
    await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="authors")
    await calls.create("authors", [{"id": "ann", "name": "Ann", "rank": 1}, {"id": "bob", "name": "Bob", "rank": 2}])
    await calls.create("posts", [{"id": "p1", "title": "Lotus by Ann", "views": 10, "author": "ann"},
                                 {"id": "p2", "title": "Lotus by Bob", "views": 30, "author": "bob"},
                                 {"id": "p3", "title": "Lotus, popular", "views": 50, "author": "ann"}])
    popular, _ = await member([{"collection": "posts", "action": "read", "conditions": {"views": {"_gte": 30}}}])
    assert sorted(ids(await search(popular, "lotus"))) == ["p2", "p3"]
    by_rank, _ = await member([{"collection": "posts", "action": "read",
                                "conditions": {"author": {"rank": {"_lte": 1}}}}])
    answer = await search(by_rank, "lotus")
    assert sorted(ids(answer)) == ["p1", "p3"] and answer["meta"]["total"] == 2
