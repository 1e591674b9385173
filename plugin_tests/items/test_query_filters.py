"""The filter language without a database: the five filter rules of docs/decisions/items-query-semantics.md
one by one, the
coercion table, shape checks, bounds against hostile input (all 400, all fast), resolution
against a schema (structural columns, fields, JSON paths, relations, operand types) and the
field-policy refusals (403 ``field_policy``, through relations too)."""

from __future__ import annotations

import json
import sys
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel import ApiError
from kernel.testing import examples
from plugins.items.query import check_filter, parse_list_query, resolve_filter
from plugins.items.query.ir import FALSE, Condition, Exists, Group
from plugins.items.query.parse.brackets import RawFloat, RawInt, coerce_scalar
from plugins.items.query.parse.limits import MAX_FILTER_DEPTH
from plugins.schema.api import CollectionDef, FieldDef, RelationDef, SchemaSnapshot


def _fields(collection: str, spec: dict[str, str], **options: Any) -> Any:
    return MappingProxyType({n: FieldDef(collection, n, t, MappingProxyType(options.get(n, {})))
                             for n, t in spec.items()})


SNAP = SchemaSnapshot("s1", 3, MappingProxyType({
    "articles": CollectionDef("c-art", "articles", fields=_fields("articles", {
        "title": "string", "views": "integer", "rating": "float", "price": "decimal", "big": "bigInteger",
        "published": "boolean", "publishedAt": "dateTime", "day": "date", "at": "time", "stamp": "timestamp",
        "meta": "json", "shape": "geometry", "tags": "csv", "files": "files", "ref": "uuid", "author": "string",
        "related": "json", "blocks": "json"})),
    "authors": CollectionDef("c-auth", "authors", fields=_fields("authors", {
        "name": "string", "email": "string", "age": "integer", "boss": "string"})),
}), (
    RelationDef("r1", "m2o", "articles", "author", related_collection="authors", related_field="articles"),
    RelationDef("r2", "m2m", "articles", "related", related_collection="authors"),
    RelationDef("r3", "m2a", "articles", "blocks", related_collections=("authors",)),
    RelationDef("r4", "m2o", "authors", "boss", related_collection="authors", related_field="reports"),
))


def parse(params: Any) -> Any:
    return parse_list_query(params).filter


def refused(call: Any, path: list[Any], code: str = "VALIDATION_FAILED", status: int = 400) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call()
    err = caught.value
    assert (err.status, err.code) == (status, code), err.body()
    assert err.body()["errors"][0]["path"] == [str(p) for p in path], err.body()
    return err


def resolve(tree: Any, collection: str = "articles", **kw: Any) -> Any:
    return resolve_filter(tree, SNAP, collection, **kw)


# ---------------------------------------------------------------------- rule 1: bracket nesting
def test_rule1_bracket_nesting() -> None:
    assert parse({"filter[title][_eq]": "x"}) == {"title": {"_eq": "x"}}
    assert parse({"filter[title][_eq]": "x", "filter[title][_neq]": "y", "filter[views][_gt]": "3"}) == {
        "title": {"_eq": "x", "_neq": "y"}, "views": {"_gt": 3}}
    assert parse({"filter[author][name][_eq]": "Ann"}) == {"author": {"name": {"_eq": "Ann"}}}


def test_rule1_logical_groups_take_index_segments_in_index_order() -> None:
    assert parse([("filter[_and][1][b][_eq]", "2"), ("filter[_and][0][a][_eq]", "1")]) == {
        "_and": [{"a": {"_eq": 1}}, {"b": {"_eq": 2}}]}
    assert parse({"filter[_or][0][_and][0][a][_null]": "true", "filter[_or][0][_and][1][b][_eq]": "x",
                  "filter[_or][1][c][_in]": "1,2"}) == {
        "_or": [{"_and": [{"a": {"_null": True}}, {"b": {"_eq": "x"}}]}, {"c": {"_in": [1, 2]}}]}
    # sparse indexes are compacted, in order
    assert parse({"filter[_and][7][a][_eq]": "1", "filter[_and][3][b][_eq]": "2"}) == {
        "_and": [{"b": {"_eq": 2}}, {"a": {"_eq": 1}}]}


