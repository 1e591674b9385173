"""Hostile input is a 4xx, never a 500: huge strings, wrong types, long arrays, NUL, deep JSON."""

from __future__ import annotations

import json

import pytest
import pytest_asyncio

from kernel.testing import Calls


async def make_junk(calls: Calls) -> Calls:
    await calls.collection("junk", {"s": "string", "t": "text", "j": "json", "n": "integer", "c": "csv"})
    await calls.create("junk", {"id": "one", "s": "x"})
    return calls


@pytest.fixture
async def junk(calls: Calls) -> Calls:
    return await make_junk(calls)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_junk(shared_site) -> Calls:
    return await make_junk(shared_site.calls)


BAD_BODIES = [
    {"s": "x" * 100_000},
    {"s": "nul\x00here"},
    {"t": "nul\x00"},
    {"j": {"a\x00": 1}},
    {"n": "1" * 5000},
    {"n": 2**80},
    {"n": [1, 2]},
    {"c": [{"a": 1}]},
    {"x" * 10_000: 1},
    {"s": {"$gt": ""}},
    {"status": "x" * 1000},
    {"sort": 2**40},
    {"id": "\x00"},
]


@pytest.mark.parametrize("body", BAD_BODIES, ids=range(len(BAD_BODIES)))
async def test_bad_values_are_400(shared_junk: Calls, body):
    junk = shared_junk
    resp = await junk.call("post", "/items/junk", json=body)
    assert resp.status_code == 400, resp.text
    resp = await junk.call("patch", "/items/junk/one", json=body)
    assert resp.status_code == 400, resp.text


async def test_deep_and_wide_json(junk: Calls):
    deep = {"j": json.loads("[" * 70 + "]" * 70)}
    await junk.err("post", "/items/junk", 400, "VALIDATION_FAILED", ["j"], json=deep)
    raw = '{"j": ' + "[" * 100_000 + "]" * 100_000 + "}"
    resp = await junk.call("post", "/items/junk", content=raw.encode(), headers={"Content-Type": "application/json"})
    assert resp.status_code == 400, resp.text  # 200 KB: under the body cap, refused by its depth
    wide = await junk.create("junk", {"j": list(range(10_000)), "c": [str(i) for i in range(10_000)]})
    assert len(wide["j"]) == 10_000
    await junk.err("post", "/items/junk", 400, "VALIDATION_FAILED", ["body"], json=[{}] * 10_000)


async def test_wrong_body_shapes(junk: Calls):
    for body in (b"nope", b"[1, 2]", b'"text"', b"1", b"null", b"[[]]"):
        resp = await junk.call("post", "/items/junk", content=body, headers={"Content-Type": "application/json"})
        assert resp.status_code == 400, (body, resp.text)
    for body in (b"[1]", b'"x"', b""):
        resp = await junk.call("patch", "/items/junk/one", content=body, headers={"Content-Type": "application/json"})
        assert resp.status_code == 400, (body, resp.text)


async def test_hostile_query_strings(junk: Calls):
    for params in ({"sort": "\x00"}, {"sort": "a" * 30_000}, {"fields": ",".join(["s"] * 1000)},
                   {"limit": "1e9"}, {"offset": "-0x1"}, {"page": "99999999999999999999"}, {"sort": "-" * 10},
                   {"fields": "s\x00"}, {"meta": "\x00"}):
        resp = await junk.call("get", "/items/junk", params=params)
        assert resp.status_code == 400, (params, resp.text)
    for path in ("/items/junk/" + "x" * 5000, "/items/junk/%00", "/items/" + "y" * 5000, "/items/junk/..%2F..",
                 "/items/%E2%80%AE/one"):
        resp = await junk.call("get", path)
        assert resp.status_code == 404, (path, resp.text)


async def test_long_integers_in_json_come_back_exact(shared_junk: Calls):
    """Item ``data`` is decoded with orjson, which reads integers beyond 64 bits as floats: a
    document holding one is read by the standard library instead (kernel.http.media.loads,
    the database's JSON decoder on both dialects)."""
    value = {"big": 123456789012345678901234567890, "neg": -(2**70), "edge": 2**64, "list": [10**25, 1.5],
             "text": "12345678901234567890123"}
    created = await shared_junk.ok("post", "/items/junk", status=201, json={"id": "longs", "j": value})
    for item in (created, await shared_junk.ok("get", "/items/junk/longs"),
                 (await shared_junk.ok("get", "/items/junk", params={"filter": json.dumps({"id": {"_eq": "longs"}})}))[0]):
        assert item["j"] == value and isinstance(item["j"]["big"], int) and isinstance(item["j"]["list"][0], int)
