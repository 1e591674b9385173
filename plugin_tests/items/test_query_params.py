"""``parse_list_query``: every list parameter in the documented and Directus's forms,
its bounds and its errors (400 ``VALIDATION_FAILED`` with ``path: ["query", name, ...]``), from a
plain mapping, from ``(key, value)`` pairs, and from Falcon's real ``req.params``."""

from __future__ import annotations

import json
from typing import Any

import falcon
import falcon.testing
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel import ApiError
from kernel.testing import examples
from plugins.items.query import ListQuery, parse_list_query
from plugins.items.query.parse.params import DeepQuery


def fails(params: Any, path: list[str], code: str = "VALIDATION_FAILED", **kw: Any) -> ApiError:
    with pytest.raises(ApiError) as caught:
        parse_list_query(params, **kw)
    assert caught.value.status == 400
    assert caught.value.code == code, caught.value.body()
    assert caught.value.body()["errors"][0]["path"] == path, caught.value.body()
    return caught.value


# ---------------------------------------------------------------------- defaults and paging
def test_defaults() -> None:
    assert parse_list_query({}) == ListQuery()
    q = parse_list_query({})
    assert (q.limit, q.offset, q.page, q.meta, q.with_total, q.is_aggregate) == (25, 0, None, "total_count", True, False)


@pytest.mark.parametrize("raw, limit", [("1", 1), ("200", 200), (" 50 ", 50), ("", 25)])
def test_limit(raw: str, limit: int) -> None:
    assert parse_list_query({"limit": raw}).limit == limit


@pytest.mark.parametrize("raw", ["0", "201", "-1", "abc", "1.5", "1e2", "99999999999999999999"])
def test_limit_out_of_range_or_not_an_integer(raw: str) -> None:
    fails({"limit": raw}, ["query", "limit"])


def test_limit_bounds_are_the_callers() -> None:
    assert parse_list_query({}, default_limit=10).limit == 10
    assert parse_list_query({"limit": "500"}, max_limit=500).limit == 500
    fails({"limit": "201"}, ["query", "limit"], max_limit=200)


def test_offset_and_page() -> None:
    assert parse_list_query({"offset": "40"}).offset == 40
    q = parse_list_query({"page": "3", "limit": "10"})
    assert (q.page, q.offset) == (3, 20)
    # Directus: page wins over offset.
    assert parse_list_query({"page": "2", "offset": "7"}).offset == 25
    fails({"offset": "-1"}, ["query", "offset"])
    fails({"page": "0"}, ["query", "page"])
    fails({"page": "999999999999", "limit": "200"}, ["query", "page"])


def test_a_scalar_given_twice_keeps_the_last() -> None:
    assert parse_list_query({"limit": ["5", "7"]}).limit == 7
    assert parse_list_query([("limit", "5"), ("limit", "9")]).limit == 9


@pytest.mark.parametrize("raw, meta", [("total_count", "total_count"), ("none", "none"), ("filter_count", "total_count"),
                                        ("*", "total_count"), ("total_count,filter_count", "total_count")])
def test_meta(raw: str, meta: str) -> None:
    q = parse_list_query({"meta": raw})
    assert q.meta == meta and q.with_total == (meta != "none")


@pytest.mark.parametrize("raw", ["bogus", "none,total_count", "count"])
def test_meta_refused(raw: str) -> None:
    fails({"meta": raw}, ["query", "meta"])


# ---------------------------------------------------------------------- name lists
def test_fields_forms() -> None:
    assert parse_list_query({"fields": "title,author.name,*,author.*"}).fields == ["title", "author.name", "*", "author.*"]
    assert parse_list_query({"fields[]": ["a", "b"]}).fields == ["a", "b"]
    assert parse_list_query([("fields[0]", "a"), ("fields[1]", "b,c")]).fields == ["a", "b", "c"]
    assert parse_list_query({"fields": '["a", "b.c"]'}).fields == ["a", "b.c"]
    assert parse_list_query({"fields": " a , ,a "}).fields == ["a"]
    assert parse_list_query({"fields": ""}).fields is None