# ---------------------------------------------------------------------- rule 2: coercion
@pytest.mark.parametrize("text, value", [
    ("true", True), ("false", False), ("null", None), ("0", 0), ("-12", -12), ("42", 42), ("3.14", 3.14),
    ("-0.5", -0.5), ("007", "007"), ("-007", "-007"), ("00", "00"), ("0.50", 0.5), ("1e5", "1e5"), (".5", ".5"),
    ("5.", "5."), ("+5", "+5"), ("True", "True"), ("NULL", "NULL"), ("", ""), (" 1", " 1"), ("1 ", "1 "),
    ("0x10", "0x10"), ("1_000", "1_000"), ("NaN", "NaN"), ("Infinity", "Infinity"), ("abc", "abc"),
    (str(2**63 - 1), 2**63 - 1), (str(2**63), str(2**63)), ("1" * 400 + ".5", "1" * 400 + ".5"),
])
def test_rule2_coercion_table(text: str, value: Any) -> None:
    coerced = coerce_scalar(text)
    assert coerced == value and type(coerced) in (type(value), RawInt, RawFloat)
    if isinstance(value, bool) or value is None:
        assert coerced is value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        assert coerced.raw == text  # numbers remember their text (see test_string_fields_see_the_raw_text)
    assert parse({"filter[x][_eq]": text}) == {"x": {"_eq": value}}


def test_rule2_array_operators_split_on_commas() -> None:
    assert parse({"filter[a][_in]": "1,two,007,true,null,2.5"}) == {"a": {"_in": [1, "two", "007", True, None, 2.5]}}
    assert parse({"filter[a][_nin]": "x"}) == {"a": {"_nin": ["x"]}}
    assert parse({"filter[a][_in]": ""}) == {"a": {"_in": []}}
    assert parse({"filter[a][_between]": "1,10"}) == {"a": {"_between": [1, 10]}}
    # keys are strings: never coerced
    assert parse({"filter[m][_has_any_keys]": "1,true,b"}) == {"m": {"_has_any_keys": ["1", "true", "b"]}}
    assert parse({"filter[m][_has_all_keys]": "a"}) == {"m": {"_has_all_keys": ["a"]}}
    assert parse({"filter[m][_has_key]": "1"}) == {"m": {"_has_key": "1"}}


def test_rule2_json_contains_reads_json_objects_and_arrays() -> None:
    assert parse({"filter[m][_json_contains]": '{"a": [1, 2]}'}) == {"m": {"_json_contains": {"a": [1, 2]}}}
    assert parse({"filter[m][_json_contains]": '["x", 2]'}) == {"m": {"_json_contains": ["x", 2]}}
    assert parse({"filter[m][_json_contains]": "5"}) == {"m": {"_json_contains": 5}}
    assert parse({"filter[m][_json_contains]": "[not json"}) == {"m": {"_json_contains": "[not json"}}


def test_rule2_bracket_values_on_typed_fields() -> None:
    """Coerced numbers keep their text, so a string field compares the text that was sent."""
    node = resolve(parse({"filter[title][_eq]": "1.50"}))
    assert node == Condition(node.target, "_eq", "1.50")
    node = resolve(parse({"filter[title][_in]": "007,1.0,true"}))
    assert node.value == ("007", "1.0", "true")
    assert resolve(parse({"filter[views][_eq]": "007"})).value == 7  # numeric field: a number
    assert resolve(parse({"filter[published][_eq]": "true"})).value is True
    assert str(resolve(parse({"filter[price][_eq]": "1.50"})).value) == "1.50"  # decimals stay exact


# ---------------------------------------------------------------------- rule 3: JSON form
def test_rule3_json_form_and_precedence() -> None:
    tree = {"_or": [{"title": {"_eq": "a"}}, {"views": {"_gt": 1.5}}]}
    assert parse({"filter": json.dumps(tree)}) == tree
    assert parse({"filter": json.dumps(tree), "filter[title][_eq]": "ignored"}) == tree
    assert parse({"filter": "", "filter[title][_eq]": "used"}) == {"title": {"_eq": "used"}}
    assert parse({"filter": "{}"}) is None
    assert parse({"filter": "null"}) is None


