"""Fields through HTTP: the twenty types with their options, validation of names, types and
options, updates, type changes and drops (with the bus filters that items will answer).

The tests share the module's app, each in a new site (kernel/testing/shared.py); a test that puts
a filter on the app's bus takes it off before it ends."""

from __future__ import annotations

import pytest

from kernel import ApiError
from kernel.testing import shared as testing_shared

svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

TYPES_WITH_OPTIONS = [
    ("boolean", {"default": False}),
    ("integer", {"min": 0, "max": 100, "default": 5, "indexed": True}),
    ("float", {"min": -1.5, "max": 1.5, "default": 0.5}),
    ("decimal", {"precision": 10, "scale": 2, "default": "9.99", "min": "0"}),
    ("bigInteger", {"max": "9223372036854775807", "default": "12", "unique": True}),
    ("dateTime", {"default": "2024-01-01T00:00:00"}),
    ("date", {"default": "2024-01-01"}),
    ("time", {"default": "08:30"}),
    ("timestamp", {"default": "2024-01-01T00:00:00+01:00"}),
    ("string", {"maxLength": 80, "minLength": 1, "pattern": "^[A-Z]", "default": "Hello", "unique": True,
                "placeholder": "Title"}),
    ("text", {"maxLength": 100000}),
    ("uuid", {"unique": True}),
    ("hash", {"algorithm": "sha256"}),
    ("slug", {"unique": True, "pattern": "^[a-z]"}),
    ("code", {"language": "python"}),
    ("color", {"default": "#FF0000", "choices": ["#ff0000", "#00ff00"]}),
    ("json", {"default": {"a": 1}}),
    ("csv", {"choices": ["red", "green"], "default": "red,green"}),
    ("geometry", {"geometryType": "Point"}),
    ("files", {}),
]
NORMALISED_DEFAULTS = {"decimal": "9.99", "bigInteger": 12, "time": "08:30:00",
                       "timestamp": "2023-12-31T23:00:00Z", "color": "#ff0000", "csv": ["red", "green"]}


async def test_all_twenty_types_with_options(calls):
    await calls.collection("kitchen")
    for i, (type_, options) in enumerate(TYPES_WITH_OPTIONS):
        created = await calls.field("kitchen", f"f_{type_}", type_, options=options, interface="input",
                                    display="raw", required=i % 2 == 0)
        assert created["type"] == type_ and created["sort"] == i + 1
        if "default" in options:
            assert created["options"]["default"] == NORMALISED_DEFAULTS.get(type_, options["default"])
    listed = await calls.ok("get", "/fields/kitchen")
    assert [f["type"] for f in listed] == [t for t, _ in TYPES_WITH_OPTIONS]
    one = await calls.ok("get", "/fields/kitchen/f_string")
    assert one["options"]["placeholder"] == "Title" and one["meta"]["interface"] == "input"
    assert one["interface"] == "input" and one["display"] == "raw" and one["required"] is False


async def test_unknown_type(calls):
    await calls.collection("c")
    for bad in ("alias", "varchar", "", 5, None, ["string"]):
        await calls.err("post", "/fields/c", 400, "VALIDATION_FAILED", ["type"], json={"field": "f", "type": bad})
    await calls.err("post", "/fields/c", 400, "VALIDATION_FAILED", ["type"], json={"field": "f"})


@pytest.mark.parametrize("name", ["id", "ID", "status", "sort", "createdAt", "updatedat", "userCreated",
                                  "userUpdated", "deletedAt", "_data", "__typename", "1a", "a-b", "a b",
                                  "x" * 65, "", "é", "a;drop table", 5, None])
async def test_bad_field_names(shared_c, name):
    await shared_c.err("post", "/fields/c", 400, "VALIDATION_FAILED", ["field"], json={"field": name, "type": "string"})


