"""Every field type through HTTP: a good value is stored in its normal form, a bad one is a 400
at the field's path. Options (choices, min/max, maxLength, unique, default) are enforced. The
cases share the module's app (``shared_site``), each writing in a new site of its own."""

from __future__ import annotations

import pytest

from kernel.testing import Calls, disabled_with_dependents

POINT = {"type": "Point", "coordinates": [1.5, 2.5]}
CASES = [
    # type, good value, stored form, bad value
    ("boolean", True, True, "true"),
    ("integer", 3.0, 3, 3.5),
    ("float", 1.25, 1.25, "x"),
    ("decimal", 12.5, "12.5", "1e5000x"),
    ("bigInteger", "9007199254740993", 9007199254740993, 2**64),
    ("dateTime", "2024-05-01T10:00:00+02:00", "2024-05-01T08:00:00Z", "yesterday"),
    ("date", "2024-05-01", "2024-05-01", "2024-13-01"),
    ("time", "10:30", "10:30:00", "25:00"),
    ("timestamp", "2024-05-01T10:00:00", "2024-05-01T10:00:00Z", 5),
    ("string", "hi", "hi", "x" * 256),
    ("text", "long " * 100, "long " * 100, {"a": 1}),
    ("uuid", "0B8F5C9E-1A2B-4C3D-8E9F-0A1B2C3D4E5F", "0b8f5c9e-1a2b-4c3d-8e9f-0a1b2c3d4e5f", "nope"),
    ("hash", "ABCDEF0123", "abcdef0123", "xyz"),
    ("slug", "a-b-c", "a-b-c", "A B"),
    ("code", "print(1)", "print(1)", 1),
    ("color", "#ABC", "#abc", "red"),
    ("json", {"a": [1, None, "x"]}, {"a": [1, None, "x"]}, float("inf")),
    ("csv", "a, b,,c", ["a", "b", "c"], [1, 2]),
    ("geometry", POINT, POINT, {"type": "Point", "coordinates": [500, 0]}),
]
# The files type's own coercion; with the files plugin enabled its ids must also name files of
# the site (plugin_tests/files/test_files.py), so it is checked here with that plugin disabled.
FILES_CASE = ("files", ["f1", "f1", "f2"], ["f1", "f2"], "f1")


@pytest.mark.parametrize(("type_", "good", "stored", "bad"), CASES, ids=[c[0] for c in CASES])
async def test_type(shared_site, type_, good, stored, bad):
    # Each case writes only in a site of its own: one app for the module, a site per case.
    await _check_type(await shared_site.new_site(), type_, good, stored, bad)


async def test_files_type_coercion(make_app):
    app = await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("files")})
    headers = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(headers)
    await _check_type(Calls(app.client, {**headers, "X-Svc-Site": site}), *FILES_CASE)


async def _check_type(calls: Calls, type_, good, stored, bad):
    await calls.collection("things", {"value": type_})
    item = await calls.create("things", {"value": good})
    assert item["value"] == stored
    assert (await calls.get("things", item["id"]))["value"] == stored
    if bad == float("inf"):
        resp = await calls.call("post", "/items/things", content=b'{"value": Infinity}',
                                headers={"Content-Type": "application/json"})
        assert resp.status_code == 400
        return
    await calls.err("post", "/items/things", 400, "VALIDATION_FAILED", ["value"], json={"value": bad})
    await calls.err("patch", f"/items/things/{item['id']}", 400, "VALIDATION_FAILED", ["value"], json={"value": bad})


async def test_options(shared_site):
    calls = await shared_site.new_site()
    await calls.collection("opts", {
        "kind": {"type": "string", "options": {"choices": ["a", "b"]}},
        "n": {"type": "integer", "options": {"min": 1, "max": 5}},
        "code": {"type": "string", "options": {"maxLength": 3, "pattern": "^[A-Z]+$"}},
        "email": {"type": "string", "options": {"unique": True}},
        "lang": {"type": "string", "options": {"default": "en"}},
    })
    item = await calls.create("opts", {"kind": "a", "n": 5, "code": "AB", "email": "x@y"})
    assert item["lang"] == "en"
    for key, bad in (("kind", "c"), ("n", 6), ("n", 0), ("code", "ABCD"), ("code", "ab")):
        await calls.err("post", "/items/opts", 400, "VALIDATION_FAILED", [key], json={key: bad})
    err = await calls.err("post", "/items/opts", 409, "CONFLICT", ["email"], json={"email": "x@y"})
    assert err["extensions"]["field"] == "email"
    await calls.err("post", "/items/opts", 409, "CONFLICT", ["1", "email"], json=[{"email": "p"}, {"email": "p"}])
    other = await calls.create("opts", {"email": "z@y"})
    await calls.err("patch", f"/items/opts/{other['id']}", 409, "CONFLICT", ["email"], json={"email": "x@y"})
    # Its own value is not a conflict; a deleted item's value is free again.
    await calls.ok("patch", f"/items/opts/{item['id']}", json={"email": "x@y"})
    await calls.ok("delete", f"/items/opts/{item['id']}", status=204)
    await calls.create("opts", {"email": "x@y"})


async def test_several_problems_in_one_answer(shared_site):
    calls = await shared_site.new_site()
    await calls.collection("multi", {"a": "integer", "b": "boolean"})
    resp = await calls.call("post", "/items/multi", json=[{"a": "x"}, {"b": 1}])
    errors = resp.json()["errors"]
    assert resp.status_code == 400 and [e["path"] for e in errors] == [["0", "a"], ["1", "b"]]


async def test_stored_forms_survive_a_listening_filter(shared_site):
    """With a filter listening, the item is checked again after it: normal forms must pass as they are."""
    calls, svc_app = await shared_site.new_site(), shared_site.app
    fields = {f"f_{type_}": type_ for type_, *_ in CASES}
    await calls.collection("every", fields)
    off = svc_app.kernel.bus.on_filter("items.*", lambda event, payload, ctx: None)
    try:
        item = await calls.create("every", {f"f_{t}": good for t, good, _, _ in CASES})
        updated = await calls.ok("patch", f"/items/every/{item['id']}", json={"f_string": "changed"})
    finally:
        off()
    for type_, _, stored, _ in CASES:
        assert item[f"f_{type_}"] == stored and updated[f"f_{type_}"] == stored or type_ == "string", type_
