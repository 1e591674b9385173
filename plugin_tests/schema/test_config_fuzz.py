"""Bundle and manifest readers and the planner, fed arbitrary JSON (hypothesis): they answer a
plan, problems with paths, or ``ApiError`` 400/409 with a path; never anything else."""

from __future__ import annotations

from types import MappingProxyType

from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.base.errors import ApiError
from kernel.testing import examples
from plugins.schema.bundles.bundles import bundle_scope, parse_bundle
from plugins.schema.bundles.diffing import plan_schema
from plugins.schema.config.manifest import parse_manifest
from plugins.schema.config.manifest_apply import schema_scope
from plugins.schema.fieldtypes.types import FIELD_TYPES
from plugins.schema.snapshot import CollectionDef, FieldDef, RelationDef, SchemaSnapshot

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
NAMES = st.sampled_from(["a", "b", "c", "ref", "refs", "title", "back", "a", "b", "ref"]) | st.sampled_from(
    ["id", "A", "", "items", "x y", "B", "Ref"])
VALUES = {
    "name": NAMES, "collection": NAMES, "field": NAMES, "relatedCollection": NAMES, "relatedField": NAMES,
    "type": st.sampled_from([*FIELD_TYPES, "m2o", "o2m", "m2m", "m2a", "bogus"]),
    "relatedCollections": st.lists(NAMES, max_size=3) | JSON,
    "onDelete": st.sampled_from(["restrict", "set null", "cascade", "SET_NULL", "x"]) | JSON,
    "required": st.booleans() | JSON, "sort": st.integers(-3, 3) | JSON,
    "options": st.fixed_dictionaries({}, optional={"maxLength": st.integers(-1, 9), "default": JSON,
                                                    "unique": st.booleans()}) | JSON,
    "label": st.text(max_size=5) | JSON, "versioning": st.booleans() | JSON, "hidden": JSON, "meta": JSON,
}
ENTRY = st.dictionaries(st.sampled_from([*VALUES, "bogus"]), JSON, max_size=6).flatmap(
    lambda d: st.fixed_dictionaries({k: VALUES.get(k, JSON) for k in d}))
# Well-formed entries, so the planner and the relation rules are reached, not only the parser.
COLL = st.sampled_from(["a", "b", "c"])
FNAME = st.sampled_from(["ref", "refs", "title", "back", "x", "Ref"])
FIELD_ENTRY = st.fixed_dictionaries(
    {"field": FNAME, "type": st.sampled_from(["uuid", "json", "string", "csv", "integer", "text", "slug"])},
    optional={"required": st.booleans(), "options": st.sampled_from([{}, {"maxLength": 9}]),
              "sort": st.integers(0, 3)})
COLLECTION_ENTRY = st.fixed_dictionaries({"name": COLL}, optional={"label": st.text(max_size=3),
                                                                   "versioning": st.booleans()})
BUNDLE_HEAD = st.fixed_dictionaries({"name": COLL}, optional={"icon": st.text(max_size=3),
                                                              "meta": st.just({"hidden": True})})


@st.composite
def relation_entry(draw):
    kind = draw(st.sampled_from(["m2o", "o2m", "m2m", "m2a"]))
    out = {"type": kind, "collection": draw(COLL), "field": draw(FNAME)}
    if kind == "m2a":
        out["relatedCollections"] = draw(st.lists(COLL, min_size=1, max_size=2))
    else:
        out["relatedCollection"] = draw(COLL)
    if kind == "o2m" or (kind == "m2o" and draw(st.booleans())):
        out["relatedField"] = draw(FNAME)
    if draw(st.booleans()):
        out["onDelete"] = draw(st.sampled_from(["restrict", "set null", "cascade"]))
    return out


RELATION_ENTRY = relation_entry()
SECTIONS = st.lists(ENTRY, max_size=4) | JSON


def _snapshot() -> SchemaSnapshot:
    def coll(name: str, **types: str) -> CollectionDef:
        fields = {f: FieldDef(name, f, t, required=(f == "title")) for f, t in types.items()}
        return CollectionDef(id=f"id-{name}", name=name, fields=MappingProxyType(fields))

    collections = {"a": coll("a", ref="uuid", refs="json", title="string"), "b": coll("b", ref="uuid")}
    rel = RelationDef("r1", "m2o", "a", "ref", "b", (), "back", "set null")
    return SchemaSnapshot("s", 3, MappingProxyType(collections), (rel,))


SNAP = _snapshot()


def _checked(fn) -> None:
    try:
        plan = fn()
    except ApiError as exc:
        # A bad body is 400 VALIDATION_FAILED; one naming what exists already is 409 CONFLICT.
        assert (exc.status, exc.code) in ((400, "VALIDATION_FAILED"), (409, "CONFLICT")), exc.body()
        assert exc.details[0].path is not None
        return
    for problem in plan.problems:
        assert problem.code and problem.message and isinstance(problem.path, list)


def _bundle(head, fields, relations, name):
    def run():
        bundle = parse_bundle({"collection": head, "fields": fields, "relations": relations}, name)
        return plan_schema(SNAP, bundle.desired, bundle_scope(bundle))

    _checked(run)


def _manifest(collections, fields, relations, scopes, mode):
    body = {"version": "svc.config@v1", "collections": collections, "fields": fields, "relations": relations,
            "managedScopes": scopes}

    def run():
        manifest = parse_manifest(body, {})
        plan = plan_schema(SNAP, manifest.desired, schema_scope(mode, manifest.managed))
        plan.problems[:0] = manifest.problems
        return plan

    _checked(run)


MODES = st.sampled_from(["merge", "replace-managed", "replace-all"])
SCOPES = st.lists(st.sampled_from(["schema", "collection:a", "collection:b"]), max_size=2)


@settings(max_examples=examples(300), deadline=None)
@given(head=BUNDLE_HEAD, fields=st.lists(FIELD_ENTRY, max_size=5, unique_by=lambda f: f["field"].lower()),
       relations=st.lists(RELATION_ENTRY, max_size=4), name=st.sampled_from([None, None, "a"]))
def test_plausible_bundles(head, fields, relations, name):
    _bundle(head, fields, relations, name)


@settings(max_examples=examples(200), deadline=None)
@given(head=ENTRY | JSON, fields=SECTIONS, relations=SECTIONS, name=st.sampled_from([None, "a"]))
def test_arbitrary_bundles(head, fields, relations, name):
    _bundle(head, fields, relations, name)


@settings(max_examples=examples(300), deadline=None)
@given(collections=st.lists(COLLECTION_ENTRY, max_size=3),
       fields=st.lists(FIELD_ENTRY, max_size=5, unique_by=lambda f: f["field"].lower()),
       relations=st.lists(RELATION_ENTRY, max_size=4), scopes=SCOPES, mode=MODES)
def test_plausible_manifests(collections, fields, relations, scopes, mode):
    fields = [{"collection": "a", **f} for f in fields]
    _manifest(collections, fields, relations, scopes, mode)


@settings(max_examples=examples(200), deadline=None)
@given(collections=SECTIONS, fields=SECTIONS, relations=SECTIONS, scopes=SCOPES | JSON, mode=MODES)
def test_arbitrary_manifests(collections, fields, relations, scopes, mode):
    _manifest(collections, fields, relations, scopes, mode)