# ---------------------------------------------------------------------- rule 4: malformed
@pytest.mark.parametrize("text", ["{", "{'a': 1}", '{"a": }', "nope", '{"a": NaN}', '{"a": Infinity}',
                                  "[1, 2]", '"text"', "5", "[" * 50, '{"a": ' + "9" * 5000 + "}",
                                  ])
def test_rule4_malformed_json_is_validation(text: str) -> None:
    refused(lambda: parse({"filter": text}), ["query", "filter"], code="VALIDATION")


@pytest.mark.parametrize("key", [
    "filter[a][_eq", "filter[a]]", "filter[][_eq]", "filter[a]", "filter[a][b]", "filter[_and][x][a][_eq]",
    "filter[_and][a][_eq]", "filter[_and][0]", "filter[a][_eq][b]", "filter[a][_eq][_eq]", "filter[_and]",
    "filter[a][[_eq]]", "filter [a][_eq]", "filter[a] [_eq]", "filter[_or][12345][a][_eq]", "filter[a][_]",
    "filter[a][][_eq]", "filter[_and][0][_or][a][_eq]",
])
def test_rule4_malformed_bracket_keys_are_ignored(key: str) -> None:
    assert parse({key: "1"}) is None
    assert parse({key: "1", "filter[ok][_eq]": "2"}) == {"ok": {"_eq": 2}}


# ---------------------------------------------------------------------- rule 5: dotted paths
def test_rule5_dotted_paths() -> None:
    eight = ".".join(["meta", "a", "b", "c", "d", "e", "f", "g"])
    assert check_filter({eight: {"_eq": 1}}) == {eight: {"_eq": 1}}
    node = resolve({eight: {"_eq": 1}})
    assert node.target.path == ("a", "b", "c", "d", "e", "f", "g")
    nine = eight + ".h"
    refused(lambda: check_filter({nine: {"_eq": 1}}), ["query", "filter", nine])
    refused(lambda: parse({f"filter[{nine}][_eq]": "1"}), ["query", "filter", nine])
    # nesting objects under a JSON field continues the path, with the same limit
    assert resolve({"meta": {"a": {"b": {"_eq": 1}}}}).target.path == ("a", "b")
    refused(lambda: resolve({"meta.a.b.c.d.e.f": {"g": {"h": {"_eq": 1}}}}), ["query", "filter", "meta.a.b.c.d.e.f", "g", "h"])


@pytest.mark.parametrize("key", ["a-b", "a b", "a..b", "a.", ".a", "é", "a.$", "$..a", "a'].b", "a'b", "a[0]",
                                 "a/b", "a\x00b", "", "a" * 65])
def test_rule5_bad_segments(key: str) -> None:
    refused(lambda: check_filter({key: {"_eq": 1}}), ["query", "filter", key])


# ---------------------------------------------------------------------- shapes
@pytest.mark.parametrize("tree, path", [
    ({"a": 1}, ["a"]),
    ({"a": {}}, ["a"]),
    ({"a": [{"_eq": 1}]}, ["a"]),
    ({"a": {"_eq": [1]}}, ["a", "_eq"]),
    ({"a": {"_eq": {"x": 1}}}, ["a", "_eq"]),
    ({"a": {"_lt": None}}, ["a", "_lt"]),
    ({"a": {"_gt": True}}, ["a", "_gt"]),
    ({"a": {"_in": "x"}}, ["a", "_in"]),
    ({"a": {"_in": [[1]]}}, ["a", "_in", 0]),
    ({"a": {"_null": "yes"}}, ["a", "_null"]),
    ({"a": {"_contains": None}}, ["a", "_contains"]),
    ({"a": {"_contains": [1]}}, ["a", "_contains"]),
    ({"a": {"_between": [1]}}, ["a", "_between"]),
    ({"a": {"_between": [1, None]}}, ["a", "_between"]),
    ({"a": {"_has_key": 1}}, ["a", "_has_key"]),
    ({"a": {"_has_any_keys": []}}, ["a", "_has_any_keys"]),
    ({"a": {"_has_all_keys": [1]}}, ["a", "_has_all_keys"]),
    ({"a": {"_eq": 1, "b": {"_eq": 2}}}, ["a"]),
    ({"a": {"_regex": "x"}}, ["a", "_regex"]),
    ({"_eq": 1}, ["_eq"]),
    ({"_not": [{"a": {"_eq": 1}}]}, ["_not"]),
    ({"_and": {"a": {"_eq": 1}}}, ["_and"]),
    ({"_and": []}, ["_and"]),
    ({"_or": [1]}, ["_or", 0]),
    ({"_or": [{}]}, ["_or", 0]),
    ({"a": {"_eq": 2**64}}, ["a", "_eq"]),
    ({"a": {"_eq": "nul\x00"}}, ["a", "_eq"]),
    ({"a": {"_eq": "\ud800"}}, ["a", "_eq"]),
])
def test_shapes_refused(tree: Any, path: list[Any]) -> None:
    refused(lambda: check_filter(tree), ["query", "filter", *path])


