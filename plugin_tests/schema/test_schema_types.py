"""``plugins.schema.fieldtypes.types``: each type's accepted values and normal forms, the validation options,
and properties of ``convert``/``converts`` checked with hypothesis."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.testing import examples
from plugins.schema.fields.conversion import convert, converts
from plugins.schema.fieldtypes.types import FIELD_TYPES, coerce, validate_value
from plugins.schema.snapshot import FieldDef

GOOD = [
    ("boolean", True, True), ("boolean", False, False),
    ("integer", 5, 5), ("integer", -(2**31), -(2**31)), ("integer", 3.0, 3),
    ("float", 1.5, 1.5), ("float", 2, 2.0),
    ("decimal", "12.50", "12.50"), ("decimal", 0.1, "0.1"), ("decimal", 7, "7"), ("decimal", "1e3", "1000"),
    ("decimal", "-0.00", "0.00"), ("decimal", "123456789012345678901234567890.123456789",
                                   "123456789012345678901234567890.123456789"),
    ("bigInteger", 2**63 - 1, 2**63 - 1), ("bigInteger", "-9223372036854775808", -(2**63)),
    ("dateTime", "2024-05-01T12:30:00", "2024-05-01T12:30:00"),
    ("dateTime", "2024-05-01T12:30:00+02:00", "2024-05-01T10:30:00Z"),
    ("dateTime", "2024-05-01 12:30", "2024-05-01T12:30:00"),
    ("timestamp", "2024-05-01T12:30:00", "2024-05-01T12:30:00Z"),
    ("timestamp", "2024-05-01T12:30:00.5Z", "2024-05-01T12:30:00.500000Z"),
    ("date", "2024-02-29", "2024-02-29"), ("time", "13:45", "13:45:00"), ("time", "13:45:30.25", "13:45:30.250000"),
    ("string", "hello", "hello"), ("text", "x" * 10_000, "x" * 10_000), ("code", "print(1)\n", "print(1)\n"),
    ("uuid", "0B8F5E0A-1234-4ABC-8DEF-0123456789AB", "0b8f5e0a-1234-4abc-8def-0123456789ab"),
    ("hash", "ABCDEF0123456789", "abcdef0123456789"), ("slug", "hello-world-2", "hello-world-2"),
    ("color", "#FFF", "#fff"), ("color", "#112233", "#112233"), ("color", "#11223344", "#11223344"),
    ("json", {"a": [1, "b", None, True]}, {"a": [1, "b", None, True]}), ("json", "text", "text"),
    ("csv", "a, b,,c", ["a", "b", "c"]), ("csv", ["x", " y "], ["x", "y"]), ("csv", "", []),
    ("geometry", {"type": "Point", "coordinates": [13.4, 52.5], "bbox": [1]},
     {"type": "Point", "coordinates": [13.4, 52.5]}),
    ("geometry", {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]},
     {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}),
    ("geometry", {"type": "GeometryCollection", "geometries": [{"type": "LineString", "coordinates": [[0, 0], [1, 1]]}]},
     {"type": "GeometryCollection", "geometries": [{"type": "LineString", "coordinates": [[0, 0], [1, 1]]}]}),
    ("files", ["f1", "f2", "f1"], ["f1", "f2"]),
]

BAD = [
    ("boolean", "true"), ("boolean", 1),
    ("integer", True), ("integer", 1.5), ("integer", "5"), ("integer", 2**31), ("integer", float("nan")),
    ("float", True), ("float", "1.0"), ("float", float("inf")),
    ("decimal", "abc"), ("decimal", "NaN"), ("decimal", True), ("decimal", "1e999"), ("decimal", [1]),
    ("bigInteger", 2**63), ("bigInteger", "12a"), ("bigInteger", False), ("bigInteger", 1.5),
    ("dateTime", "2024-13-01T00:00:00"), ("dateTime", "yesterday"), ("dateTime", "2024-05-01"), ("dateTime", 5),
    ("timestamp", "2024-05-01T25:00:00Z"), ("date", "2024-02-30"), ("date", "20240101"), ("date", "2024-W01-1"),
    ("time", "25:00"), ("time", "13:45+01:00"),
    ("string", 5), ("string", "x" * 256), ("string", "nul\x00"), ("text", ["a"]),
    ("uuid", "not-a-uuid"), ("uuid", "0b8f5e0a12344abc8def0123456789ab"),
    ("hash", "xyz"), ("hash", "abc"), ("slug", "Hello World"), ("slug", "a--b"), ("slug", "-a"),
    ("color", "red"), ("color", "#12345"), ("color", "#ggg"),
    ("json", float("nan")), ("json", {"a": "\x00"}),
    ("csv", 5), ("csv", ["a,b"]), ("csv", [1]),
    ("geometry", {"type": "Point", "coordinates": [200, 0]}), ("geometry", {"type": "Circle"}),
    ("geometry", {"type": "LineString", "coordinates": [[0, 0]]}),
    ("geometry", {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]}),
    ("geometry", "POINT(1 2)"), ("geometry", {"type": "Point", "coordinates": [True, 0]}),
    ("files", "f1"), ("files", ["bad id"]), ("files", [1]),
]


def test_twenty_types():
    assert len(FIELD_TYPES) == 20 and len(set(FIELD_TYPES)) == 20


@pytest.mark.parametrize(("type_", "value", "normal"), GOOD)
def test_accepted_values_and_their_normal_form(type_, value, normal):
    assert validate_value(type_, value) == normal
    # The normal form is a fixed point: validating it again changes nothing.
    assert validate_value(type_, normal) == normal


@pytest.mark.parametrize(("type_", "value"), BAD)
def test_refused_values(type_, value):
    with pytest.raises(ValueError) as info:
        validate_value(type_, value)
    assert str(info.value)


@pytest.mark.parametrize("type_", FIELD_TYPES)
def test_null_is_left_to_required(type_):
    assert validate_value(type_, None) is None


def field(type_, **options):
    return FieldDef(collection="c", name="f", type=type_, options=options)


@pytest.mark.parametrize(("f", "good", "bad"), [
    (field("string", maxLength=3, minLength=2), "abc", "abcd"),
    (field("string", minLength=2), "ab", "a"),
    (field("string", maxLength=1000), "x" * 999, "x" * 1001),
    (field("text", pattern=r"^\d+$"), "123", "12a"),
    (field("string", choices=["a", {"text": "B", "value": "b"}]), "b", "c"),
    (field("integer", min=1, max=10), 10, 11),
    (field("integer", min=1), 1, 0),
    (field("decimal", min="0.5", max="1.5"), "1.50", "1.51"),
    (field("decimal", precision=4, scale=2), "12.34", "12.345"),
    (field("decimal", precision=4, scale=2), "99.99", "123.45"),
    (field("bigInteger", max=2**40), 2**40, 2**40 + 1),
    (field("float", min=-1.5), -1.5, -1.6),
    (field("csv", choices=["x", "y"]), ["x", "y"], ["x", "z"]),
    (field("geometry", geometryType="Point"), {"type": "Point", "coordinates": [0, 0]},
     {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}),
    (field("hash", algorithm="md5"), "0" * 32, "0" * 40),
])
def test_validation_options(f, good, bad):
    assert f.validate(good) is not None
    with pytest.raises(ValueError):
        f.validate(bad)


@pytest.mark.parametrize(("value", "from_type", "to_type", "expected"), [
    (5, "integer", "string", "5"), ("42", "string", "integer", 42), (" 7 ", "text", "bigInteger", 7),
    (3.0, "float", "integer", 3), ("5.00", "decimal", "integer", 5), (7, "integer", "decimal", "7"),
    ("0.1", "decimal", "float", 0.1), (True, "boolean", "integer", 1), (0, "integer", "boolean", False),
    ("yes", "string", "boolean", True), ("2024-05-01", "date", "dateTime", "2024-05-01T00:00:00"),
    ("2024-05-01T00:00:00Z", "timestamp", "date", "2024-05-01"), ("a,b", "string", "csv", ["a", "b"]),
    (["a", "b"], "csv", "string", "a,b"), ({"a": 1}, "json", "text", '{"a":1}'),
    ({"type": "Point", "coordinates": [1, 2]}, "geometry", "json", {"type": "Point", "coordinates": [1, 2]}),
    ('{"type":"Point","coordinates":[1,2]}', "text", "geometry", {"type": "Point", "coordinates": [1, 2]}),
    (["f1"], "files", "csv", ["f1"]), ("#ABC", "string", "color", "#abc"), (None, "integer", "geometry", None),
])
def test_conversions(value, from_type, to_type, expected):
    assert converts(value, from_type, to_type)
    assert convert(value, from_type, to_type) == expected


@pytest.mark.parametrize(("value", "from_type", "to_type"), [
    ("abc", "string", "integer"), (3.5, "float", "integer"), (2, "integer", "boolean"),
    ("2024-05-01T10:00:00", "dateTime", "date"), ("x" * 300, "text", "string"), ("abc", "string", "uuid"),
    ({"a": 1}, "json", "geometry"), ("9007199254740993", "bigInteger", "float"), (2**40, "bigInteger", "integer"),
    ("0.1000000000000000055511151231257827", "decimal", "float"), ("a", "string", "files"),
])
def test_non_conversions(value, from_type, to_type):
    assert not converts(value, from_type, to_type)
    with pytest.raises(ValueError):
        convert(value, from_type, to_type)


def test_conversion_checks_the_target_options():
    assert converts("5", "string", "integer", {"max": 10})
    assert not converts("50", "string", "integer", {"max": 10})


# ------------------------------------------------------------------ properties (hypothesis)

ISO_DATES = st.dates().map(lambda d: d.isoformat())
VALUES = {
    "boolean": st.booleans(),
    "integer": st.integers(-(2**31), 2**31 - 1),
    "bigInteger": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "decimal": st.decimals(allow_nan=False, allow_infinity=False, places=4, min_value=-(10**12),
                           max_value=10**12).map(str),
    "dateTime": st.datetimes().map(lambda d: d.replace(microsecond=0).isoformat()),
    "timestamp": st.datetimes().map(lambda d: d.isoformat() + "Z"),
    "date": ISO_DATES,
    "time": st.times().map(lambda t: t.isoformat()),
    "string": st.text(max_size=50).filter(lambda s: "\x00" not in s),
    "text": st.text(max_size=200).filter(lambda s: "\x00" not in s),
    "uuid": st.uuids().map(str),
    "slug": st.from_regex(r"\A[a-z0-9]+(-[a-z0-9]+){0,3}\Z"),
    "color": st.from_regex(r"\A#[0-9a-f]{6}\Z"),
    "csv": st.lists(st.from_regex(r"\A[a-z]{1,5}\Z"), max_size=5),
    "json": st.recursive(st.none() | st.booleans() | st.integers() | st.text(alphabet="abc", max_size=5),
                         lambda inner: st.lists(inner, max_size=3)
                         | st.dictionaries(st.text(alphabet="xyz", max_size=3), inner, max_size=3),
                         max_leaves=10),
}
TYPED = st.sampled_from(sorted(VALUES)).flatmap(lambda t: st.tuples(st.just(t), VALUES[t]))


@settings(max_examples=examples(400), deadline=None)
@given(TYPED, st.sampled_from(FIELD_TYPES))
def test_a_converted_value_is_a_valid_value_of_the_new_type(typed, to_type):
    from_type, raw = typed
    value = coerce(from_type, raw)
    if converts(value, from_type, to_type):
        converted = convert(value, from_type, to_type)
        # What items would write back passes the new type's own validation unchanged.
        assert validate_value(to_type, converted) == converted
    else:
        with pytest.raises(ValueError):
            convert(value, from_type, to_type)


@settings(max_examples=examples(200), deadline=None)
@given(TYPED)
def test_every_valid_value_converts_to_its_own_type_and_to_json(typed):
    type_, raw = typed
    value = coerce(type_, raw)
    assert convert(value, type_, type_) == value
    assert converts(value, type_, "json")


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from([("integer", "bigInteger"), ("integer", "string"), ("integer", "decimal"),
                        ("bigInteger", "text"), ("date", "dateTime"), ("uuid", "string"), ("slug", "text"),
                        ("boolean", "text"), ("csv", "json"), ("decimal", "text")]).flatmap(
    lambda pair: st.tuples(st.just(pair), VALUES[pair[0]])))
def test_lossless_pairs_round_trip(case):
    (a, b), raw = case
    value = coerce(a, raw)
    there = convert(value, a, b)
    assert convert(there, b, a) == value