@pytest.mark.parametrize(("type_", "options", "path"), [
    ("string", {"min": 1}, ["options", "min"]),
    ("integer", {"maxLength": 5}, ["options", "maxLength"]),
    ("string", {"maxLength": -1}, ["options", "maxLength"]),
    ("string", {"maxLength": "5"}, ["options", "maxLength"]),
    ("string", {"minLength": 5, "maxLength": 2}, ["options", "minLength"]),
    ("string", {"pattern": "("}, ["options", "pattern"]),
    ("string", {"pattern": "x" * 501}, ["options", "pattern"]),
    ("string", {"pattern": "(a+)+$"}, ["options", "pattern"]),
    ("string", {"pattern": r"^(\w+\s?)*$"}, ["options", "pattern"]),
    ("integer", {"min": 10, "max": 1}, ["options", "min"]),
    ("integer", {"min": "1"}, ["options", "min"]),
    ("integer", {"default": "5"}, ["options", "default"]),
    ("integer", {"default": 500, "max": 100}, ["options", "default"]),
    ("string", {"default": "abc", "choices": ["x"]}, ["options", "default"]),
    ("string", {"choices": []}, ["options", "choices"]),
    ("integer", {"choices": [1, "two"]}, ["options", "choices", "1"]),
    ("date", {"default": "tomorrow"}, ["options", "default"]),
    ("json", {"unique": True}, ["options", "unique"]),
    ("files", {"indexed": True}, ["options", "indexed"]),
    ("string", {"unique": "yes"}, ["options", "unique"]),
    ("decimal", {"precision": 0}, ["options", "precision"]),
    ("decimal", {"precision": 4, "scale": 5}, ["options", "scale"]),
    ("geometry", {"geometryType": "Circle"}, ["options", "geometryType"]),
    ("hash", {"algorithm": "crc32"}, ["options", "algorithm"]),
    ("string", {"huge": "x" * 20_000}, ["options"]),
    ("string", "nope", ["options"]),
])
async def test_bad_options(shared_c, type_, options, path):
    await shared_c.err("post", "/fields/c", 400, "VALIDATION_FAILED", path,
                    json={"field": "f", "type": type_, "options": options})


@pytest.mark.parametrize(("body", "path"), [
    ({"interface": 5}, ["interface"]), ({"display": "x" * 201}, ["display"]), ({"required": "yes"}, ["required"]),
    ({"sort": 1.5}, ["sort"]), ({"sort": 2**40}, ["sort"]), ({"unknown": 1}, ["unknown"]),
    ({"collection": "other"}, ["collection"]), ({"meta": {"interface": 1}}, ["meta", "interface"]),
    ({"meta": {"nope": 1}}, ["meta", "nope"]), ({"schema": []}, ["schema"]),
])
async def test_bad_field_keys(shared_c, body, path):
    await shared_c.err("post", "/fields/c", 400, "VALIDATION_FAILED", path, json={"field": "f", "type": "string", **body})


async def test_directus_shaped_field(calls):
    await calls.collection("c")
    created = await calls.ok("post", "/fields/c", status=201, json={
        "field": "title", "type": "string",
        "meta": {"interface": "input", "options": {"placeholder": "T"}, "sort": 7, "required": True},
        "schema": {"default_value": "x", "is_unique": True, "max_length": 100, "is_nullable": False}})
    assert created["interface"] == "input" and created["sort"] == 7 and created["required"] is True
    assert created["options"] == {"placeholder": "T", "default": "x", "unique": True, "maxLength": 100}


async def test_duplicates_conflict(calls):
    await calls.collection("c")
    await calls.field("c", "title", "string")
    await calls.err("post", "/fields/c", 409, "CONFLICT", ["field"], json={"field": "title", "type": "text"})
    await calls.err("post", "/fields/c", 409, "CONFLICT", ["field"], json={"field": "Title", "type": "text"})


async def test_fields_of_unknown_collections(calls):
    await calls.err("get", "/fields/nothing", 404, "NOT_FOUND")
    await calls.err("post", "/fields/nothing", 404, "NOT_FOUND", json={"field": "f", "type": "string"})
    await calls.collection("c")
    await calls.err("get", "/fields/c/nothing", 404, "NOT_FOUND")
    await calls.err("patch", "/fields/c/nothing", 404, "NOT_FOUND", json={"required": True})
    await calls.err("delete", "/fields/c/nothing", 404, "NOT_FOUND")


async def test_list_every_field(calls):
    await calls.collection("a")
    await calls.collection("b")
    await calls.field("b", "x", "string")
    await calls.field("a", "y", "integer")
    assert [(f["collection"], f["field"]) for f in await calls.ok("get", "/fields")] == [("a", "y"), ("b", "x")]


