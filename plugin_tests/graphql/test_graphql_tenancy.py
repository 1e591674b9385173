"""Cross-tenant: a site A token never reads, writes or introspects site B through GraphQL."""

from __future__ import annotations

from kernel.testing import Calls
from plugin_tests.graphql.conftest import codes, gql, seed_blog


async def test_schema_and_data_stay_in_their_site(blog: Calls, calls_b: Calls, make_member, site_b: str):
    await calls_b.collection("secrets_b", {"code": "string"})
    await calls_b.create("secrets_b", {"id": "s1", "code": "b-only"})
    # Site A's schema has no trace of B's collection, not even as a suggestion.
    body = await gql(blog, "{ secrets_b { id } }")
    assert codes(body) == ["VALIDATION"] and "secrets_b" in body["errors"][0]["message"]
    body = await gql(blog, "{ secrets { id } }")
    assert "secrets_b" not in str(body) and "Did you mean" not in str(body)
    assert "secrets_b" not in str(await gql(blog, "{ _collections }"))
    # B's own blog does not leak into A's nested reads, and A's writes do not reach B.
    await seed_blog(calls_b)
    await calls_b.ok("patch", "/items/authors/ann", json={"name": "Ann of B"})
    body = await gql(blog, '{ posts_by_id(id: "p1") { author { name } } }')
    assert body["data"]["posts_by_id"]["author"] == {"name": "Ann"}
    await gql(blog, 'mutation { update_posts(id: "p1", data: {title: "A only"}) { id } }')
    assert (await calls_b.get("posts", "p1"))["title"] == "Hello world"


async def test_site_a_token_cannot_use_site_b(blog: Calls, calls_b: Calls, svc_app, site: str, site_b: str,
                                             make_member):
    await seed_blog(calls_b)
    admin_of_a = await make_member(site, "admin")
    assert (await gql(Calls(svc_app.client, admin_of_a.headers), "{ _collections }"))["data"]["_collections"]
    in_b = Calls(svc_app.client, {**admin_of_a.headers, "X-Svc-Site": site_b})
    # The token is bound to site A: refused before GraphQL runs, as REST refuses it.
    for query in ("{ posts { id } }", 'mutation { delete_posts(id: "p1") }', "{ __schema { types { name } } }"):
        resp = await in_b.call("post", "/graphql", json={"query": query})
        assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"
    await in_b.err("get", "/items/posts", 401, "UNAUTHENTICATED")
    assert (await calls_b.get("posts", "p1"))["title"] == "Hello world"
