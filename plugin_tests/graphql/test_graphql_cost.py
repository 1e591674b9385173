"""The depth and cost calculator against a small reference implementation (property test, no
app): random selections over a blog schema, with literal, variable and absent limits, aliases
and repeated fields."""

from __future__ import annotations

from types import MappingProxyType

from graphql import parse
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.testing import examples
from plugins.graphql.guards import Limits, measure
from plugins.graphql.schema import build
from plugins.schema.snapshot import CollectionDef, FieldDef, RelationDef, SchemaSnapshot

LIMITS = Limits(max_cost=1000, default_list_size=20, max_list_multiplier=100)


def _coll(name: str, fields: dict[str, str]) -> CollectionDef:
    defs = {f: FieldDef(name, f, kind) for f, kind in fields.items()}
    return CollectionDef(name, name, MappingProxyType({}), MappingProxyType(defs))


SCHEMA = build(SchemaSnapshot("s", 1, MappingProxyType({
    "authors": _coll("authors", {"name": "string"}),
    "posts": _coll("posts", {"title": "string", "author": "string"}),
    "notes": _coll("notes", {"body": "text", "post": "string"}),
}), (RelationDef("r1", "m2o", "posts", "author", "authors"),
     RelationDef("r2", "m2o", "notes", "post", "posts", related_field="notes")))).schema

# type -> field -> (related type or None, is a list)
FIELDS = {"posts": {"id": (None, False), "title": (None, False), "author": ("authors", False),
                    "notes": ("notes", True)},
          "notes": {"id": (None, False), "body": (None, False), "post": ("posts", False)},
          "authors": {"id": (None, False), "name": (None, False)}}
LIMIT = st.one_of(st.none(), st.just("$n"), st.integers(0, 300))


@st.composite
def selection(draw, type_name: str, depth: int):
    """A list of (field, limit, subselection) nodes of ``type_name``."""
    names = list(FIELDS[type_name])
    out = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(names))
        related, is_list = FIELDS[type_name][name]
        if related is None or depth <= 1:
            out.append((name if related is None else "id", None, None))
        else:
            out.append((name, draw(LIMIT) if is_list else None, draw(selection(related, depth - 1))))
    return out


def render(nodes) -> str:
    parts = []
    for i, (name, limit, sub) in enumerate(nodes):
        args = "" if limit is None else f"(limit: {limit})"
        parts.append(f"a{i}: {name}{args}" + (f" {{ {render(sub)} }}" if sub else ""))
    return " ".join(parts)


def reference(nodes, list_field: set[str]) -> tuple[int, int]:
    depth = cost = 0
    for name, limit, sub in nodes:
        if not sub:
            d, c = 1, 1
        else:
            sd, sc = reference(sub, list_field)
            if name in list_field:
                factor = LIMITS.default_list_size if limit in (None, "$n") else min(limit, LIMITS.max_list_multiplier)
                sc *= factor
            d, c = sd + 1, sc + 1
        depth, cost = max(depth, d), cost + c
    return depth, cost


@settings(max_examples=examples(200), deadline=None)
@given(LIMIT, selection("posts", 5))
def test_cost_matches_the_reference(limit, nodes):
    args = "" if limit is None else f"(limit: {limit})"
    query = f"query($n: Int) {{ posts{args} {{ {render(nodes)} }} }}"
    (depth, cost), = measure(SCHEMA, parse(query), LIMITS)
    sub_depth, sub_cost = reference(nodes, {"notes"})
    factor = LIMITS.default_list_size if limit in (None, "$n") else min(limit, LIMITS.max_list_multiplier)
    assert (depth, cost) == (sub_depth + 1, 1 + factor * sub_cost)


def test_examples_of_the_rule():
    def one(query: str) -> tuple[int, int]:
        return measure(SCHEMA, parse(query), LIMITS)[0]

    assert one("{ posts(limit: 25) { id title } }") == (2, 51)
    assert one("{ posts { id } }") == (2, 21)  # absent: 20
    assert one("{ posts(limit: 1000) { id } }") == (2, 101)  # clamped to 100
    assert one('{ posts_by_id(id: "x") { notes(limit: 3) { post { id } } } }') == (4, 1 + 1 + 3 * 2)
    assert one("{ a: posts(limit: 2) { id } b: posts(limit: 2) { id } }") == (2, 6)
    assert one("fragment F on posts { id title } { posts(limit: 2) { ...F ...F } }") == (2, 9)
