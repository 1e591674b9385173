"""Body parsers and rule checkers, fed arbitrary JSON (hypothesis): they answer ``ApiError`` 400/409
with a path, or a result, and never raise anything else."""

from __future__ import annotations

from types import MappingProxyType

from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.base.errors import ApiError
from kernel.testing import examples
from plugins.schema.collections.collection_meta import parse_collection_body
from plugins.schema.fields.field_body import parse_field_body
from plugins.schema.fields.options import KNOWN_OPTIONS, validate_options
from plugins.schema.fieldtypes.types import FIELD_TYPES
from plugins.schema.relations.relation_rules import spec_from_body, validate_relation
from plugins.schema.snapshot import CollectionDef, FieldDef, RelationDef, SchemaSnapshot

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=16,
)
NAMES = st.sampled_from(["a", "b", "ref", "refs", "blocks", "title", "id", "nope", "A", ""]) | st.text(max_size=8)
BODY_KEYS = ["name", "collection", "meta", "schema", "fields", "icon", "singleton", "status_field", "field", "type",
             "interface", "options", "required", "sort", "relatedCollection", "relatedCollections", "relatedField",
             "onDelete"]


def _snapshot() -> SchemaSnapshot:
    def coll(name: str, **types: str) -> CollectionDef:
        fields = {f: FieldDef(name, f, t, required=(f == "title")) for f, t in types.items()}
        return CollectionDef(id=f"id-{name}", name=name, fields=MappingProxyType(fields))

    collections = {"a": coll("a", ref="uuid", refs="json", blocks="json", title="string"), "b": coll("b", ref="uuid")}
    rel = RelationDef("r1", "m2o", "a", "ref", "b", (), "back", "set null")
    return SchemaSnapshot("s", 3, MappingProxyType(collections), (rel,))


SNAP = _snapshot()


def _ok_or_api_error(fn) -> None:
    try:
        fn()
    except ApiError as exc:
        # A bad body is 400 VALIDATION_FAILED; one naming what exists already is 409 CONFLICT.
        assert (exc.status, exc.code) in ((400, "VALIDATION_FAILED"), (409, "CONFLICT")), exc.body()
        assert exc.details[0].path is not None


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(FIELD_TYPES), st.dictionaries(st.sampled_from([*sorted(KNOWN_OPTIONS), "x"]), JSON, max_size=5))
def test_options(type_, options):
    _ok_or_api_error(lambda: validate_options(type_, options))


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(st.sampled_from(BODY_KEYS), JSON, max_size=6))
def test_collection_and_field_bodies(body):
    _ok_or_api_error(lambda: parse_collection_body(body))
    _ok_or_api_error(lambda: parse_collection_body(body, "a"))
    _ok_or_api_error(lambda: parse_field_body(body, "a"))
    _ok_or_api_error(lambda: parse_field_body(body, "a", "ref"))


@settings(max_examples=examples(500), deadline=None)
@given(st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["m2o", "o2m", "m2m", "m2a", "x"]) | JSON, "collection": NAMES | JSON,
    "field": NAMES | JSON, "relatedCollection": NAMES | JSON, "relatedCollections": st.lists(NAMES) | JSON,
    "relatedField": NAMES | JSON, "onDelete": st.sampled_from(["restrict", "SET NULL", "cascade", "x"]) | JSON,
}))
def test_relation_rules(body):
    _ok_or_api_error(lambda: validate_relation(SNAP, spec_from_body(body)))
    _ok_or_api_error(lambda: validate_relation(SNAP, spec_from_body(body, {
        "type": "m2o", "collection": "a", "field": "ref", "relatedCollection": "b", "relatedCollections": None,
        "relatedField": "back", "onDelete": "set null"}), exclude="r1"))