async def test_order_follows_sort(calls):
    await calls.collection("c")
    await calls.field("c", "late", "string", sort=10)
    await calls.field("c", "early", "string", sort=1)
    await calls.field("c", "next", "string")
    assert [f["field"] for f in await calls.ok("get", "/fields/c")] == ["early", "late", "next"]


async def test_update_config(calls):
    await calls.collection("c")
    await calls.field("c", "title", "string", options={"maxLength": 10})
    updated = await calls.ok("patch", "/fields/c/title", json={"required": True, "interface": "textarea",
                                                                "options": {"maxLength": 20, "default": "x"}})
    assert updated["required"] is True and updated["interface"] == "textarea"
    assert updated["options"] == {"maxLength": 20, "default": "x"}
    kept = await calls.ok("patch", "/fields/c/title", json={"sort": 4})
    assert kept["options"] == {"maxLength": 20, "default": "x"} and kept["sort"] == 4
    await calls.err("patch", "/fields/c/title", 400, "VALIDATION_FAILED", ["field"], json={"field": "other"})
    await calls.err("patch", "/fields/c/title", 400, "VALIDATION_FAILED", ["options", "default"],
                    json={"options": {"maxLength": 1, "default": "long"}})


async def test_type_change_allowed_without_items_and_options_rechecked(calls):
    await calls.collection("c")
    await calls.field("c", "n", "string", options={"placeholder": "p"})
    changed = await calls.ok("patch", "/fields/c/n", json={"type": "integer"})
    assert changed["type"] == "integer" and changed["options"] == {"placeholder": "p"}
    await calls.field("c", "s", "string", options={"maxLength": 5})
    await calls.err("patch", "/fields/c/s", 400, "VALIDATION_FAILED", ["options", "maxLength"], json={"type": "integer"})
    ok = await calls.ok("patch", "/fields/c/s", json={"type": "integer", "options": {"min": 0}})
    assert ok["options"] == {"min": 0}
    await calls.err("patch", "/fields/c/s", 400, "VALIDATION_FAILED", ["type"], json={"type": "number"})


async def test_type_change_is_vetoed_by_a_type_change_filter(svc_app, calls, site):
    await calls.collection("c")
    await calls.field("c", "n", "string")
    seen = []

    def items_check(event, payload, ctx):
        seen.append((payload, ctx.site_id, ctx.conn is not None))
        raise ApiError(409, "CONFLICT", "Some values do not convert",
                       extensions={"nonConvertible": [{"id": "i1", "value": "abc"}]})

    off = svc_app.kernel.bus.on_filter("fields.type_change", items_check)
    try:
        error = await calls.err("patch", "/fields/c/n", 409, "CONFLICT", json={"type": "integer", "required": True})
        assert error["extensions"]["nonConvertible"] == [{"id": "i1", "value": "abc"}]
        # A change that keeps the type does not ask.
        await calls.ok("patch", "/fields/c/n", json={"interface": "input"})
    finally:
        off()
    assert seen == [({"siteId": site, "collection": "c", "field": "n", "fromType": "string", "toType": "integer"},
                     site, True)]
    field = await calls.ok("get", "/fields/c/n")
    assert field["type"] == "string" and field["required"] is False  # all rolled back


async def test_drops_can_be_vetoed(svc_app, calls):
    await calls.collection("c")
    await calls.field("c", "n", "string")

    def holds_data(event, payload, ctx):
        raise ApiError(409, "CONFLICT", f"{payload['collection']} holds data")

    off_f = svc_app.kernel.bus.on_filter("fields.delete", holds_data)
    off_c = svc_app.kernel.bus.on_filter("collections.delete", holds_data)
    try:
        await calls.err("delete", "/fields/c/n", 409, "CONFLICT")
        await calls.err("delete", "/collections/c", 409, "CONFLICT")
    finally:
        off_f()
        off_c()
    assert (await calls.ok("get", "/fields/c/n"))["field"] == "n"
    await calls.ok("delete", "/fields/c/n", status=204)
    await calls.err("get", "/fields/c/n", 404)
    await calls.ok("delete", "/collections/c", status=204)


async def test_a_dropped_field_name_is_free_again(calls):
    await calls.collection("c")
    await calls.field("c", "n", "string")
    await calls.ok("delete", "/fields/c/n", status=204)
    assert (await calls.field("c", "n", "integer"))["type"] == "integer"
