"""Item writes store their durable events in the kernel's event log, in the same transaction:
create, update (the changed field names), delete, bulk writes and onDelete effects; thin
events (no values); per site."""

from __future__ import annotations

from typing import Any

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def _events(svc_app: Any, site: str, types: tuple[str, ...] = ("items.*",)) -> list[Any]:
    page = await svc_app.kernel.events.read_after(site, limit=1000, types=types)
    return page.events


async def test_create_update_delete_events(svc_app, calls: Calls, site: str):
    await calls.collection("articles", {"title": "string", "body": "text", "views": "integer"})
    item = await calls.create("articles", {"title": "secret title", "body": "secret body"})
    await calls.ok("patch", f"/items/articles/{item['id']}", json={"views": 3, "title": "secret title"})
    await calls.ok("patch", f"/items/articles/{item['id']}", json={"status": "archived"})
    await calls.ok("delete", f"/items/articles/{item['id']}", status=204)
    found = await _events(svc_app, site)
    assert [(e.type, e.collection, e.item_id, e.fields) for e in found] == [
        ("items.create", "articles", item["id"], ["body", "status", "title"]),
        ("items.update", "articles", item["id"], ["views"]),  # the title was sent unchanged
        ("items.update", "articles", item["id"], ["status"]),
        ("items.delete", "articles", item["id"], None),
    ]
    assert all(e.actor for e in found) and all(e.request_id for e in found)
    # Thin: no field value anywhere in an event.
    shown = repr([e.to_dict() for e in found])
    assert "secret" not in shown
    assert found[0].to_dict() == {"id": str(found[0].id), "type": "items.create", "collection": "articles",
                                  "itemId": item["id"], "fields": ["body", "status", "title"],
                                  "occurredAt": found[0].to_dict()["occurredAt"]}


async def test_bulk_create_events_and_a_failed_write_leaves_none(svc_app, calls: Calls, site: str):
    await calls.collection("tags", {"name": "string"})
    await calls.create("tags", [{"id": "a", "name": "a"}, {"id": "b", "name": "b"}, {"id": "c", "name": "c"}])
    assert [(e.type, e.item_id) for e in await _events(svc_app, site)] == [
        ("items.create", "a"), ("items.create", "b"), ("items.create", "c")]
    # A rejected bulk write (the last item's id is taken) rolls its events back with the data.
    await calls.err("post", "/items/tags", 409, "CONFLICT", json=[{"id": "d", "name": "d"}, {"id": "a", "name": "a"}])
    assert [e.item_id for e in await _events(svc_app, site)] == ["a", "b", "c"]


async def test_on_delete_cascade_and_set_null_emit_their_events(svc_app, calls: Calls, site: str):
    await calls.collection("authors", {"name": "string"})
    await calls.collection("posts", {"title": "string", "author": "string"})
    await calls.collection("notes", {"text": "string", "author": "string"})
    await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="authors",
                         onDelete="cascade")
    await calls.relation(type="m2o", collection="notes", field="author", relatedCollection="authors",
                         onDelete="set null")
    await calls.create("authors", {"id": "ann", "name": "Ann"})
    await calls.create("posts", [{"id": "p1", "author": "ann"}, {"id": "p2", "author": "ann"}])
    await calls.create("notes", {"id": "n1", "author": "ann"})
    page = await svc_app.kernel.events.read_after(site, limit=1000)
    await calls.ok("delete", "/items/authors/ann", status=204)
    after = (await svc_app.kernel.events.read_after(site, page.next_cursor, limit=1000)).events
    got = {(e.type, e.collection, e.item_id, tuple(e.fields or ()), e.cause) for e in after}
    assert got == {
        ("items.update", "notes", "n1", ("author",), "onDelete:authors:ann"),
        ("items.delete", "authors", "ann", (), None),
        ("items.delete", "posts", "p1", (), "onDelete:authors:ann"),
        ("items.delete", "posts", "p2", (), "onDelete:authors:ann"),
    }


async def test_events_are_per_site(svc_app, calls: Calls, calls_b: Calls, site: str, site_b: str):
    for one in (calls, calls_b):
        await one.collection("articles", {"title": "string"})
    await calls_b.create("articles", {"id": "only-b", "title": "b"})
    await calls.create("articles", {"id": "only-a", "title": "a"})
    in_a = await _events(svc_app, site, ("items.*", "collections.*", "fields.*"))
    in_b = await _events(svc_app, site_b, ("items.*",))
    assert {e.site_id for e in in_a} == {site} and {e.site_id for e in in_b} == {site_b}
    assert "only-b" not in [e.item_id for e in in_a] and [e.item_id for e in in_b] == ["only-b"]