@pytest.mark.parametrize("raw", ["a b", "a..b", "a-b", ".a", "é", ".".join("abcdefghi"), '["a", 1]', "[not json"])
def test_fields_refused(raw: str) -> None:
    fails({"fields": raw}, ["query", "fields"])


def test_too_many_names() -> None:
    fails({"fields": ",".join(f"f{i}" for i in range(201))}, ["query", "fields"])


def test_sort_forms() -> None:
    assert parse_list_query({"sort": "-views,title,+id"}).sort == [("views", True), ("title", False), ("id", False)]
    assert parse_list_query({"sort[]": ["-a", "b"]}).sort == [("a", True), ("b", False)]
    assert parse_list_query({"sort": '["-a.b"]'}).sort == [("a.b", True)]
    assert parse_list_query({"sort": ["a", "-b"]}).sort == [("a", False), ("b", True)]


@pytest.mark.parametrize("raw", ["-", "--a", "?", "a b", "a.b.c.d.e.f.g.h.i"])
def test_sort_refused(raw: str) -> None:
    fails({"sort": raw}, ["query", "sort"])


def test_group_by_forms() -> None:
    assert parse_list_query({"groupBy": "a,b"}).group_by == ["a", "b"]
    assert parse_list_query({"groupBy[]": ["a", "meta.kind"]}).group_by == ["a", "meta.kind"]
    assert parse_list_query({"groupBy": '["a"]'}).group_by == ["a"]
    fails({"groupBy": "a;b"}, ["query", "groupBy"])


# ---------------------------------------------------------------------- aggregate
@pytest.mark.parametrize("params, aggregate", [
    ({"aggregate[count]": "*"}, {"count": ["*"]}),
    ({"aggregate[sum]": "views,rating"}, {"sum": ["views", "rating"]}),
    ({"aggregate[sum][]": ["views", "rating"]}, {"sum": ["views", "rating"]}),
    ({"aggregate[count]": ["*", "id"], "aggregate[max]": "views"}, {"count": ["*", "id"], "max": ["views"]}),
    ({"aggregate": '{"count": "*"}'}, {"count": ["*"]}),
    ({"aggregate": '{"sum": ["views"], "avg": "a,b"}'}, {"sum": ["views"], "avg": ["a", "b"]}),
    # the JSON form wins over brackets, as for filter
    ({"aggregate": '{"count": "*"}', "aggregate[sum]": "x"}, {"count": ["*"]}),
])
def test_aggregate_forms(params: dict[str, Any], aggregate: dict[str, list[str]]) -> None:
    q = parse_list_query(params)
    assert q.aggregate == aggregate and q.is_aggregate


def test_aggregate_refused() -> None:
    fails({"aggregate[median]": "x"}, ["query", "aggregate", "median"])
    fails({"aggregate[sum]": ""}, ["query", "aggregate", "sum"])
    fails({"aggregate[sum]": "a b"}, ["query", "aggregate", "sum"])
    fails({"aggregate": "{nope"}, ["query", "aggregate"])
    fails({"aggregate": "[1]"}, ["query", "aggregate"])
    fails({"aggregate": '{"sum": [1]}'}, ["query", "aggregate", "sum"])


# ---------------------------------------------------------------------- deep
def test_deep_bracket_form() -> None:
    q = parse_list_query({
        "deep[author][_limit]": "5",
        "deep[comments][_filter][body][_contains]": "x",
        "deep[comments][_filter][_or][0][n][_gt]": "3",
        "deep[comments][_sort]": "-date",
        "deep[comments][fields]": "body,date",  # the spec's unprefixed spelling
        "deep[comments][author][_limit]": "2",
        "deep[comments][_offset]": "4",
    })
    assert q.deep["author"] == DeepQuery(limit=5)
    comments = q.deep["comments"]
    assert comments.filter == {"body": {"_contains": "x"}, "_or": [{"n": {"_gt": 3}}]}
    assert comments.sort == [("date", True)]
    assert comments.fields == ["body", "date"]
    assert comments.offset == 4
    assert comments.deep == {"author": DeepQuery(limit=2)}


