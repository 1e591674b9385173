"""Cross-tenant: site B never lists, reads, reverts to, commits, promotes, compares, changes or
releases site A's revisions, versions or pins, through any route, even with the same
collection name and item ids; and B's draft/locale reads never see A's drafts."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

FIELDS = {"title": "string", "translations": "json"}


async def _site_a(calls: Calls) -> dict:
    await calls.collection("notes", FIELDS, versioning=True)
    await calls.create("notes", {"id": "a", "title": "A", "translations": {"de": {"title": "A-de"}}})
    await calls.ok("patch", "/items/notes/a", json={"title": "A2"})
    staged = await calls.ok("post", "/items/notes/a/revisions", status=201, json={"data": {"title": "A-staged"}})
    await calls.ok("post", "/items/notes/a/versions", status=201, json={"key": "v"})
    await calls.ok("post", "/items/notes/a/versions", status=201, json={"key": "draft"})
    await calls.ok("patch", "/items/notes/a/versions/draft", json={"data": {"title": "A-draft"}})
    await calls.ok("post", "/items/notes/a/pins", status=201, json={"field": "title"})
    revs = await calls.ok("get", "/items/notes/a/revisions", params={"staged": "false"})
    return {"revision": revs[-1]["id"], "staged": staged["id"]}


async def _every_route_refuses(calls_b: Calls, status: int, code: str, ids: dict) -> None:
    base = "/items/notes/a"
    for method, path, body in (
        ("get", f"{base}/revisions", None), ("post", f"{base}/revisions", {"data": {}}),
        ("get", f"{base}/revisions/{ids['revision']}", None),
        ("post", f"{base}/revisions/{ids['staged']}/commit", None),
        ("post", f"{base}/revert", {"revisionId": ids["revision"]}),
        ("get", f"{base}/versions", None), ("post", f"{base}/versions", {"key": "x"}),
        ("get", f"{base}/versions/v", None), ("patch", f"{base}/versions/v", {"name": "B"}),
        ("delete", f"{base}/versions/v", None), ("get", f"{base}/versions/v/compare", None),
        ("post", f"{base}/versions/v/promote", None),
        ("get", f"{base}/pins", None), ("post", f"{base}/pins", {"field": "title"}),
        ("get", f"{base}/pins/title", None), ("delete", f"{base}/pins/title", None),
    ):
        kw = {"json": body} if body is not None else {}
        await calls_b.err(method, path, status, code, **kw)


async def _a_is_intact(calls: Calls, ids: dict) -> None:
    assert (await calls.get("notes", "a"))["title"] == "A2"
    revs = await calls.ok("get", "/items/notes/a/revisions")
    assert {r["id"] for r in revs} >= {ids["revision"], ids["staged"]} and len(revs) == 3
    assert [r["staged"] for r in revs if r["id"] == ids["staged"]] == [True]
    assert [v["key"] for v in await calls.ok("get", "/items/notes/a/versions")] == ["v", "draft"]
    assert [p["field"] for p in await calls.ok("get", "/items/notes/a/pins")] == ["title"]


async def test_b_without_the_collection(calls: Calls, calls_b: Calls):
    ids = await _site_a(calls)
    await _every_route_refuses(calls_b, 404, "NOT_FOUND", ids)
    await _a_is_intact(calls, ids)


async def test_b_with_the_collection_but_not_the_item(calls: Calls, calls_b: Calls):
    ids = await _site_a(calls)
    await calls_b.collection("notes", FIELDS, versioning=True)
    await _every_route_refuses(calls_b, 404, "RECORD_NOT_FOUND", ids)
    await _a_is_intact(calls, ids)


async def test_b_with_the_same_ids_sees_only_its_own_history(calls: Calls, calls_b: Calls):
    ids = await _site_a(calls)
    await calls_b.collection("notes", FIELDS, versioning=True)
    await calls_b.create("notes", {"id": "a", "title": "B"})
    base = "/items/notes/a"
    await calls_b.ok("patch", base, json={})
    revs = await calls_b.ok("get", f"{base}/revisions", full=True)
    assert revs["meta"]["total"] == 2 and {r["data"]["title"] for r in revs["data"]} == {"B"}
    await calls_b.err("get", f"{base}/revisions/{ids['revision']}", 404, "NOT_FOUND")
    await calls_b.err("post", f"{base}/revisions/{ids['staged']}/commit", 404, "NOT_FOUND")
    await calls_b.err("post", f"{base}/revert", 404, "NOT_FOUND", json={"revisionId": ids["revision"]})
    assert await calls_b.ok("get", f"{base}/versions") == []
    for method, path in (("get", "/versions/v"), ("patch", "/versions/v"), ("delete", "/versions/v"),
                         ("get", "/versions/v/compare"), ("post", "/versions/v/promote")):
        kw = {"json": {"name": "B"}} if method == "patch" else {}
        await calls_b.err(method, base + path, 404, "NOT_FOUND", **kw)
    assert await calls_b.ok("get", f"{base}/pins") == []
    await calls_b.err("get", f"{base}/pins/title", 404, "NOT_FOUND")
    await calls_b.err("delete", f"{base}/pins/title", 404, "NOT_FOUND")
    # A's pin does not block B's writes, and B may pin its own field.
    await calls_b.ok("patch", base, json={"title": "B2"})
    await calls_b.ok("post", f"{base}/pins", status=201, json={"field": "title"})
    # B's own key "v" does not collide with A's.
    await calls_b.ok("post", f"{base}/versions", status=201, json={"key": "v"})
    # Draft and locale reads: A's draft and translations never reach B.
    got = await calls_b.get("notes", "a", headers={"X-Svc-Draft": "true", "X-Svc-Locale": "de"})
    assert got["title"] == "B2"
    assert (await calls.get("notes", "a", headers={"X-Svc-Draft": "true"}))["title"] == "A-draft"
    await _a_is_intact(calls, ids)
