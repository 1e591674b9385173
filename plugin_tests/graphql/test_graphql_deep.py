"""Nested relations as deep as the depth guard allows (issue 35, item 5): a chain of eleven
collections ``c0`` -> ``c1`` -> ... -> ``c10`` (m2o ``next``, with the o2m alias ``prev`` back)
read at depths 4, 8 and 12, with permissions, row conditions and field masks at every level,
one SQL statement per relation per level whatever the rows, the guards at 13 and over a cost of
1,000, and another site's items never reached. The chain is seeded once on the module's app."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from kernel.testing import Calls, counted_statements
from plugin_tests.graphql.conftest import codes, gql
from plugins.items.read import readplan

LINKS = 10  # c0 .. c10: the 10 relations a document of depth 12 can nest
STRANDS = 30  # items per collection: c<i>-<s>.next is c<i+1>-<s>


def ident(level: int, strand: int) -> str:
    return f"c{level}-{strand:02}"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chain(shared_site) -> Calls:
    calls = shared_site.calls
    for level in reversed(range(LINKS + 1)):
        fields = {"name": "string", "secret": "string", **({"next": "string"} if level < LINKS else {})}
        await calls.collection(f"c{level}", fields)
    for level in range(LINKS):
        await calls.relation(type="m2o", collection=f"c{level}", field="next", relatedCollection=f"c{level + 1}",
                             relatedField="prev")
    for level in range(LINKS + 1):
        rows = [{"id": ident(level, s), "name": ident(level, s), "secret": f"secret of {ident(level, s)}",
                 **({"next": ident(level + 1, s)} if level < LINKS else {})} for s in range(STRANDS)]
        await calls.create(f"c{level}", rows)
    # A reference to an id only another site holds (test_other_sites_are_never_reached).
    await calls.create("c9", {"id": "c9-x", "name": "c9-x", "next": "only-b"})
    return calls


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def member(shared_site, chain: Calls) -> Calls:
    """Reads every level, but on c5 (depth 6 from c0) not ``secret``, and on c7 not strand 01."""
    rules: list[dict[str, Any]] = [{"collection": f"c{level}", "action": "read", "fields": ["*"]}
                                   for level in range(LINKS + 1) if level not in (5, 7)]
    rules.append({"collection": "c5", "action": "read", "fields": ["id", "name", "next", "prev"]})
    rules.append({"collection": "c7", "action": "read", "fields": ["*"],
                  "conditions": {"name": {"_neq": ident(7, 1)}}})
    return await shared_site.member(rules)


def down(links: int, leaf: str = "name", at: dict[int, str] | None = None) -> str:
    """``name next { name next { ... } }``, ``links`` relations down from c0; ``at[level]`` adds
    fields at that level."""
    inner = f"{leaf} {(at or {}).get(links, '')}"
    for level in reversed(range(links)):
        inner = f"name {(at or {}).get(level, '')} next {{ {inner} }}"
    return inner


def down_item(strand: int, links: int) -> dict[str, Any]:
    item: dict[str, Any] = {"name": ident(links, strand)}
    for level in reversed(range(links)):
        item = {"name": ident(level, strand), "next": item}
    return item


def listing(selection: str, limit: int, sort: str = "id") -> str:
    return f'{{ c0(limit: {limit}, sort: ["{sort}"]) {{ {selection} }} }}'


def depth_of(query: str) -> int:
    """The nesting of ``query``'s fields as the guard counts it: each ``{`` opens the selection
    of one more level (the operation's, the root field's, ...), and the leaves are one more."""
    depth = deepest = 0
    for char in query:
        depth += char == "{"
        depth -= char == "}"
        deepest = max(deepest, depth)
    return deepest


@pytest.mark.parametrize("links", [2, 6, 10])
async def test_depths_4_8_and_12_answer(chain: Calls, links: int):
    query = listing(down(links), 3)
    assert depth_of(query) == links + 2
    body = await gql(chain, query)
    assert body == {"data": {"c0": [down_item(s, links) for s in range(3)]}}


async def test_down_by_m2o_and_back_up_by_o2m(chain: Calls):
    # c0 -> c5 by next (m2o), then c5 -> c0 by prev (o2m): depth 12, back where it started.
    up = "name"
    for _ in range(5):
        up = f"name prev(limit: 2) {{ {up} }}"
    selection = "name next { " * 5 + up + " }" * 5
    query = f'{{ c0_by_id(id: "{ident(0, 4)}") {{ {selection} }} }}'
    assert depth_of(query) == 12
    body = await gql(chain, query)
    item = body["data"]["c0_by_id"]
    for level in range(5):
        assert item["name"] == ident(level, 4)
        item = item["next"]
    for level in reversed(range(6)):
        assert item["name"] == ident(level, 4)
        if level:
            assert len(item["prev"]) == 1, item  # only c<level-1>-04 points at it
            item = item["prev"][0]


async def test_statements_per_level_stay_constant_as_rows_grow(chain: Calls, shared_site, monkeypatch):
    built: list[Any] = []
    plan = readplan.list_plan
    monkeypatch.setattr(readplan, "list_plan", lambda *a: built.append(a[3].nesting) or plan(*a))
    counts = {}
    for limit in (3, STRANDS):
        query = listing(down(LINKS), limit, sort="name")  # (a query no other test reads)
        await gql(chain, query)  # the schema, the document and the read plan are warm
        assert built[-1:] == [10], built
        with counted_statements(shared_site.app) as statements:
            body = await gql(chain, query)
        assert body == {"data": {"c0": [down_item(s, LINKS) for s in range(limit)]}}
        assert len(built) == 1 + (limit == STRANDS), built  # the second read reused its plan
        counts[limit] = [s for s in statements if "svc_items" in s and s.lstrip().upper().startswith(("SELECT", "WITH"))]
    # c0's page, then one statement per relation per level: 11 for 3 rows and for 30.
    assert len(counts[3]) == LINKS + 1, counts[3]
    assert len(counts[STRANDS]) == LINKS + 1, counts[STRANDS]


async def test_permissions_at_every_level(chain: Calls, member: Calls):
    body = await gql(member, listing(down(LINKS), 3))
    strands = body["data"]["c0"]
    assert strands[0] == down_item(0, LINKS) and strands[2] == down_item(2, LINKS)
    # c7-01 is hidden by the member's row condition: c6-01's next is null (depth 8).
    item = strands[1]
    for level in range(6):
        assert item["name"] == ident(level, 1)
        item = item["next"]
    assert item == {"name": ident(6, 1), "next": None}
    # The field mask at depth 6 (c5): _data leaves secret out there and keeps it at depth 5.
    body = await gql(member, listing(down(6, at={4: "_data", 5: "_data"}), 1))
    c4 = body["data"]["c0"][0]["next"]["next"]["next"]["next"]
    assert c4["_data"] == {"name": ident(4, 0), "secret": f"secret of {ident(4, 0)}", "next": ident(5, 0)}
    assert c4["next"]["_data"] == {"name": ident(5, 0), "next": ident(6, 0)}
    # Naming it answers as a field that does not exist (the member's view of the schema lacks it).
    body = await gql(member, listing(down(6, at={5: "secret"}), 1))
    assert codes(body) == ["VALIDATION"] and body["errors"][0]["message"].startswith("Cannot query field 'secret'")
    assert body["data"] is None
    # The admin reads it at the same depth.
    body = await gql(chain, listing(down(6, at={5: "secret"}), 1))
    c5 = body["data"]["c0"][0]["next"]["next"]["next"]["next"]["next"]
    assert c5["secret"] == f"secret of {ident(5, 0)}"


async def test_depth_13_and_cost_over_1000_are_refused(chain: Calls):
    up = "name"
    for _ in range(5):
        up = f"name prev(limit: 1) {{ {up} }}"
    query = f'{{ c0_by_id(id: "{ident(0, 0)}") {{ {"next { " * 6 + up + " }" * 6} }} }}'
    assert depth_of(query) == 13
    body = await gql(chain, query)
    assert body == {"data": None, "errors": [{"message": "Query exceeds the maximum depth of 12",
                                              "locations": [{"line": 1, "column": 1}],
                                              "extensions": {"code": "VALIDATION"}}]}
    # 1 + limit x (10 x (name 1 + next 1) + name 1): 47 rows cost 988, 48 cost 1,009.
    body = await gql(chain, listing(down(LINKS), 47))
    assert "errors" not in body and len(body["data"]["c0"]) == STRANDS
    body = await gql(chain, listing(down(LINKS), 48))
    assert body["data"] is None and codes(body) == ["VALIDATION"]
    assert body["errors"][0]["message"] == "Query exceeds the maximum cost of 1000"


async def test_other_sites_are_never_reached(chain: Calls, shared_site):
    other = await shared_site.new_site()
    await other.collection("c10", {"name": "string"})
    await other.create("c10", [{"id": "only-b", "name": "B"}, {"id": ident(10, 0), "name": "B's own"}])
    # A's depth-12 read ends at A's c10-00, never B's item of the same id; a reference to an id
    # only B holds is null.
    body = await gql(chain, listing(down(LINKS), 1))
    assert body == {"data": {"c0": [down_item(0, LINKS)]}}
    body = await gql(chain, '{ c9_by_id(id: "c9-x") { name next { name } } }')
    assert body == {"data": {"c9_by_id": {"name": "c9-x", "next": None}}}
    # B's schema has no c0 and its c10 no prev: A's chain is not B's to read.
    body = await gql(other, listing("name", 1))
    assert codes(body) == ["VALIDATION"]
    body = await gql(other, '{ c10(sort: ["id"]) { id name } }')
    assert body == {"data": {"c10": [{"id": ident(10, 0), "name": "B's own"}, {"id": "only-b", "name": "B"}]}}
