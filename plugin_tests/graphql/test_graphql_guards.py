"""Guards in every environment (depth 12, cost 1,000, document size, operations), introspection
and suggestions off outside development, and bad input answered as GraphQL errors (HTTP 200).
The tests that only read the blog share the module's app (``shared_site``, seeded once)."""

from __future__ import annotations

import pytest
import pytest_asyncio

from kernel.testing import Calls
from plugin_tests.graphql.conftest import codes, gql, seed_blog
from plugins.graphql.guards import MAX_OPERATIONS, MAX_QUERY_CHARS, MAX_TOKENS


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def blog(shared_site) -> Calls:
    """The blog, seeded once on the module's shared app: the tests taking it only read it."""
    await seed_blog(shared_site.calls)
    return shared_site.calls


def nested(depth: int) -> str:
    """A valid query ``depth`` fields deep: posts_by_id, then notes(limit: 1) and post in turn."""
    levels = ["notes(limit: 1)" if i % 2 == 0 else "post" for i in range(depth - 2)]
    inner = "id"
    for level in reversed(levels):
        inner = f"{level} {{ {inner} }}"
    return f'{{ posts_by_id(id: "p1") {{ {inner} }} }}'


async def test_depth_limit(blog: Calls):
    body = await gql(blog, nested(13))
    assert body == {"data": None, "errors": [{"message": "Query exceeds the maximum depth of 12",
                                              "locations": [{"line": 1, "column": 1}],
                                              "extensions": {"code": "VALIDATION"}}]}
    # Depth 12 passes the guard and is read: 10 relations (notes and post in turn), then id.
    body = await gql(blog, nested(12))
    inner: dict = {"id": "p1"}  # the tenth relation is a post
    for i in reversed(range(10)):
        inner = {"notes": [inner]} if i % 2 == 0 else {"post": inner}
    assert body == {"data": {"posts_by_id": inner}}
    body = await gql(blog, nested(5))
    assert body == {"data": {"posts_by_id": {"notes": [{"post": {"notes": [{"id": "n1"}]}}]}}}


async def test_cost_limit_and_alias_amplification(blog: Calls):
    # 1 + 100 x (1 + 20 x 1): over 1,000.
    body = await gql(blog, "{ posts(limit: 100) { notes { id } } }")
    assert body["errors"][0]["message"] == "Query exceeds the maximum cost of 1000"
    assert codes(body) == ["VALIDATION"]
    # 1 + 100 x (1 + 2 x 1) = 301: fine; each alias adds another 301.
    ok = "a0: posts(limit: 100) { notes(limit: 2) { id } }"
    assert "errors" not in await gql(blog, "{ " + ok + " }")
    aliases = " ".join(f"a{i}: posts(limit: 100) {{ notes(limit: 2) {{ id }} }}" for i in range(4))
    assert (await gql(blog, "{ " + aliases + " }"))["errors"][0]["message"] == "Query exceeds the maximum cost of 1000"
    repeated = "{ posts(limit: 100) { " + " ".join(["title"] * 11) + " } }"  # 1 + 100 x 11
    assert (await gql(blog, repeated))["errors"][0]["message"] == "Query exceeds the maximum cost of 1000"
    # A variable limit counts the default list size (20): 1 + 20 x 45 = 901 passes, x 50 fails.
    fields = " ".join(["title"] * 45)
    assert "errors" not in await gql(blog, "query($n: Int) { posts(limit: $n) { " + fields + " } }", {"n": 1})
    fields = " ".join(["title"] * 50)
    body = await gql(blog, "query($n: Int) { posts(limit: $n) { " + fields + " } }", {"n": 1})
    assert body["errors"][0]["message"] == "Query exceeds the maximum cost of 1000"


async def test_fragments_count_once_per_use(blog: Calls):
    # Each spread of F costs 1 + 100 x 3; four spreads exceed 1,000.
    query = "fragment F on Query { posts(limit: 100) { id title views } } { ...F ...F ...F ...F }"
    assert (await gql(blog, query))["errors"][0]["message"] == "Query exceeds the maximum cost of 1000"


