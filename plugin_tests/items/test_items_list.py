"""Listing: paging, meta, sort (structural and content, numeric and text), fields."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# The tests share the module's app, each in a new site of its own (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


async def _seed(calls: Calls) -> None:
    await calls.collection("products", {"name": "string", "price": "decimal", "qty": "integer", "tags": "csv"})
    rows = [("a", "b-name", "10.5", 3), ("b", "a-name", "9", 1), ("c", "c-name", "100", None),
            ("d", "d-name", None, 2), ("e", "b-name", "9.00", 5)]
    await calls.create("products", [{"id": i, "name": n, "price": p, "qty": q} for i, n, p, q in rows])


def ids(body: dict) -> list[str]:
    return [i["id"] for i in body["data"]]


async def test_paging_and_meta(calls: Calls):
    await _seed(calls)
    body = await calls.list("products", limit=2)
    assert ids(body) == ["a", "b"] and body["meta"] == {"total": 5, "limit": 2, "offset": 0}
    assert ids(await calls.list("products", limit=2, offset=2)) == ["c", "d"]
    assert ids(await calls.list("products", limit=2, page=3)) == ["e"]
    body = await calls.list("products", meta="none")
    assert "total" not in body["meta"] and len(body["data"]) == 5
    assert (await calls.list("products", meta="total_count"))["meta"]["total"] == 5
    for bad in ({"limit": 0}, {"limit": 201}, {"offset": -1}, {"page": 0}, {"limit": "x"}, {"meta": "all"}):
        key = next(iter(bad))
        await calls.err("get", "/items/products", 400, "VALIDATION_FAILED", ["query", key], params=bad)


async def test_default_limit_is_25(calls: Calls):
    await calls.collection("many", {"n": "integer"})
    await calls.create("many", [{"n": i} for i in range(30)])
    body = await calls.list("many")
    assert len(body["data"]) == 25 and body["meta"]["total"] == 30 and body["meta"]["limit"] == 25


async def test_sort(calls: Calls):
    await _seed(calls)
    # Decimals are compared as numbers (9 = 9.00 < 10.5 < 100), nulls first ascending, id breaks ties.
    assert ids(await calls.list("products", sort="price")) == ["d", "b", "e", "a", "c"]
    assert ids(await calls.list("products", sort="-price")) == ["c", "a", "b", "e", "d"]
    assert ids(await calls.list("products", sort="name,-qty")) == ["b", "e", "a", "c", "d"]
    # Descending puts nulls last (NULL is the smallest value, on both databases).
    assert ids(await calls.list("products", **{"sort[]": ["-qty"]})) == ["e", "a", "d", "b", "c"]
    assert ids(await calls.list("products", sort="-id")) == ["e", "d", "c", "b", "a"]
    assert ids(await calls.list("products", sort="createdAt")) == ["a", "b", "c", "d", "e"]
    await calls.err("get", "/items/products", 400, "VALIDATION_FAILED", ["query", "sort", "nope"], params={"sort": "nope"})
    await calls.err("get", "/items/products", 400, "VALIDATION_FAILED", ["query", "sort"], params={"sort": "-"})


async def test_fields(calls: Calls):
    await _seed(calls)
    body = await calls.list("products", fields="name,qty", limit=1)
    assert body["data"] == [{"id": "a", "name": "b-name", "qty": 3}]
    assert set((await calls.list("products", fields="*", limit=1))["data"][0]) >= {"status", "name", "price"}
    assert await calls.get("products", "b", params={"fields": "price"}) == {"id": "b", "price": "9"}
    # A dotted path reads through a relation; through any other field it is a 400.
    await calls.err("get", "/items/products", 400, "VALIDATION_FAILED", ["query", "fields"],
                    params={"fields": "name.first"})
    await calls.err("get", "/items/products", 400, "VALIDATION_FAILED", ["query", "fields"], params={"fields": "x"})
    await calls.err("get", "/items/products/a", 400, "VALIDATION_FAILED", ["query", "fields"], params={"fields": "x"})


async def test_filter_and_deep_are_read(calls: Calls):
    # The query language's parameters (test_items_query_*.py has the rest).
    await _seed(calls)
    body = await calls.list("products", **{"filter[qty][_eq]": "1"})
    assert ids(body) == ["b"] and body["meta"]["total"] == 1
    await calls.err("get", "/items/products", 400, "VALIDATION_FAILED", ["query", "deep", "x"],
                    params={"deep[x][_limit]": "1"})
