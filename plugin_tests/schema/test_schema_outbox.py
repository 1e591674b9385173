"""Collection, field and relation writes store their durable events in the kernel's event log."""

from __future__ import annotations

from kernel.testing import Calls


async def test_schema_writes_emit_durable_events(svc_app, calls: Calls, site: str):
    await calls.collection("authors", {"name": "string"})
    await calls.collection("posts", {"title": "string", "author": "string"})
    rel = await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="authors")
    await calls.ok("patch", "/collections/posts", json={"meta": {"note": "n"}})
    await calls.ok("patch", "/fields/posts/title", json={"required": True})
    await calls.ok("delete", f"/relations/{rel['id']}", status=204)
    await calls.ok("delete", "/fields/posts/title", status=204)
    await calls.ok("delete", "/collections/authors", status=204)
    page = await svc_app.kernel.events.read_after(site, limit=100)
    got = [(e.type, e.collection, e.fields) for e in page.events]
    assert got == [
        ("collections.create", "authors", None), ("fields.create", "authors", ["name"]),
        ("collections.create", "posts", None), ("fields.create", "posts", ["title"]),
        ("fields.create", "posts", ["author"]), ("relations.create", "posts", ["author"]),
        ("collections.update", "posts", None), ("fields.update", "posts", ["title"]),
        ("relations.delete", "posts", ["author"]), ("fields.delete", "posts", ["title"]),
        ("collections.delete", "authors", None),
    ]
    assert {e.item_id for e in page.events} == {None}
    filtered = await svc_app.kernel.events.read_after(site, limit=100, types=["relations.*"])
    assert [e.type for e in filtered.events] == ["relations.create", "relations.delete"]
    assert filtered.next_cursor == page.next_cursor  # the filter skipped the rest, it did not stall


async def test_a_vetoed_schema_write_leaves_no_event(svc_app, calls: Calls, site: str):
    await calls.collection("posts", {"title": "string"})
    before = await svc_app.kernel.events.head(site)
    await calls.err("post", "/collections", 409, json={"name": "posts"})
    assert await svc_app.kernel.events.head(site) == before
