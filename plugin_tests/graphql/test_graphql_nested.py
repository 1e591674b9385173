"""Nested relations load in one query per relation per level, never one per row: the SQL
statements of a nested query over 100 parents are counted (SQLAlchemy engine events)."""

from __future__ import annotations

import contextlib

from sqlalchemy import event

from kernel.testing import Calls
from plugin_tests.graphql.conftest import gql


@contextlib.contextmanager
def item_statements(kernel):
    """The SQL statements reading items (``svc_items``) run on the app's engine in the block."""
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if "svc_items" in statement and statement.lstrip().upper().startswith(("SELECT", "WITH")):
            seen.append(statement)

    engine = kernel.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


async def test_no_n_plus_one_over_100_parents(blog: Calls, svc_app):
    await blog.create("authors", [{"id": f"a{i}", "name": f"Author {i}"} for i in range(10)])
    await blog.create("posts", [{"id": f"q{i:03}", "title": f"Post {i}", "author": f"a{i % 10}"} for i in range(100)])
    await blog.create("notes", [{"post": f"q{i % 100:03}", "body": f"note {i}"} for i in range(200)])
    # Cost 1 + 100 x (author 2 + notes (1 + 1 x (body 1 + post 3))) = 701, within 1,000.
    query = """{ posts(limit: 100, filter: {id: {_starts_with: "q"}}, sort: ["id"]) {
                   author { name } notes(limit: 1) { body post { author { name } } } } }"""
    await gql(blog, query)  # warm the schema, document and read-plan caches
    with item_statements(svc_app.kernel) as statements:
        body = await gql(blog, query)
    assert "errors" not in body, body
    posts = body["data"]["posts"]
    assert len(posts) == 100 and posts[7]["author"] == {"name": "Author 7"}
    assert posts[7]["notes"] == [{"body": "note 7", "post": {"author": {"name": "Author 7"}}}]
    # posts, their authors, their notes, the notes' posts, those posts' authors: 5, not 100+.
    assert len(statements) == 5, statements


async def test_nested_reads_enforce_permissions(blog: Calls, member):
    user = await member([{"collection": "posts", "action": "read"},
                         {"collection": "notes", "action": "read", "conditions": {"body": {"_neq": "second"}}},
                         {"collection": "authors", "action": "read", "fields": ["name"]}])
    body = await gql(user, '{ posts_by_id(id: "p1") { author { name } notes { body } } }')
    assert body["data"]["posts_by_id"] == {"author": {"name": "Ann"}, "notes": [{"body": "first"}]}
    body = await gql(user, '{ posts_by_id(id: "p1") { author { rank } } }')  # hidden: as if missing
    assert body["errors"][0]["message"] == "Cannot query field 'rank' on type 'authors'."
