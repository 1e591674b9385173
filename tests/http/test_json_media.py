"""JSON on the wire (``kernel.http.media``): orjson encodes and decodes, with the standard
library's answers wherever the two would differ, so what is accepted, refused and said stays."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from typing import Any

import pytest

from kernel import Route, hookimpl
from kernel.base.jsoncodec import dumps, loads
from kernel.db.meta import iso
from kernel.http.media import read_json, send_data

ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$")


def compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@pytest.mark.parametrize("value", [
    dt.datetime(2026, 11, 21, 6, 44, 52, 780366, tzinfo=dt.UTC),
    dt.datetime(2026, 11, 21, 6, 44, 52, tzinfo=dt.UTC),  # no microseconds: none written
    dt.datetime(2026, 11, 21, 6, 44, 52, 5),  # naive (SQLite): UTC
    dt.datetime(2026, 11, 21, 8, 44, 52, 780366, tzinfo=dt.timezone(dt.timedelta(hours=2))),
])
def test_datetimes_are_written_as_iso_writes_them(value):
    assert dumps({"at": value}) == b'{"at":"' + iso(value).encode() + b'"}'
    assert dumps([dt.datetime(2026, 11, 21, 6, 44, 52, 780366, tzinfo=dt.UTC)]) == b'["2026-11-21T06:44:52.780366Z"]'


@pytest.mark.parametrize("value", [
    {"data": {"id": "a", "n": 1, "x": 1.5, "t": None, "ok": True, "s": "é ✓ \"q\" \\ \n", "l": [1, [2, {}]]}},
    {"data": [], "meta": {"total": 0}},
    {"big": 10**30, "neg": -(10**25)},  # beyond 64 bits: exact, as the stdlib writes them
    {1: "integer key"},
])
def test_encoding_is_the_stdlib_compact_form(value):
    assert dumps(value) == compact(value)


def test_what_json_cannot_hold_is_still_a_type_error():
    with pytest.raises(TypeError):
        dumps({"x": object()})


DOCUMENTS = [
    b'{"a": 1, "b": [true, false, null], "c": "\\u00e9"}',
    b'{"a": 1, "a": 2}',  # duplicate keys: the last wins
    b'{"n": NaN, "i": Infinity, "m": -Infinity}',  # read as floats, as the stdlib does
    b'[1e999]',  # beyond a double: inf
    b'123456789012345678901234567890',  # exact, not a float
    b'[0.12345678901234567890123]',
    b'"\\ud800"',  # a lone surrogate is read (the stdlib reads it)
    b'-0', b'1E2', b'"caf\xc3\xa9"',
    b'[1234567890123456789, -98765432109876543210, {"k": 100000000000000000000}]',  # 19 digits and more
    b'[123456789012345678, "12345678901234567890123"]',  # 18 digits; a long run inside a string
]


@pytest.mark.parametrize("raw", DOCUMENTS)
def test_decoding_reads_what_the_stdlib_reads(raw):
    for doc in (raw, raw.decode(), memoryview(raw)):  # psycopg hands the database's JSON as a buffer
        ours, theirs = loads(doc), json.loads(bytes(doc) if isinstance(doc, memoryview) else doc)
        assert repr(ours) == repr(theirs) and type(ours) is type(theirs)
    if raw == DOCUMENTS[2]:
        assert math.isnan(loads(raw)["n"])


@pytest.mark.parametrize("raw", [5, 2.5, None, b"", b"{", b"nope", b"{'a': 1}", b'{"a": }', b'"\xff"', b"[1,]", b"[" * 100_000])
def test_decoding_fails_as_the_stdlib_fails(raw):
    with pytest.raises(BaseException) as theirs:
        json.loads(raw)
    with pytest.raises(BaseException) as ours:
        loads(raw)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


class Echo:
    async def on_post(self, req: Any, resp: Any) -> None:
        body = await read_json(req)
        send_data(resp, {"body": body, "at": dt.datetime(2026, 11, 21, 6, 44, 52, 780366, tzinfo=dt.UTC)},
                  meta={"n": len(body)})


class EchoPlugin:
    name = "echo"

    @hookimpl
    def register_routes(self, kernel: Any) -> list[Route]:
        return [Route("/test/echo", Echo(), site="none", auth="public")]


@pytest.fixture
async def echo_app(make_app):
    return await make_app(plugins=["accounts", EchoPlugin()])


async def test_the_envelope_byte_for_byte(echo_app):
    resp = await echo_app.client.post("/api/v1/test/echo", content=b'{"b": "\xc3\xa9", "a": [1, 2.5, null]}',
                                      headers={"Content-Type": "application/json"})
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("application/json")
    assert resp.content == ('{"data":{"body":{"b":"é","a":[1,2.5,null]},"at":"2026-11-21T06:44:52.780366Z"},'
                            '"meta":{"n":2}}').encode()


@pytest.mark.parametrize(("raw", "message"), [
    (b"{", "The body is not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    (b"nope", "The body is not valid JSON: Expecting value: line 1 column 1 (char 0)"),
    (b'{"a": 1,}', None),  # the stdlib's own words, whatever this Python says
    (b'{"a": "\xff"}', None),
    (b"[" * 100_000, "The body is nested too deeply"),
    (b"[1]", "The body must be a JSON object"),
])
async def test_bad_json_is_400_in_the_envelope(echo_app, raw, message):
    if message is None:
        with pytest.raises(ValueError) as stdlib:
            json.loads(raw)
        message = f"The body is not valid JSON: {stdlib.value}"
    resp = await echo_app.client.post("/api/v1/test/echo", content=raw, headers={"Content-Type": "application/json"})
    assert resp.status_code == 400
    err = resp.json()["errors"][0]
    assert err["code"] == "VALIDATION_FAILED" and err["message"] == message


async def test_error_envelope_byte_for_byte(client):
    resp = await client.get("/api/v1/no/such/route")
    assert resp.status_code == 404
    assert resp.content == compact(resp.json())
    assert resp.content.startswith(b'{"errors":[{"')


async def test_timestamps_in_a_real_answer(client, site, admin_headers):
    resp = await client.get(f"/api/v1/sites/{site}", headers=admin_headers)
    assert resp.status_code == 200, resp.text
    stamps = [v for k, v in resp.json()["data"].items() if k.endswith("At") and v]
    assert stamps and all(ISO_Z.match(v) for v in stamps)
    assert resp.content == compact(resp.json())


async def test_a_lone_surrogate_in_a_body_is_a_400_naming_where(calls):
    # A lone surrogate is not text: no database, log or answer can carry it. Every JSON body
    # (read_json) refuses it with the path to the string, instead of failing later with a 500.
    for body, path in (({"x": {"y": ["ok", "\ud800"]}}, ["x", "y", "1"]), ({"\udc00": 1}, ["\\udc00"])):
        await calls.err("patch", "/settings", 400, "VALIDATION_FAILED", path, content=json.dumps(body),
                        headers={"Content-Type": "application/json"})
    # A well-formed pair, escaped, is an ordinary character.
    pair = await calls.ok("patch", "/settings", content=b'{"emoji": "\\ud83d\\ude00"}',
                          headers={"Content-Type": "application/json"})
    assert pair["emoji"] == "\U0001F600"


async def test_a_nul_in_a_body_is_a_400_naming_where(calls):
    # PostgreSQL keeps a NUL in neither text nor JSONB: a free-form JSON value holding one was a
    # 500 there (settings, presets, preferences...) and stored on SQLite. read_json refuses it
    # once, for every route, with the path to the string.
    nul = {"x": {"y": ["ok", "a\u0000b"]}}
    for method, path in (("patch", "/settings"), ("patch", "/me/preferences")):
        await calls.err(method, path, 400, "VALIDATION_FAILED", ["x", "y", "1"], json=nul)
        await calls.err(method, path, 400, "VALIDATION_FAILED", ["k\u0000"], json={"k\u0000": 1})
    await calls.err("post", "/presets", 400, "VALIDATION_FAILED", ["layoutOptions", "x"],
                    json={"collection": "c", "layoutOptions": {"x": "\u0000"}})
    # A backslash followed by u0000 is text, not a NUL.
    kept = await calls.ok("patch", "/settings", content=b'{"plain": "\\\\u0000"}',
                          headers={"Content-Type": "application/json"})
    assert kept["plain"] == "\\u0000"
    assert "x" not in await calls.ok("get", "/settings")