def test_deep_json_form_wins() -> None:
    deep = {"comments": {"_limit": 3, "_filter": {"a": {"_eq": 1}}, "_sort": ["-a"], "_fields": "a,b",
                         "author": {"_page": 2, "_limit": 10}}}
    q = parse_list_query({"deep": json.dumps(deep), "deep[other][_limit]": "1"})
    assert set(q.deep) == {"comments"}
    c = q.deep["comments"]
    assert (c.limit, c.filter, c.sort, c.fields) == (3, {"a": {"_eq": 1}}, [("a", True)], ["a", "b"])
    assert c.deep["author"].offset == 10


def test_deep_filter_as_json_text_in_a_bracket_key() -> None:
    q = parse_list_query({"deep[comments][_filter]": '{"a": {"_null": true}}'})
    assert q.deep["comments"].filter == {"a": {"_null": True}}


@pytest.mark.parametrize("params, path, code", [
    ({"deep[c][_limit]": "0"}, ["query", "deep", "c", "_limit"], "VALIDATION_FAILED"),
    ({"deep[c][_limit]": "x"}, ["query", "deep", "c", "_limit"], "VALIDATION_FAILED"),
    ({"deep[c][_bogus]": "1"}, ["query", "deep", "c", "_bogus"], "VALIDATION_FAILED"),
    ({"deep[c][_filter]": "{bad"}, ["query", "deep", "c", "_filter"], "VALIDATION"),
    ({"deep[c][_filter][a][_regex]": "1"}, ["query", "deep", "c", "_filter", "a", "_regex"], "VALIDATION_FAILED"),
    ({"deep": "[1]"}, ["query", "deep"], "VALIDATION_FAILED"),
    ({"deep": "{bad"}, ["query", "deep"], "VALIDATION_FAILED"),
    ({"deep": '{"c": 5}'}, ["query", "deep", "c"], "VALIDATION_FAILED"),
    ({"deep": '{"c": {"_filter": [1]}}'}, ["query", "deep", "c", "_filter"], "VALIDATION_FAILED"),
    ({"deep[a][b][c][d][e][_limit]": "1"}, ["query", "deep", "a", "b", "c", "d"], "VALIDATION_FAILED"),
])
def test_deep_refused(params: dict[str, str], path: list[str], code: str) -> None:
    fails(params, path, code)


def test_deep_malformed_keys_are_ignored() -> None:
    assert parse_list_query({"deep[a b][_limit]": "1", "deep[]": "x", "deep[_filter][a][_eq]": "1",
                             "deep[_limit]": "2"}).deep == {}


def test_deep_json_cannot_reach_the_bracket_internals() -> None:
    fails({"deep": json.dumps({"c": {"\u0000brackets": [[["a", "_eq"], 1]]}})}, ["query", "deep", "c", "\x00brackets"])


# ---------------------------------------------------------------------- filter and the rest
def test_filter_is_read_and_malformed_json_is_validation() -> None:
    assert parse_list_query({"filter[title][_eq]": "x"}).filter == {"title": {"_eq": "x"}}
    fails({"filter": "{not json"}, ["query", "filter"], code="VALIDATION")


def test_unknown_parameters_are_ignored() -> None:
    assert parse_list_query({"search": "x", "access_token": "t", "cacheBust": "1", "weird[": "x"}) == ListQuery()


def test_pairs_and_mapping_agree() -> None:
    pairs = [("filter[_and][0][a][_eq]", "1"), ("filter[_and][1][b][_in]", "x,y"), ("sort", "-a"),
             ("limit", "5"), ("aggregate[count]", "*"), ("groupBy[]", "a"), ("groupBy[]", "b")]
    mapping: dict[str, Any] = {}
    for key, value in pairs:
        mapping[key] = [*mapping[key], value] if key in mapping else value
    assert parse_list_query(pairs) == parse_list_query(mapping)


