"""A real client: the ``gql`` library over its httpx transport runs queries and a mutation
against a live server."""

from __future__ import annotations

import pytest
from gql import Client, GraphQLRequest, gql
from gql.transport.exceptions import TransportQueryError
from gql.transport.httpx import HTTPXAsyncTransport

from kernel.testing import Calls


async def test_gql_client_queries_and_mutation(blog: Calls, live_app, site: str):
    transport = HTTPXAsyncTransport(url=f"{live_app.base_url}/api/v1/graphql",
                                    headers={**blog.headers, "X-Svc-Site": site})
    async with Client(transport=transport) as session:
        result = await session.execute(gql('{ posts(sort: ["id"], limit: 2) { id title author { name } } }'))
        assert result == {"posts": [{"id": "p1", "title": "Hello world", "author": {"name": "Ann"}},
                                    {"id": "p2", "title": "Second post", "author": {"name": "Bob"}}]}
        create = GraphQLRequest(
            "mutation Add($data: JSON!) { create_posts(data: $data) { id title views } }",
            variable_values={"data": {"title": "From gql", "views": 3}}, operation_name="Add")
        created = (await session.execute(create))["create_posts"]
        assert created["title"] == "From gql" and created["views"] == 3
        by_id = GraphQLRequest("query One($id: ID!) { posts_by_id(id: $id) { title } }",
                               variable_values={"id": created["id"]})
        assert (await session.execute(by_id)) == {"posts_by_id": {"title": "From gql"}}
        with pytest.raises(TransportQueryError) as refused:
            await session.execute(gql('{ posts(filter: {views: {_bogus: 1}}) { id } }'))
        assert refused.value.errors[0]["extensions"]["code"] == "INVALID_FILTER"
    assert (await blog.get("posts", created["id"]))["title"] == "From gql"