def test_operator_set_is_the_spec_list() -> None:
    ops = ["_eq", "_neq", "_lt", "_lte", "_gt", "_gte", "_in", "_nin", "_null", "_nnull", "_contains", "_icontains",
           "_starts_with", "_ends_with", "_between", "_json_contains", "_has_key", "_has_any_keys", "_has_all_keys"]
    operand = {"_in": [1], "_nin": [1], "_null": True, "_nnull": False, "_between": [1, 2], "_json_contains": {"a": 1},
               "_has_key": "a", "_has_any_keys": ["a"], "_has_all_keys": ["a"]}
    for op in ops:
        tree = {"meta": {op: operand.get(op, "x")}}
        assert check_filter(tree) == tree
        resolve({"meta": {op: operand.get(op, "x")}})  # a JSON field takes every operator


# ---------------------------------------------------------------------- bounds: hostile input
def fast(call: Any, path: list[Any], code: str = "VALIDATION_FAILED", work: int = 2_000) -> None:
    """Refused after a bounded amount of work: at most ``work`` Python lines run (counted with a
    trace function), not a wall-clock bound. A walk of the whole hostile input (20,000 levels) or
    work quadratic in a list's length would run far more; ``work`` is raised only where the
    refusal is linear in an input that is itself bounded (a few lines per list entry or key)."""
    lines = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal lines
        if event == "line":
            lines += 1
        return trace

    previous = sys.gettrace()  # a coverage tracer, say: put back afterwards
    sys.settrace(trace)
    try:
        refused(call, path, code)
    finally:
        sys.settrace(previous)
    assert lines <= work, f"{lines} lines run for one refusal (bound {work})"


def test_deep_nesting_is_refused_fast() -> None:
    tree: dict[str, Any] = {"a": {"_eq": 1}}
    for _ in range(MAX_FILTER_DEPTH):
        tree = {"_and": [tree]}
    fast(lambda: check_filter(tree), ["query", "filter", *["_and", 0] * MAX_FILTER_DEPTH])
    # the field's operator object is a level too: 8 groups around one field is the most
    assert check_filter(tree["_and"][0]["_and"][0]) == tree["_and"][0]["_and"][0]
    refused(lambda: check_filter(tree["_and"][0]), ["query", "filter", *["_and", 0] * 9, "a"])
    # deep enough for json.loads or a naive recursive walk to hit the recursion limit
    for levels in (900, 20_000):
        very = '{"_or": [' * levels + '{"a": {"_eq": 1}}' + "]}" * levels
        fast(lambda very=very: parse({"filter": very}), ["query", "filter"])  # well-formed: not "VALIDATION"
    fast(lambda: parse({"filter": '{"a": {"_eq": "' + "x" * 100_001 + '"}}'}), ["query", "filter"])
    key = "filter" + "[_and][0]" * 40 + "[a][_eq]"
    fast(lambda: parse({key: "1"}), ["query", "filter", *["_and", "0"] * 5])


def test_too_many_nodes() -> None:
    tree = {f"f{i}": {"_eq": i} for i in range(501)}
    # Linear in the 250 to 500 keys seen before the refusal (a few dozen lines each), not quadratic.
    fast(lambda: check_filter(tree), ["query", "filter", "f250"], work=20_000)  # a key and its operator: 2 nodes
    fast(lambda: parse({f"filter[f{i}][_eq]": "1" for i in range(501)}), ["query", "filter"], work=60_000)
    fast(lambda: check_filter({"_or": [{"a": {"_eq": i}} for i in range(300)]}), ["query", "filter", "_or", 249, "a", "_eq"],
         work=25_000)


