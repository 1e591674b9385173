"""Body checks, row-filter compilation and reference edits, fed arbitrary input (hypothesis):
they answer ``ApiError`` with a path (or a result) and never raise anything else; a row filter
that does not compile fails closed instead of raising."""

from __future__ import annotations

from types import MappingProxyType

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import False_

from kernel.base.errors import ApiError
from kernel.policy.access import Decision
from kernel.testing import examples
from plugins.items.core.rowfilter import row_condition
from plugins.items.core.validation import check_bodies
from plugins.items.tables import items
from plugins.items.write import refs
from plugins.schema.fieldtypes.types import FIELD_TYPES
from plugins.schema.snapshot import CollectionDef, FieldDef

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=16,
)
FIELDS = {f"f_{t}": FieldDef("all", f"f_{t}", t, required=(t == "string")) for t in FIELD_TYPES}
COLL = CollectionDef(id="c1", name="all", fields=MappingProxyType(FIELDS))
KEYS = st.sampled_from([*FIELDS, "id", "status", "sort", "createdAt", "nope", ""]) | st.text(max_size=6)
BODY = st.dictionaries(KEYS, JSON, max_size=6) | JSON


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(BODY, min_size=1, max_size=3), st.sampled_from(["create", "update", "replace"]),
       st.none() | st.frozensets(st.sampled_from([*FIELDS, "status"]), max_size=5))
def test_bodies_are_checked_or_refused(bodies, mode, writable):
    prefixes = [[i] for i in range(len(bodies))]
    try:
        drafts = check_bodies(COLL, bodies, prefixes, mode=mode, writable=writable, action="write", current_id="x")
    except ApiError as exc:
        # A bad body is 400; a field outside ``writable`` is the field policy's 403.
        assert (exc.status, exc.code) in ((400, "VALIDATION_FAILED"), (403, "PERMISSION_DENIED")), exc.body()
        assert exc.status == 400 or writable is not None
        assert exc.details[0].path is not None
        return
    for draft in drafts:
        assert set(draft.data) <= set(FIELDS)
        if mode != "update":
            assert draft.data.get("f_string") is not None  # the required field is there


OPS = st.sampled_from(["_eq", "_neq", "_in", "_nin", "_null", "_nnull", "_contains", "_gt", "x"])
NAMES = st.sampled_from([*FIELDS, "id", "status", "sort", "userCreated", "createdAt", "a.b", "_and"]) | st.text(max_size=5)
TREE = st.recursive(
    st.dictionaries(NAMES, st.dictionaries(OPS, JSON, max_size=2) | JSON, min_size=1, max_size=2),
    lambda inner: st.dictionaries(st.sampled_from(["_and", "_or"]), st.lists(inner, max_size=3), min_size=1,
                                  max_size=2) | inner,
    max_leaves=8,
)


@settings(max_examples=examples(400), deadline=None)
@given(TREE | JSON)
def test_row_filters_compile_on_both_dialects(tree):
    for name, dialect in (("sqlite", sqlite.dialect()), ("postgresql", postgresql.dialect())):
        condition = row_condition(Decision(True, None, tree), dialect=name, table=items, coll=COLL)
        stmt = select(items.c.id)
        str((stmt if condition is None else stmt.where(condition)).compile(dialect=dialect))
        if tree is None or tree == {}:
            assert condition is None  # no row filter: rows are not restricted
        elif not isinstance(tree, dict):
            assert isinstance(condition, False_)  # not an object: fails closed, matches nothing
        else:
            assert condition is not None  # a row filter is never dropped: it compiles or matches nothing


REF_VALUES = st.lists(st.sampled_from(["a", "b", 1]) | st.fixed_dictionaries(
    {"collection": st.sampled_from(["t", "u"]), "id": st.sampled_from(["a", "b", 1])}), max_size=5)


@settings(max_examples=examples(300), deadline=None)
@given(REF_VALUES | JSON, st.sampled_from(["id", "ids", "refs"]), st.sampled_from(["a", "1"]))
def test_reference_edits(value, shape, item_id):
    if shape == "id" or isinstance(value, list):
        cleared = refs.without(value, shape, "t", item_id)
        assert not refs.holds(cleared, shape, "t", item_id)
        moved = refs.replaced(value, shape, "t", item_id, "z")
        assert not refs.holds(moved, shape, "t", item_id)
        if refs.holds(value, shape, "t", item_id):
            assert refs.holds(moved, shape, "t", "z")