def test_from_falcon_req_params() -> None:
    """What the items route will pass: Falcon's ``req.params`` with csv parsing off."""
    seen: dict[str, Any] = {}

    class Resource:
        def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
            seen["query"] = parse_list_query(req.params)

    app = falcon.App()
    app.req_options.auto_parse_qs_csv = False
    app.add_route("/items", Resource())
    qs = ("filter%5Btitle%5D%5B_in%5D=a,b&filter%5B_or%5D%5B0%5D%5Bn%5D%5B_gt%5D=3&sort=-n,title"
          "&groupBy%5B%5D=a&groupBy%5B%5D=b&aggregate%5Bcount%5D=*&limit=5&page=2&fields=a,b&filter%5Bx%5D%5B_eq%5D=")
    result = falcon.testing.TestClient(app).simulate_get("/items", query_string=qs)
    assert result.status_code == 200
    q = seen["query"]
    assert q.filter == {"title": {"_in": ["a", "b"]}, "_or": [{"n": {"_gt": 3}}], "x": {"_eq": ""}}
    assert (q.sort, q.group_by, q.aggregate, q.limit, q.offset, q.fields) == (
        [("n", True), ("title", False)], ["a", "b"], {"count": ["*"]}, 5, 5, ["a", "b"])


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
                       lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
                           st.sampled_from(["a", "_limit", "_filter", "_sort", "_fields", "count", "sum", "fields",
                                            "\x00", "b.c", "_eq", "_and"]), kids, max_size=3), max_leaves=10)
KEYS = st.tuples(st.sampled_from(["fields", "sort", "groupBy", "aggregate", "deep", "filter", "limit", "offset", "page",
                                  "meta"]),
                 st.lists(st.sampled_from(["", "0", "a", "_limit", "_filter", "_eq", "count", "[", "]"]), max_size=4)
                 ).map(lambda k: k[0] + "".join(f"[{s}]" for s in k[1]))
VALUES = st.one_of(st.text(max_size=12), JSONISH.map(json.dumps), st.sampled_from(["*", "-a,b", "1,2", "", "null"]))


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.tuples(KEYS, VALUES), max_size=6))
def test_any_query_string_parses_or_is_a_400(pairs: list[tuple[str, str]]) -> None:
    try:
        parse_list_query(pairs)
    except ApiError as exc:
        assert exc.status == 400 and exc.code in ("VALIDATION", "VALIDATION_FAILED"), exc.body()


def test_nesting_bounds_fields_and_deep() -> None:
    """REST nests 3 relations (``fields`` names of 8 segments, ``deep`` 4 deep); a caller that
    asks for ``nesting=10`` (GraphQL) gets names of 11 segments and ``deep`` 10 deep, no more."""
    name = ".".join(["next"] * 10 + ["id"])
    deep = {"next": {}}
    inner = deep["next"]
    for _ in range(9):
        inner["next"] = {"_limit": 1}
        inner = inner["next"]
    assert parse_list_query({}).nesting == 3
    q = parse_list_query({"fields": name, "deep": json.dumps(deep)}, nesting=10)
    assert (q.fields, q.nesting) == ([name], 10)
    level, depth = q.deep["next"], 1
    while level.deep:
        level, depth = level.deep["next"], depth + 1
    assert depth == 10 and level.limit == 1
    fails({"fields": name}, ["query", "fields"])
    fails({"deep": json.dumps(deep)}, ["query", "deep", "next", "next", "next", "next"])
    fails({"fields": f"{name}.x"}, ["query", "fields"], nesting=10)
    fails({"deep": json.dumps({"next": deep})}, ["query", "deep", *["next"] * 10], nesting=10)
    for nesting in (2, 11):
        with pytest.raises(ValueError, match="nesting must be 3 to 10"):
            parse_list_query({}, nesting=nesting)