def test_huge_lists() -> None:
    assert check_filter({"a": {"_in": list(range(400))}}) == {"a": {"_in": list(range(400))}}
    fast(lambda: check_filter({"a": {"_in": list(range(1001))}}), ["query", "filter", "a", "_in"])
    # One line per entry of the 10,000-entry list split before counting it.
    fast(lambda: parse({"filter[a][_in]": ",".join(str(i) for i in range(10_000))}), ["query", "filter", "a", "_in"],
         work=12_000)
    fast(lambda: parse({"filter": json.dumps({"a": {"_nin": list(range(10_000))}})}), ["query", "filter", "a", "_nin"])
    fast(lambda: check_filter({"a": {"_json_contains": list(range(1001))}}), ["query", "filter", "a", "_json_contains"])


def test_huge_strings() -> None:
    assert check_filter({"a": {"_eq": "x" * 10_000}}) == {"a": {"_eq": "x" * 10_000}}
    fast(lambda: check_filter({"a": {"_eq": "x" * 10_001}}), ["query", "filter", "a", "_eq"])
    fast(lambda: parse({"filter[a][_contains]": "x" * 50_000}), ["query", "filter", "a", "_contains"])
    fast(lambda: check_filter({"a": {"_json_contains": {"k" * 10_001: 1}}}), ["query", "filter", "a", "_json_contains"])


def test_numbers_out_of_range() -> None:
    refused(lambda: parse({"filter": '{"a": {"_eq": 1e400}}'}), ["query", "filter", "a", "_eq"])
    refused(lambda: parse({"filter": '{"a": {"_eq": 99999999999999999999}}'}), ["query", "filter", "a", "_eq"])


@pytest.mark.parametrize("value", ["'; DROP TABLE svc_items--", "a'].b", "$..", "%", "_", "\\", "1 OR 1=1"])
def test_injection_looking_values_are_plain_values(value: str) -> None:
    node = resolve(parse({"filter[title][_eq]": value}))
    assert node.value == value
    node = resolve(parse({"filter[meta][_has_key]": value}))
    assert node.value == value


@settings(max_examples=examples(300), deadline=None)
# JSON values only: json.dumps writes an infinite or NaN float as `Infinity`/`NaN`, which is not
# JSON (the server refuses that text as a malformed filter, `VALIDATION`).
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
                        st.sampled_from(["a", "b.c", "_and", "_or", "_eq", "_in", "_between", "_null", "_x", "title",
                                         "author", "meta", "_json_contains", "_has_key"]), kids, max_size=4),
                    max_leaves=20))
def test_arbitrary_json_is_accepted_or_refused_with_a_400(tree: Any) -> None:
    for name, call in (("check", lambda: check_filter(tree)),
                       ("resolve", lambda: resolve(tree) if isinstance(tree, dict) else None),
                       ("parse", lambda: parse({"filter": json.dumps(tree)}))):
        try:
            call()
        except ApiError as exc:
            # The query string's filter that is JSON but not an object is the malformed-filter
            # code; every other refusal is a validation failure.
            malformed = name == "parse" and not isinstance(tree, dict)
            assert (exc.status, exc.code) == (400, "VALIDATION" if malformed else "VALIDATION_FAILED"), exc.body()


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.text(alphabet="filter[]_.aeq0123", max_size=30), st.text(max_size=10)), max_size=6))
def test_arbitrary_bracket_keys_never_crash(pairs: list[tuple[str, str]]) -> None:
    try:
        parse_list_query(pairs)
    except ApiError as exc:
        assert exc.status == 400


# ---------------------------------------------------------------------- resolution
def test_structural_columns() -> None:
    node = resolve({"status": {"_eq": "draft"}, "sort": {"_gt": 2}, "id": {"_in": ["a"]}})
    assert [c.target.column for c in node.children] == ["status", "sort", "id"]
    created = resolve({"createdAt": {"_gte": "2024-05-01T12:00:00+02:00"}})
    assert created.value.isoformat() == "2024-05-01T10:00:00+00:00"
    assert resolve({"updatedAt": {"_lt": "2024-05-01"}}).value.isoformat() == "2024-05-01T00:00:00+00:00"
    refused(lambda: resolve({"createdAt": {"_eq": "yesterday"}}), ["query", "filter", "createdAt", "_eq"])
    refused(lambda: resolve({"createdAt": {"_contains": "2024"}}), ["query", "filter", "createdAt", "_contains"])
    refused(lambda: resolve({"status.x": {"_eq": 1}}), ["query", "filter", "status.x"])
    refused(lambda: resolve({"deletedAt": {"_null": True}}), ["query", "filter", "deletedAt"])


