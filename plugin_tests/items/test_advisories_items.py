"""Published advisories of other headless CMSs, replayed against svc's item reads (each passes when
svc is not vulnerable): a hidden field must not be an oracle through search (Directus
CVE-2025-30352), through a relation's filter, sort or grouping (Strapi CVE-2023-22894, which leaked
password hashes by filtering on them across a relation), nor may GraphQL's repeated fields and
aliases multiply the work of one request past the cost guard (Directus CVE-2024-39895)."""

from __future__ import annotations

import json

import pytest
import pytest_asyncio

from kernel.testing import Calls, new_member

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def blog(shared_site):
    admin = await shared_site.new_site("adv")
    await admin.collection("people", {"name": "string", "salary": "integer", "pin": "string"})
    await admin.collection("posts", {"title": "string", "secret": "string", "author": "uuid"})
    await admin.relation(type="m2o", collection="posts", field="author", relatedCollection="people")
    await admin.create("people", [{"id": "0b8f0000-0000-4000-8000-000000000001", "name": "Ann", "salary": 900,
                                   "pin": "zebra-sesame"},
                                  {"id": "0b8f0000-0000-4000-8000-000000000002", "name": "Bob", "salary": 100,
                                   "pin": "plain"}])
    await admin.create("posts", [
        {"id": "p1", "title": "first", "secret": "walrus-passphrase", "author": "0b8f0000-0000-4000-8000-000000000001"},
        {"id": "p2", "title": "second", "secret": "nothing", "author": "0b8f0000-0000-4000-8000-000000000002"}])
    site = admin.headers["X-Svc-Site"]
    made = await new_member(shared_site.app, site, "subscriber")
    await admin.grant([{"collection": "posts", "action": "read", "fields": ["id", "title", "author"]},
                       {"collection": "people", "action": "read", "fields": ["id", "name"]}], {"userId": made.id})
    shared_site.app.kernel.access.invalidate(site)
    return admin, Calls(shared_site.app.client, made.headers)


async def _gql(calls: Calls, query: str) -> dict:
    return await calls.ok("post", "/graphql", full=True, json={"query": query})


async def test_directus_cve_2025_30352_search_never_matches_a_hidden_field(blog):
    admin, member = blog
    found = await _gql(admin, '{ posts(search: "walrus") { id } }')
    assert [p["id"] for p in found["data"]["posts"]] == ["p1"]  # the search does reach the field
    hidden = await _gql(member, '{ posts(search: "walrus") { id } }')
    assert hidden.get("data", {}).get("posts") in ([], None), hidden
    assert (await member.ok("get", "/search", full=True, params={"q": "walrus"}))["data"] in ([], {})
    people = await _gql(member, '{ people(search: "sesame") { id } }')
    assert people.get("data", {}).get("people") in ([], None), people


@pytest.mark.parametrize("params", [
    {"filter": json.dumps({"author": {"salary": {"_gt": 500}}})},
    {"filter": json.dumps({"author": {"pin": {"_starts_with": "zebra"}}})},
    {"filter": json.dumps({"_or": [{"title": {"_eq": "x"}}, {"author": {"pin": {"_eq": "plain"}}}]})},
    {"filter[author][pin][_starts_with]": "z"},
    {"sort": "-author.salary"},
    {"fields": "id,author.salary"},
    {"filter": json.dumps({"secret": {"_starts_with": "walrus"}})},
    {"aggregate[count]": "*", "groupBy": "secret"},
    {"aggregate[max]": "secret"},
])
async def test_strapi_cve_2023_22894_no_hidden_field_across_a_relation(blog, params):
    """Filtering, sorting, selecting or grouping on a field the caller may not read (here or in a
    related collection) is refused, never answered as a yes/no oracle."""
    admin, member = blog
    await admin.ok("get", "/items/posts", params=params)  # a meaningful query: the admin gets an answer
    error = await member.err("get", "/items/posts", 403, "PERMISSION_DENIED", params=params)
    assert "zebra" not in json.dumps(error) and "walrus" not in json.dumps(error)


async def test_strapi_cve_2023_22894_graphql_relation_filters_too(blog):
    admin, member = blog
    query = '{ posts(filter: {author: {pin: {_starts_with: "zebra"}}}) { id } }'
    assert [p["id"] for p in (await _gql(admin, query))["data"]["posts"]] == ["p1"]
    refused = await _gql(member, query)
    assert refused["errors"] and not (refused.get("data") or {}).get("posts"), refused
    nested = await _gql(member, '{ posts_by_id(id: "p1") { author { name } } }')
    assert nested["data"]["posts_by_id"]["author"] == {"name": "Ann"}


async def test_directus_cve_2024_39895_repeated_fields_and_aliases_are_costed(blog):
    """Directus let one query repeat a field under thousands of aliases; each alias of a list is
    a list's worth of work, so the cost guard must count them, not the distinct names."""
    admin, _member = blog
    aliases = " ".join(f"a{i}: posts(limit: 200) {{ id title }}" for i in range(60))
    body = await _gql(admin, "{ " + aliases + " }")
    assert body.get("data") is None and "maximum cost" in body["errors"][0]["message"], body
    one = await _gql(admin, "{ posts(limit: 200) { id title } }")
    assert len(one["data"]["posts"]) == 2
