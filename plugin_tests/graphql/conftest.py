"""Fixtures of the GraphQL tests: ``gql`` runs an operation as a ``Calls``' caller, and the
small blog (authors <- posts.author m2o, posts <- notes.post m2o with the o2m alias
``posts.notes``) most tests read."""

from __future__ import annotations

from typing import Any

import pytest

from kernel.testing import Calls

AUTHORS = [{"id": "ann", "name": "Ann", "rank": 1}, {"id": "bob", "name": "Bob", "rank": 2}]
POSTS = [{"id": "p1", "title": "Hello world", "views": 10, "author": "ann", "meta": {"k": 1}},
         {"id": "p2", "title": "Second post", "views": 600, "author": "bob"},
         {"id": "p3", "title": "Third", "views": 900, "author": None}]
NOTES = [{"id": "n1", "post": "p1", "body": "first"}, {"id": "n2", "post": "p1", "body": "second"},
         {"id": "n3", "post": "p2", "body": "third"}]


async def gql(calls: Calls, query: str, variables: dict[str, Any] | None = None, *,
              operation: str | None = None) -> dict[str, Any]:
    """POST /graphql as ``calls``' caller; asserts HTTP 200 and returns the body."""
    body: dict[str, Any] = {"query": query}
    if variables is not None:
        body["variables"] = variables
    if operation is not None:
        body["operationName"] = operation
    resp = await calls.call("post", "/graphql", json=body)
    assert resp.status_code == 200, resp.text
    return resp.json()


def codes(body: dict[str, Any]) -> list[str]:
    return [e["extensions"]["code"] for e in body.get("errors", [])]


async def seed_blog(calls: Calls) -> None:
    await calls.collection("authors", {"name": "string", "rank": "integer"})
    await calls.collection("posts", {"title": "string", "views": "integer", "author": "string", "meta": "json"})
    await calls.collection("notes", {"body": "text", "post": "string"})
    await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="authors")
    await calls.relation(type="m2o", collection="notes", field="post", relatedCollection="posts",
                         relatedField="notes")
    await calls.create("authors", AUTHORS)
    await calls.create("posts", POSTS)
    await calls.create("notes", NOTES)


@pytest.fixture
async def blog(calls: Calls) -> Calls:
    await seed_blog(calls)
    return calls


@pytest.fixture
def member(svc_app: Any, site: str, calls: Calls, make_member: Any) -> Any:
    """``await member(rules)``: the ``Calls`` of a new subscriber of ``site`` holding ``rules``."""

    async def make(rules: list[dict[str, Any]]) -> Calls:
        made = await make_member(site, "subscriber")
        await calls.grant(rules, {"userId": made.id})
        svc_app.kernel.access.invalidate(site)
        return Calls(svc_app.client, made.headers)

    return make


async def live_blog(make_app: Any, live_server: Any, env: dict[str, str]) -> tuple[Any, ...]:
    """An app with ``env`` under a live server, and two sites seeded with the blog:
    ``(app, server, admin headers, site, site_b, calls as admin in site)``."""
    app = await make_app(env=env)
    server = await live_server(app)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    return (app, server, admin, *await blog_sites(app, admin))


async def shared_live_blog(shared_site: Any, server: Any) -> tuple[Any, ...]:
    """``live_blog``'s answer on a module's shared app and server (kernel/testing/shared.py), with
    two new sites of it. ``subscriber_count`` is the app's: the module's earlier streams are gone
    first, so that a test's counts are its own."""
    app, admin = shared_site.app, shared_site.admin_headers
    await wait_until(lambda: app.kernel.topics.subscriber_count == 0)
    return (app, server, admin, *await blog_sites(app, admin))


async def blog_sites(app: Any, admin: dict[str, str]) -> tuple[str, str, Calls]:
    """Two new sites of ``app`` seeded with the blog: ``(site, site_b, calls as admin in site)``."""
    site, site_b = [await app.create_site(admin) for _ in range(2)]
    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    await seed_blog(calls)
    await seed_blog(Calls(app.client, {**admin, "X-Svc-Site": site_b}))
    return site, site_b, calls


async def wait_until(predicate: Any, attempts: int = 1000) -> None:
    """Poll ``predicate`` (10 ms apart) until it holds."""
    import asyncio

    for _ in range(attempts):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")