def test_unknown_fields_and_wrong_kinds_of_paths() -> None:
    refused(lambda: resolve({"nope": {"_eq": 1}}), ["query", "filter", "nope"])
    refused(lambda: resolve({"_and": [{"title.x": {"_eq": 1}}]}), ["query", "filter", "_and", 0, "title.x"])
    refused(lambda: resolve({"title": {"x": {"_eq": 1}}}), ["query", "filter", "title"])
    refused(lambda: resolve({"author": {"nope": {"_eq": 1}}}), ["query", "filter", "author", "nope"])
    refused(lambda: resolve({"articles": {"_null": True}}, "authors"), ["query", "filter", "articles"])
    refused(lambda: resolve({"blocks.name": {"_eq": 1}}), ["query", "filter", "blocks.name"])
    refused(lambda: resolve({"tags.x": {"_eq": 1}}), ["query", "filter", "tags.x"])
    with pytest.raises(ApiError) as caught:
        resolve({"x": {"_eq": 1}}, "nope")
    assert caught.value.status == 404


@pytest.mark.parametrize("tree, path", [
    ({"views": {"_contains": "1"}}, ["views", "_contains"]),
    ({"published": {"_lt": 1}}, ["published", "_lt"]),
    ({"title": {"_has_key": "a"}}, ["title", "_has_key"]),
    ({"title": {"_json_contains": "a"}}, ["title", "_json_contains"]),
    ({"tags": {"_eq": "a"}}, ["tags", "_eq"]),
    ({"tags": {"_icontains": "a"}}, ["tags", "_icontains"]),
    ({"views": {"_eq": "abc"}}, ["views", "_eq"]),
    ({"views": {"_eq": True}}, ["views", "_eq"]),
    ({"published": {"_eq": "yes"}}, ["published", "_eq"]),
    ({"publishedAt": {"_gt": "soon"}}, ["publishedAt", "_gt"]),
    ({"day": {"_eq": "2024-02-30"}}, ["day", "_eq"]),
    ({"meta.a": {"_between": [1, "z"]}}, ["meta.a", "_between"]),
    ({"title": {"_in": ["a", ["b"]]}}, ["title", "_in", 1]),
])
def test_operators_and_operands_by_type(tree: Any, path: list[Any]) -> None:
    refused(lambda: resolve(tree), ["query", "filter", *path])


def test_operands_are_typed_for_their_target() -> None:
    assert resolve({"title": {"_eq": 5}}).value == "5"
    assert resolve({"title": {"_eq": True}}).value == "true"
    assert resolve({"title": {"_eq": 1.5}}).value == "1.5"
    assert resolve({"views": {"_gte": "12"}}).value == 12
    assert resolve({"rating": {"_lt": 2}}).value == 2
    assert resolve({"big": {"_eq": "9223372036854775807"}}).value == 2**63 - 1
    assert str(resolve({"price": {"_gt": 0.1}}).value) == "0.1"
    assert resolve({"ref": {"_eq": "0B8F0000-0000-4000-8000-000000000000"}}).value == "0b8f0000-0000-4000-8000-000000000000"
    assert resolve({"publishedAt": {"_eq": "2024-05-01T12:00:00+02:00"}}).value == "2024-05-01T10:00:00Z"
    assert resolve({"publishedAt": {"_gte": "2024-05-01"}}).value == "2024-05-01"
    assert resolve({"stamp": {"_lt": "2024-05-01T12:00:00"}}).value == "2024-05-01T12:00:00Z"
    assert resolve({"at": {"_eq": "13:45"}}).value == "13:45:00"
    assert resolve({"meta.n": {"_eq": 5}}).value == 5