async def test_cost_settings(make_app):
    app = await make_app(env={"SVC_GQL_MAX_COST": "50", "SVC_GQL_DEFAULT_LIST_SIZE": "2",
                              "SVC_GQL_MAX_LIST_MULTIPLIER": "10"})
    token = await app.login()
    site = await app.create_site({"Authorization": f"Bearer {token}"})
    calls = Calls(app.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": site})
    await seed_blog(calls)
    # limit 200 clamps to 10; author { id } costs 2: 1 + 10 x 4 = 41 <= 50; 1 + 10 x 5 = 51 > 50.
    assert "errors" not in await gql(calls, "{ posts(limit: 200) { id title author { id } } }")
    body = await gql(calls, "{ posts(limit: 200) { id title views author { id } } }")
    assert body["errors"][0]["message"] == "Query exceeds the maximum cost of 50"


async def test_document_size_and_operation_count(blog: Calls):
    body = await gql(blog, "{ _collections }" + " " * MAX_QUERY_CHARS)
    assert codes(body) == ["VALIDATION"] and "at most" in body["errors"][0]["message"]
    many = " ".join(f"query q{i} {{ _collections }}" for i in range(MAX_OPERATIONS + 1))
    body = await gql(blog, many, operation="q0")
    assert codes(body) == ["VALIDATION"] and "operations" in body["errors"][0]["message"]
    tokens = "{ " + " ".join(["a"] * (MAX_TOKENS + 1)) + " }"  # within the characters, over the tokens
    assert len(tokens) < MAX_QUERY_CHARS
    body = await gql(blog, tokens)
    assert codes(body) == ["VALIDATION"] and "tokens" in body["errors"][0]["message"]


async def test_introspection_and_suggestions_off_in_production(blog: Calls):
    for query in ("{ __schema { types { name } } }", '{ __type(name: "posts") { name } }'):
        body = await gql(blog, query)
        assert body["data"] is None and set(codes(body)) == {"VALIDATION"}
        assert "introspection" in body["errors"][0]["message"]
    body = await gql(blog, "{ post { id } }")
    assert "Did you mean" not in body["errors"][0]["message"] and "posts" not in body["errors"][0]["message"]
    assert await gql(blog, "{ __typename }") == {"data": {"__typename": "Query"}}  # not introspection
    resp = await blog.call("get", "/graphql")
    assert resp.status_code == 404 and resp.json()["errors"][0]["code"] == "NOT_FOUND"
    resp = await blog.call("get", "/graphql", params={"query": "{ __schema { types { name } } }"})
    assert resp.status_code == 404


async def test_introspection_in_development(make_app):
    app = await make_app(env={"SVC_ENV": "development"})
    token = await app.login()
    site = await app.create_site({"Authorization": f"Bearer {token}"})
    calls = Calls(app.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": site})
    await seed_blog(calls)
    body = await gql(calls, '{ __type(name: "posts") { fields { name } } }')
    names = {f["name"] for f in body["data"]["__type"]["fields"]}
    assert {"id", "_data", "title", "author", "notes", "createdAt"} <= names
    assert "Did you mean" in (await gql(calls, "{ post { id } }"))["errors"][0]["message"]
    resp = await calls.call("get", "/graphql", params={"query": "{ _collections }"})
    assert resp.status_code == 200 and resp.json() == {"data": {"_collections": ["authors", "notes", "posts"]}}
    resp = await calls.call("get", "/graphql", params={"query": 'mutation { delete_posts(id: "p1") }'})
    assert resp.status_code == 200 and resp.json()["errors"][0]["message"] == "Mutations need POST"
    resp = await calls.call("get", "/graphql", params={"query": 'mutation { delete_posts(id: "p1") }'},
                            headers={"Accept": "text/event-stream"})
    assert resp.status_code == 200 and "takes a subscription operation" in resp.text
    assert (await calls.ok("get", "/items/posts/p1"))["id"] == "p1"  # GET never ran the mutation


CREATE = 'mutation { create_posts(data: {id: "forged", title: "x"}) { id } }'


@pytest.mark.parametrize(("headers", "body"), [
    ({"Content-Type": "text/plain"}, {"content": b'{"query": "' + CREATE.replace('"', '\\"').encode() + b'"}'}),
    ({"Content-Type": "text/plain;charset=UTF-8"}, {"content": b'{"query": "{ _collections }"}'}),
    ({}, {"data": {"query": CREATE}}),  # application/x-www-form-urlencoded
    ({}, {"files": {"query": (None, CREATE)}}),  # multipart/form-data
    ({"Content-Type": "application/graphql"}, {"content": CREATE.encode()}),
    ({}, {"content": b'{"query": "{ _collections }"}'}),  # no Content-Type at all
])
async def test_a_post_that_is_not_json_is_415(blog: Calls, headers, body):
    """A cross-site form (or a simple cross-origin request) can never run a mutation."""
    resp = await blog.client.post("/api/v1/graphql", headers={**blog.headers, **headers}, **body)
    assert resp.status_code == 415, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "UNSUPPORTED_MEDIA_TYPE" and error["extensions"]["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert resp.headers["accept-post"] == "application/json"
    await blog.err("get", "/items/posts/forged", 404, "RECORD_NOT_FOUND")


async def test_json_with_parameters_is_read(blog: Calls):
    for content_type in ("application/json; charset=utf-8", "Application/JSON"):
        resp = await blog.client.post("/api/v1/graphql", content=b'{"query": "{ _collections }"}',
                                      headers={**blog.headers, "Content-Type": content_type})
        assert resp.status_code == 200 and resp.json() == {"data": {"_collections": ["authors", "notes", "posts"]}}


@pytest.mark.parametrize(("body", "message"), [
    ({}, "'query' is required"),
    ({"query": ""}, "'query' is required"),
    ({"query": 5}, "'query' is required"),
    ({"query": "{ _collections }", "variables": [1]}, "'variables' must be a JSON object"),
    ({"query": "{ _collections }", "operationName": 3}, "'operationName' must be a string"),
    ([1, 2], "The body must be a JSON object"),
])
async def test_malformed_requests(shared_site, body, message):
    resp = await shared_site.calls.call("post", "/graphql", json=body)
    assert resp.status_code == 200
    assert resp.json()["data"] is None and resp.json()["errors"][0]["message"].startswith(message)
    assert codes(resp.json()) == ["VALIDATION"]


async def test_bad_documents_and_variables(blog: Calls):
    resp = await blog.call("post", "/graphql", content=b"{not json", headers={"Content-Type": "application/json"})
    assert resp.status_code == 200 and codes(resp.json()) == ["VALIDATION"]
    for query in ("{ posts { id }", "query {", "{ posts(limit: 1) { ...Missing } }", "{ posts { nope } }"):
        body = await gql(blog, query)
        assert body["data"] is None and codes(body)[0] == "VALIDATION", query
    body = await gql(blog, "query($n: Int) { posts(limit: $n) { id } }", {"n": "ten"})
    assert body["data"] is None and codes(body) == ["VALIDATION"]
    body = await gql(blog, "query A { _collections } query B { _collections }", operation="C")
    assert codes(body) == ["VALIDATION"] and "Unknown operation named 'C'" in body["errors"][0]["message"]
    body = await gql(blog, "query A { _collections } query B { _collections }")
    assert codes(body) == ["VALIDATION"]
    body = await gql(blog, "{ posts(limit: 201) { id } }")
    assert codes(body) == ["VALIDATION"] and "200" in body["errors"][0]["message"]
    body = await gql(blog, '{ posts_by_id(id: "p1") { notes(offset: -1) { id } } }')
    assert codes(body) == ["VALIDATION"]
    body = await gql(blog, '{ posts_by_id(id: "p1") { a: notes(limit: 1) { id } b: notes(limit: 2) { id } } }')
    assert codes(body) == ["VALIDATION"] and "different limit" in body["errors"][0]["message"]
    body = await gql(blog, "subscription { posts_events { action } }")
    assert codes(body) == ["VALIDATION"] and "text/event-stream" in body["errors"][0]["message"]
    deep = "{" * 3000 + "}" * 3000
    assert codes(await gql(blog, deep)) == ["VALIDATION"]


async def test_unexpected_fault_is_internal_without_trace(blog: Calls, monkeypatch):
    from plugins.graphql import resolvers

    async def broken(*args, **kwargs):
        raise RuntimeError("secret detail of the fault")

    monkeypatch.setattr(resolvers.items, "list_items", broken)
    body = await gql(blog, "{ posts { id } }")
    assert body["data"] is None and codes(body) == ["INTERNAL"]
    assert "secret detail" not in str(body) and "Traceback" not in str(body)
    assert body["errors"][0]["message"] == "An unexpected error occurred"


async def test_development_opens_the_schema_to_admins_only(make_app):
    """A member's introspection would name the fields its permissions hide (as GET /fields no
    longer does): in development, introspection and suggestions answer admins only."""
    from kernel.testing import new_member

    app = await make_app(env={"SVC_ENV": "development"})
    token = await app.login()
    site = await app.create_site({"Authorization": f"Bearer {token}"})
    admin = Calls(app.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": site})
    await seed_blog(admin)
    made = await new_member(app, site, "subscriber")
    await admin.grant([{"collection": "posts", "action": "read", "fields": ["id", "title"]}], {"userId": made.id})
    app.kernel.access.invalidate(site)
    member = Calls(app.client, made.headers)
    for query in ('{ __type(name: "posts") { fields { name } } }', "{ __schema { types { name } } }"):
        body = await gql(member, query)
        assert body["data"] is None and "introspection" in body["errors"][0]["message"], body
    assert "Did you mean" not in (await gql(member, "{ post { id } }"))["errors"][0]["message"]
    assert (await gql(member, '{ posts_by_id(id: "p1") { title } }'))["data"]["posts_by_id"]["title"]
    names = {f["name"] for f in (await gql(admin, '{ __type(name: "posts") { fields { name } } }'))
             ["data"]["__type"]["fields"]}
    assert "notes" in names
