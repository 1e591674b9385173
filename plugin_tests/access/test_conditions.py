"""The conditions checker, directly: accepted trees, refused trees, and a property test that
it never fails with anything but ``ApiError`` on arbitrary JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel import ApiError
from kernel.testing import examples
from plugins.access.rules.conditions import MAX_DEPTH, MAX_NODES, validate_conditions, validate_fields

GOOD = [
    {"status": {"_eq": "published"}},
    {"owner": {"_eq": "$CURRENT_USER"}},
    {"role": {"_in": "$CURRENT_ROLES"}},
    {"role": {"_nin": ["$CURRENT_ROLE", "x"]}},
    {"publish_at": {"_lte": "$NOW"}},
    {"_and": [{"a": {"_gt": 1}}, {"_or": [{"b": {"_null": True}}, {"c": {"_nnull": True}}]}]},
    {"title": {"_contains": "x", "_icontains": "y", "_starts_with": "a", "_ends_with": "z"}},
    {"views": {"_between": [1, 10]}},
    {"meta.tags.first": {"_eq": "x"}},
    {"data": {"_json_contains": {"a": [1, {"b": None}]}}},
    {"data": {"_has_key": "a"}, "other": {"_has_any_keys": ["a", "b"]}, "third": {"_has_all_keys": ["c"]}},
    {"author": {"name": {"_eq": "Ann"}}},
    {"price": {"_eq": 1.5}, "flag": {"_eq": False}, "gone": {"_eq": None}},
    {"note": {"_eq": "$5 off"}},
]

BAD = [
    ({"a": 1}, ["conditions", "a"]),
    ({"a": {}}, ["conditions", "a"]),
    ({"a": {"_eq": [1]}}, ["conditions", "a", "_eq"]),
    ({"a": {"_eq": {"x": 1}}}, ["conditions", "a", "_eq"]),
    ({"a": {"_lt": None}}, ["conditions", "a", "_lt"]),
    ({"a": {"_lt": True}}, ["conditions", "a", "_lt"]),
    ({"a": {"_in": "x"}}, ["conditions", "a", "_in"]),
    ({"a": {"_in": [[1]]}}, ["conditions", "a", "_in", 0]),
    ({"a": {"_null": "yes"}}, ["conditions", "a", "_null"]),
    ({"a": {"_contains": 3}}, ["conditions", "a", "_contains"]),
    ({"a": {"_between": [1]}}, ["conditions", "a", "_between"]),
    ({"a": {"_between": [1, None]}}, ["conditions", "a", "_between"]),
    ({"a": {"_has_any_keys": []}}, ["conditions", "a", "_has_any_keys"]),
    ({"a": {"_has_all_keys": [1]}}, ["conditions", "a", "_has_all_keys"]),
    ({"a": {"_eq": 1, "b": {"_eq": 2}}}, ["conditions", "a"]),
    ({"a": {"_regex": "x"}}, ["conditions", "a", "_regex"]),
    ({"_not": [{"a": {"_eq": 1}}]}, ["conditions", "_not"]),
    ({"_and": {"a": {"_eq": 1}}}, ["conditions", "_and"]),
    ({"_and": []}, ["conditions", "_and"]),
    ({"_or": [1]}, ["conditions", "_or", 0]),
    ({"a b": {"_eq": 1}}, ["conditions", "a b"]),
    ({"a..b": {"_eq": 1}}, ["conditions", "a..b"]),
    ({"1a": {"_eq": 1}}, ["conditions", "1a"]),
    ({".".join("abcdefghi"): {"_eq": 1}}, None),
    ({"a": {"_eq": "$CURRENT_USR"}}, ["conditions", "a", "_eq"]),
    ({"a": {"_eq": "$CURRENT_ROLES"}}, ["conditions", "a", "_eq"]),
    ({"a": {"_eq": "$CURRENT_USER.email"}}, ["conditions", "a", "_eq"]),
    ({"a": {"_eq": "nul\x00"}}, ["conditions", "a", "_eq"]),
    ({"a": {"_eq": "\ud800"}}, ["conditions", "a", "_eq"]),
    ({"a": {"_eq": "x" * 1001}}, ["conditions", "a", "_eq"]),
    ({"a": {"_eq": float("nan")}}, ["conditions", "a", "_eq"]),
    ({"a": {"_eq": float("inf")}}, ["conditions", "a", "_eq"]),
    ({"a": {"_eq": 2**64}}, ["conditions", "a", "_eq"]),
    ({"a": {"_json_contains": {"k\x00": 1}}}, None),
    ([{"a": {"_eq": 1}}], ["conditions"]),
    ("a = 1", ["conditions"]),
]


@pytest.mark.parametrize("tree", GOOD)
def test_accepted(tree):
    assert validate_conditions(tree) == tree


@pytest.mark.parametrize("tree, path", BAD)
def test_refused_with_a_path(tree, path):
    with pytest.raises(ApiError) as info:
        validate_conditions(tree)
    assert info.value.status == 400 and info.value.code == "VALIDATION_FAILED"
    if path is not None:
        assert info.value.details[0].path == path


def test_empty_means_unrestricted():
    assert validate_conditions(None) is None and validate_conditions({}) is None


def test_depth_limit():
    tree: dict = {"a": {"_eq": 1}}  # two levels: the group and the field's operators
    for _ in range(MAX_DEPTH - 2):
        tree = {"_and": [tree]}
    assert validate_conditions(tree) == tree
    with pytest.raises(ApiError, match="deeper"):
        validate_conditions({"_and": [tree]})


def test_size_limit():
    with pytest.raises(ApiError, match="too large"):
        validate_conditions({"a": {"_in": list(range(900))}, "b": {"_nin": list(range(900))}})
    with pytest.raises(ApiError, match="too large"):
        validate_conditions({f"f{i}": {"_eq": i} for i in range(MAX_NODES)})


def test_fields():
    assert validate_fields(None) == ["*"]
    assert validate_fields([]) == []
    assert validate_fields(["a", "b", "a"]) == ["a", "b"]
    assert validate_fields(["a", "*"]) == ["*"]
    for bad in ("*", [None], ["a.b"], ["x" * 65], [""], ["a\n"]):
        with pytest.raises(ApiError):
            validate_fields(bad)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
    | st.sampled_from(["_eq", "_in", "_and", "_or", "$NOW", "$CURRENT_ROLES", "a.b", "_between"]),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(["a", "b.c", "_eq", "_in", "_and", "_or", "_between", "_null",
                                       "_json_contains", "_has_key", "_x", "1"]) | st.text(max_size=5),
                      children, max_size=4),
    max_leaves=30,
)


@settings(max_examples=examples(400), deadline=None)
@given(JSON)
def test_arbitrary_json_is_accepted_or_refused_cleanly(tree):
    try:
        result = validate_conditions(tree)
    except ApiError as exc:
        assert exc.status == 400 and exc.details[0].path and exc.details[0].path[0] == "conditions"
        return
    # What is accepted can be stored as strict JSON (no NaN, no lone surrogates, no NUL).
    text = json.dumps(result, allow_nan=False, ensure_ascii=False)
    text.encode("utf-8")
    assert "\\u0000" not in text