def test_null_forms_are_normalised() -> None:
    target = resolve({"title": {"_null": True}}).target
    assert resolve({"title": {"_null": True}}) == Condition(target, "_null")
    assert resolve({"title": {"_null": False}}) == Condition(target, "_nnull")
    assert resolve({"title": {"_nnull": False}}) == Condition(target, "_null")
    assert resolve({"title": {"_eq": None}}) == Condition(target, "_null")
    assert resolve({"title": {"_neq": None}}) == Condition(target, "_nnull")
    assert resolve({"title": {"_in": []}}) == FALSE
    assert resolve({"title": {"_nin": []}}) == Condition(target, "_nnull")
    assert resolve({"title": {"_nin": [None]}}) == Condition(target, "_nnull")
    assert resolve({"title": {"_in": ["a", None, "a"]}}) == Group("_or", (Condition(target, "_in", ("a",)),
                                                                        Condition(target, "_null")))


def test_relations() -> None:
    node = resolve({"author": {"name": {"_eq": "Ann"}, "age": {"_gt": 30}}})
    assert isinstance(node, Exists) and node.link.kind == "m2o" and node.link.collection_id == "c-auth"
    assert node.link.holder.name == "author" and isinstance(node.child, Group)
    dotted = resolve({"author.name": {"_eq": "Ann"}})
    assert isinstance(dotted, Exists) and dotted.child.target.name == "name"
    o2m = resolve({"articles": {"title": {"_contains": "x"}}}, "authors")
    assert o2m.link.kind == "o2m" and o2m.link.holder.name == "author" and o2m.link.collection == "articles"
    m2m = resolve({"related.email": {"_null": True}})
    assert m2m.link.kind == "m2m" and m2m.link.holder.name == "related"
    chain = resolve({"author.boss.boss.name": {"_eq": "x"}})
    assert chain.child.child.child.target.name == "name"
    refused(lambda: resolve({"author.boss.boss.boss.name": {"_eq": "x"}}), ["query", "filter", "author.boss.boss.boss.name"])
    # the m2o field itself is a value: operators apply to the stored id
    assert resolve({"author": {"_null": True}}).target.name == "author"
    assert resolve({"author": {"_and": [{"name": {"_eq": "a"}}]}}).child.target.name == "name"


def test_related_read_conditions_are_attached() -> None:
    node = resolve({"author.name": {"_eq": "Ann"}}, row_filter_for=lambda c: {"age": {"_gt": 18}} if c == "authors" else None)
    assert node.link.row_filter.target.name == "age"
    assert resolve({"title": {"_eq": "x"}}, row_filter_for=lambda c: 1 / 0) is not None  # only relations ask


# ---------------------------------------------------------------------- field policy
def policy(denied: set[tuple[str, str]]) -> Any:
    return lambda collection, field: (collection, field) not in denied


@pytest.mark.parametrize("tree, collection, denied, path", [
    ({"title": {"_eq": "x"}}, "articles", {("articles", "title")}, ["title"]),
    ({"_or": [{"views": {"_gt": 1}}, {"meta.secret": {"_eq": 1}}]}, "articles", {("articles", "meta")}, ["_or", 1, "meta.secret"]),
    ({"status": {"_eq": "draft"}}, "articles", {("articles", "status")}, ["status"]),
    ({"author.email": {"_eq": "x"}}, "articles", {("authors", "email")}, ["author.email"]),
    ({"author": {"email": {"_eq": "x"}}}, "articles", {("authors", "email")}, ["author", "email"]),
    ({"author": {"name": {"_eq": "x"}}}, "articles", {("articles", "author")}, ["author"]),
    ({"articles": {"title": {"_eq": "x"}}}, "authors", {("articles", "author")}, ["articles"]),
    ({"related.name": {"_eq": "x"}}, "articles", {("authors", "name")}, ["related.name"]),
])
def test_unreadable_fields_are_refused(tree: Any, collection: str, denied: set[tuple[str, str]], path: list[Any]) -> None:
    err = refused(lambda: resolve(tree, collection, can_read=policy(denied)), ["query", "filter", *path],
                  code="PERMISSION_DENIED", status=403)
    ext = err.body()["errors"][0]["extensions"]
    assert ext["reason"] == "field_policy" and (collection, ext["field"]) in {(c, f) for c, f in denied} | {
        (collection, ext["field"])}


def test_readable_fields_pass_the_policy() -> None:
    assert resolve({"title": {"_eq": "x"}, "author.name": {"_eq": "y"}},
                   can_read=policy({("articles", "views"), ("authors", "email")}))
