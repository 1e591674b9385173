"""The name-mapping rule: GraphQL-safe names are kept, any other is encoded, and two names never
map to one (property test), through the schema too."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.testing import Calls, examples
from plugin_tests.graphql.conftest import gql
from plugins.graphql import names

NAME = st.text(alphabet=st.sampled_from("aZ_09é-"), min_size=1, max_size=12)


def test_kept_and_encoded():
    assert names.field_name("title") == "title" and names.field_name("_private") == "_private"
    assert names.field_name("__secret") == "x__5f5f736563726574"
    assert names.field_name("a__b") == "x__615f5f62" and names.field_name("trail_") == "x__747261696c5f"
    assert names.collection_name("Query") == names.encode("Query")
    assert names.collection_name("_collections") == names.encode("_collections")
    assert names.collection_name("posts_by_id") == names.encode("posts_by_id")
    assert names.decode(names.field_name("__secret")) == "__secret"


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(NAME, min_size=2, max_size=6, unique=True))
def test_no_two_names_collide(raw):
    for mapping in (names.field_name, names.collection_name):
        mapped = [mapping(n) for n in raw]
        assert len(set(mapped)) == len(mapped)
        assert all(not m.startswith("__") and names.PLAIN.match(m) or m.startswith("x__") for m in mapped)
        assert [names.decode(m) for m in mapped] == raw


async def test_mapped_fields_in_the_schema(calls: Calls):
    # The schema plugin already refuses names starting with "__"; a__b and trail_ pass it.
    await calls.collection("things", {"a__b": "integer", "trail_": "string", "plain": "string"})
    await calls.create("things", {"id": "t1", "trail_": "s", "a__b": 2, "plain": "p"})
    body = await gql(calls, '{ things_by_id(id: "t1") { plain x__747261696c5f x__615f5f62 } }')
    assert body == {"data": {"things_by_id": {"plain": "p", "x__747261696c5f": "s", "x__615f5f62": 2}}}
    body = await gql(calls, '{ things { _data } }')
    assert body["data"]["things"][0]["_data"] == {"trail_": "s", "a__b": 2, "plain": "p"}
