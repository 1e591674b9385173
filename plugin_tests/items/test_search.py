"""GET /search: diacritics, AND and prefix, ranking, one or all collections, paging, bad input."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# The tests share the module's app (``shared_site``), each in a new site of its own: a search
# answers from the request's site only (the cross-tenant sweep checks that).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers


@pytest_asyncio.fixture(loop_scope="module")
async def calls(shared_site: Any) -> Calls:
    return await shared_site.new_site()


@pytest.fixture
def anon_calls(shared_site: Any, calls: Calls) -> Calls:
    return Calls(shared_site.app.client, {"X-Svc-Site": calls.headers["X-Svc-Site"]})


async def _dishes(calls: Calls) -> None:
    await calls.collection("dishes", {"title": "string", "body": "text", "n": "integer"})


async def search(calls: Calls, q: str, **params: Any) -> dict[str, Any]:
    return await calls.ok("get", "/search", full=True, params={"q": q, **params})


def ids(answer: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in answer["data"]]


async def test_vietnamese_and_other_diacritics_are_ignored(calls: Calls):
    await _dishes(calls)
    await calls.create("dishes", [
        {"id": "pho", "title": "Phở bò Hà Nội", "body": "Nước dùng trong, bánh phở mềm."},
        {"id": "bun", "title": "Bún chả", "body": "Đặc sản Hà Nội"},
        {"id": "danang", "title": "Mì Quảng Đà Nẵng"},
        {"id": "creme", "title": "Crème brûlée"},
        {"id": "misc", "title": "Smørrebrød", "body": "Łódź Straße"},
    ])
    assert ids(await search(calls, "pho bo ha noi")) == ["pho"]
    assert ids(await search(calls, "PHỞ BÒ")) == ["pho"]
    assert ids(await search(calls, "da nang")) == ["danang"]
    assert ids(await search(calls, "dac san")) == ["bun"]
    assert ids(await search(calls, "creme brulee")) == ["creme"]
    assert ids(await search(calls, "crème")) == ["creme"]
    assert ids(await search(calls, "smorrebrod")) == ["misc"]
    assert ids(await search(calls, "lodz strasse")) == ["misc"]
    assert sorted(ids(await search(calls, "ha noi"))) == ["bun", "pho"]


async def test_answer_shape_and_highlights(calls: Calls):
    await _dishes(calls)
    await calls.create("dishes", {"id": "pho", "title": "Phở bò <Hà Nội>", "body": "Bánh phở", "n": 3})
    answer = await search(calls, "pho")
    assert answer["meta"] == {"total": 1, "limit": 25, "offset": 0}
    [hit] = answer["data"]
    assert hit["collection"] == "dishes" and hit["id"] == "pho" and hit["score"] > 0
    assert hit["item"]["title"] == "Phở bò <Hà Nội>" and hit["item"]["n"] == 3
    assert hit["item"]["status"] == "published"
    # HTML-escaped, matches marked, only the fields that matched.
    assert hit["highlights"] == {"title": "<mark>Phở</mark> bò &lt;Hà Nội&gt;", "body": "Bánh <mark>phở</mark>"}
    assert (await search(calls, "noi"))["data"][0]["highlights"] == {"title": "Phở bò &lt;Hà <mark>Nội</mark>&gt;"}


async def test_words_are_anded_across_fields_and_the_last_is_a_prefix(calls: Calls):
    await _dishes(calls)
    await calls.create("dishes", [
        {"id": "a", "title": "Hanoi street food", "body": "noodle soup"},
        {"id": "b", "title": "Saigon street food", "body": "broken rice"},
        {"id": "c", "title": "Phong Nha caves"},
    ])
    assert ids(await search(calls, "hanoi soup")) == ["a"]
    assert ids(await search(calls, "hanoi rice")) == []
    assert sorted(ids(await search(calls, "street foo"))) == ["a", "b"]
    assert ids(await search(calls, "foo street")) == []  # only the last word is a prefix
    assert ids(await search(calls, "ph")) == ["c"]
    assert ids(await search(calls, "noodle noodle SOUP soup")) == ["a"]


async def test_ranking_prefers_titles_and_more_matches(calls: Calls):
    await _dishes(calls)
    await calls.create("dishes", [
        {"id": "body", "title": "Soups of the north", "body": "A long story that mentions pho once, among "
                                                              "many other words about broth and noodles."},
        {"id": "title", "title": "Pho", "body": "Beef broth"},
        {"id": "both", "title": "Pho", "body": "Pho everywhere"},
    ])
    answer = await search(calls, "pho")
    assert ids(answer) == ["both", "title", "body"]
    scores = [hit["score"] for hit in answer["data"]]
    assert scores == sorted(scores, reverse=True)


async def test_one_collection_or_all(calls: Calls, anon_calls: Calls):
    await _dishes(calls)
    await calls.collection("places", {"name": "string"})
    await calls.create("dishes", {"id": "d1", "title": "Hanoi pho"})
    await calls.create("places", {"id": "p1", "name": "Hanoi"})
    everything = await search(calls, "hanoi")
    assert sorted((h["collection"], h["id"]) for h in everything["data"]) == [("dishes", "d1"), ("places", "p1")]
    only = await search(calls, "hanoi", collection="places")
    assert [(h["collection"], h["id"]) for h in only["data"]] == [("places", "p1")]
    assert only["meta"]["total"] == 1
    await calls.err("get", "/search", 404, "NOT_FOUND", params={"q": "x", "collection": "nope"})
    # Without read permission, an unknown name and a real one answer alike.
    await anon_calls.err("get", "/search", 403, "PERMISSION_DENIED", params={"q": "x", "collection": "nope"})
    await anon_calls.err("get", "/search", 403, "PERMISSION_DENIED", params={"q": "x", "collection": "places"})
    assert (await search(anon_calls, "hanoi"))["data"] == []


async def test_paging_and_total(calls: Calls):
    await _dishes(calls)
    await calls.create("dishes", [{"id": f"i{n:02d}", "title": f"Lotus {n}"} for n in range(30)])
    first = await search(calls, "lotus")
    assert len(first["data"]) == 25 and first["meta"] == {"total": 30, "limit": 25, "offset": 0}
    page = await search(calls, "lotus", limit=10, offset=25)
    assert len(page["data"]) == 5 and page["meta"] == {"total": 30, "limit": 10, "offset": 25}
    seen = []
    for offset in range(0, 30, 7):
        seen += ids(await search(calls, "lotus", limit=7, offset=offset))
    assert sorted(seen) == sorted(set(seen)) and len(seen) == 30
    assert (await search(calls, "lotus", limit=5, offset=100))["data"] == []
    assert (await search(calls, "lotus", page=2, limit=20))["meta"]["offset"] == 20


@pytest.mark.parametrize("params", [{}, {"q": ""}, {"q": "   "}, {"q": "x" * 201}])
async def test_q_is_required_and_bounded(calls: Calls, params: dict[str, str]):
    await calls.err("get", "/search", 400, "VALIDATION_FAILED", ["query", "q"], params=params)


@pytest.mark.parametrize("params", [{"limit": "0"}, {"limit": "201"}, {"limit": "x"}, {"offset": "-1"}])
async def test_limit_and_offset_are_checked(calls: Calls, params: dict[str, str]):
    await calls.err("get", "/search", 400, "VALIDATION_FAILED", ["query", next(iter(params))],
                    params={"q": "x", **params})


async def test_needs_a_site(svc_app: Any, admin_headers: dict[str, str]):
    resp = await svc_app.client.get("/api/v1/search", params={"q": "x"}, headers=admin_headers)
    assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"


async def test_route_uses_the_items_read_bucket(svc_app: Any):
    [route] = [r for r in svc_app.kernel.routes if r.path == "/search"]
    assert route.rate_limit == "items_read" and route.auth == "public"


async def test_long_values_are_indexed_up_to_the_cap(calls: Calls):
    await _dishes(calls)
    body = "needle " + " ".join(f"w{n}" for n in range(40_000)) + " latecomer"
    await calls.create("dishes", {"id": "long", "title": "Long read", "body": body})
    [hit] = (await search(calls, "needle"))["data"]
    assert hit["highlights"]["body"].startswith("<mark>needle</mark> w0 w1") and hit["highlights"]["body"].endswith("…")
    assert ids(await search(calls, "w39999")) == []  # past search_text.MAX_INDEXED_CHARS
    assert ids(await search(calls, "latecomer")) == []


async def test_openapi_documents_the_route(svc_app: Any):
    doc = (await svc_app.client.get("/api/v1/openapi.json")).json()
    op = doc["paths"]["/api/v1/search"]["get"]
    params = {p["name"]: p for p in op["parameters"]}
    assert params["q"]["required"] is True and params["q"]["schema"]["maxLength"] == 200
    assert params["limit"]["schema"]["maximum"] == 200 and not params["collection"]["required"]
    # Public, and a token is read when sent (a member may search more): optional for clients.
    assert op["security"] == [{}, {"bearer": []}] and op["x-svc-auth"] == "public"
    hit = op["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["data"]["items"]
    assert hit["required"] == ["collection", "id", "score", "item", "highlights"]
