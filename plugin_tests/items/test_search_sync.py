"""The search index follows every write in the write's transaction: creates, updates, deletes,
vetoed writes, schema changes, site deletion; and it can be rebuilt from the items."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import func, select, text

from kernel.base.errors import ApiError
from kernel.db.meta import now_utc
from kernel.tenancy.scope import SiteDB
from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugins.items.search import index as search_index
from plugins.items.search.index import index_missing, reindex_collection, search
from plugins.items.tables import items
from plugins.items.upkeep import search_backfill
from plugins.schema.api import get_schema

# Every test but the backfill's writes and reads in sites of its own: they share the module's app,
# each in new sites of it (kernel/testing/shared.py). The backfill reads every site and runs at an
# app's start, so its tests start apps of their own (``testing_shared.own_app``).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

# the field holds data: dropping it with its values is asked for (DELETE /fields answers 409 otherwise)
DESTRUCTIVE = {"allowDestructive": "true"}


async def find(calls: Calls, q: str, **params: Any) -> list[str]:
    answer = await calls.ok("get", "/search", full=True, params={"q": q, **params})
    assert answer["meta"]["total"] == len(answer["data"]) or len(answer["data"]) == answer["meta"]["limit"]
    return sorted(hit["id"] for hit in answer["data"])


async def index_rows(svc_app: Any, site: str) -> int:
    async with svc_app.kernel.db.connect() as conn:
        count = await conn.scalar(select(func.count()).select_from(search).where(search.c.site_id == site))
    return int(count)


async def assert_fts_consistent(svc_app: Any) -> None:
    """SQLite: FTS5 checks its index against the content table (raises when they differ)."""
    if svc_app.kernel.db.dialect == "sqlite":
        async with svc_app.kernel.db.begin() as conn:
            await conn.execute(text("INSERT INTO svc_search_fts(svc_search_fts, rank) VALUES ('integrity-check', 1)"))


async def _posts(calls: Calls) -> None:
    await calls.collection("posts", {"title": "string", "body": "text", "n": "integer"})


async def test_soft_delete_and_updates(svc_app: Any, site: str, calls: Calls):
    await _posts(calls)
    await calls.create("posts", [{"id": "a", "title": "Lotus pond"}, {"id": "b", "title": "Lotus tea"}])
    assert await find(calls, "lotus") == ["a", "b"]
    await calls.ok("delete", "/items/posts/a", status=204)
    assert await find(calls, "lotus") == ["b"] and await find(calls, "pond") == []
    await calls.ok("patch", "/items/posts/b", json={"title": "Jasmine tea"})
    assert await find(calls, "lotus") == [] and await find(calls, "jasmine") == ["b"]
    await calls.ok("patch", "/items/posts/b", json={"n": 5, "status": "draft"})  # no text changed
    assert await find(calls, "jasmine tea") == ["b"]
    await calls.ok("put", "/items/posts/b", json={"body": "Green tea from Thái Nguyên"})
    assert await find(calls, "jasmine") == [] and await find(calls, "thai nguyen") == ["b"]
    await calls.ok("patch", "/items/posts/b", json={"body": None})
    assert await find(calls, "tea") == [] and await index_rows(svc_app, site) == 0
    await assert_fts_consistent(svc_app)


async def test_the_index_holds_what_the_filters_made_of_the_item(svc_app: Any, calls: Calls):
    await _posts(calls)

    def rename(event: str, payload: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {**payload, "after": {**payload["after"], "title": "Renamed by a flow"}}

    off = svc_app.kernel.bus.on_filter("posts.items.create", rename)
    try:
        await calls.create("posts", {"id": "a", "title": "Original"})
    finally:
        off()
    assert await find(calls, "original") == [] and await find(calls, "renamed flow") == ["a"]


async def test_a_vetoed_write_leaves_no_index_row(svc_app: Any, site: str, calls: Calls):
    await _posts(calls)
    await calls.create("posts", {"id": "a", "title": "Kept"})

    def veto(event: str, payload: Any, ctx: Any) -> None:
        raise ApiError(409, "CONFLICT", "vetoed")

    off = svc_app.kernel.bus.on_filter("posts.items.*", veto, priority=20_000)  # after the index
    try:
        await calls.err("post", "/items/posts", 409, "CONFLICT", json={"id": "b", "title": "Vetoed"})
        await calls.err("patch", "/items/posts/a", 409, "CONFLICT", json={"title": "Changed"})
        await calls.err("delete", "/items/posts/a", 409, "CONFLICT")
    finally:
        off()
    assert await find(calls, "vetoed") == [] and await find(calls, "changed") == []
    assert await find(calls, "kept") == ["a"] and await index_rows(svc_app, site) == 1
    # A bulk create that repeats an id is refused as a whole; nothing of it is indexed.
    await calls.err("post", "/items/posts", 409, "CONFLICT", json=[{"id": "c", "title": "Twice"},
                                                                   {"id": "c", "title": "Twice again"}])
    assert await find(calls, "twice") == [] and await index_rows(svc_app, site) == 1
    await assert_fts_consistent(svc_app)


async def test_field_changes(svc_app: Any, calls: Calls):
    await _posts(calls)
    await calls.ok("post", "/fields/posts", status=201, json={"field": "code", "type": "string"})
    await calls.create("posts", [{"id": "a", "title": "Alpha", "body": "Walrus", "code": "12345"},
                                 {"id": "b", "title": "Beta"}])
    assert await find(calls, "12345") == ["a"]
    await calls.ok("patch", "/fields/posts/code", json={"type": "integer"})
    assert await find(calls, "12345") == []
    await calls.ok("patch", "/fields/posts/code", json={"type": "text"})
    assert await find(calls, "12345") == ["a"]
    await calls.ok("delete", "/fields/posts/body", status=204, params=DESTRUCTIVE)
    assert await find(calls, "walrus") == []
    # A new field's default is written into the existing items, and indexed with them.
    await calls.ok("post", "/fields/posts", status=201,
                   json={"field": "tagline", "type": "string", "options": {"default": "Fresh daily"}})
    assert await find(calls, "fresh daily") == ["a", "b"]
    await assert_fts_consistent(svc_app)


async def test_collection_delete_restore_and_a_new_namesake(calls: Calls):
    await _posts(calls)
    await calls.create("posts", {"id": "old", "title": "Heron"})
    await calls.ok("delete", "/collections/posts", status=204)
    assert await find(calls, "heron") == []
    await _posts(calls)
    await calls.create("posts", {"id": "new", "title": "Heron new"})
    assert await find(calls, "heron") == ["new"] and await find(calls, "heron", collection="posts") == ["new"]
    await calls.ok("delete", "/collections/posts", status=204)
    assert await find(calls, "heron") == []
    await calls.ok("post", "/collections/posts/restore")  # the most recently deleted one
    assert await find(calls, "heron") == ["new"]


async def test_site_deletion_removes_its_rows(svc_app: Any, site_b: str, calls: Calls, calls_b: Calls,
                                              admin_headers: dict[str, str]):
    await _posts(calls)
    await _posts(calls_b)
    await calls.create("posts", {"id": "a", "title": "Stays"})
    await calls_b.create("posts", {"id": "a", "title": "Goes"})
    assert await index_rows(svc_app, site_b) == 1
    resp = await svc_app.client.delete(f"/api/v1/sites/{site_b}", headers=admin_headers)
    assert resp.status_code == 204, resp.text
    assert await index_rows(svc_app, site_b) == 0
    assert await find(calls, "stays") == ["a"]
    await assert_fts_consistent(svc_app)


@pytest.mark.parametrize("page", [500, 4])
async def test_reindex_and_index_missing(svc_app: Any, site: str, calls: Calls, monkeypatch, page: int):
    # page 4: the backfill walks the ids a page at a time; an indexed item mid-page, a page
    # with nothing missing and a last short page all happen.
    monkeypatch.setattr(search_index, "INSERT_BATCH", page)
    await _posts(calls)
    await calls.collection("empty", {"n": "integer"})
    await calls.create("posts", [{"id": f"i{n}", "title": f"Ibis {n}", "body": "Marsh"} for n in range(12)])
    await calls.create("posts", {"id": "none", "n": 1})
    assert await index_rows(svc_app, site) == 24
    # Items written before the index existed (or around it): simulate by dropping rows.
    async with svc_app.kernel.db.begin() as conn:
        await conn.execute(search.delete().where(search.c.site_id == site, search.c.item_id != "i0"))
    assert await find(calls, "ibis") == ["i0"]
    assert await index_missing(svc_app.kernel, site) == 22
    assert len(await find(calls, "ibis marsh", limit=50)) == 12
    assert await index_missing(svc_app.kernel, site) == 0
    assert await reindex_collection(svc_app.kernel, site, "posts") == 24
    assert await reindex_collection(svc_app.kernel, site, "nope") == 0
    assert await index_rows(svc_app, site) == 24
    await assert_fts_consistent(svc_app)


async def _insert_raw(svc_app: Any, site: str, rows: dict[str, dict[str, Any]], deleted: bool = False) -> None:
    """Items written straight into ``svc_items``, bypassing the item events (and so the index)."""
    coll = (await get_schema(svc_app.kernel, site)).collection("posts")
    now = now_utc()
    async with svc_app.kernel.db.begin() as conn:
        await SiteDB(site, conn).insert(items, [
            {"collection_id": coll.id, "id": item_id, "status": "published", "sort": None, "data": data,
             "created_at": now, "updated_at": now, "deleted_at": now if deleted else None}
            for item_id, data in rows.items()])


async def _own_app(make_app: Any) -> tuple[Any, str, str, Calls, Calls]:
    """An app of the test's own (the first of ``make_app``: ``app0``), two new sites and the admin's calls there."""
    app, [calls, calls_b] = await testing_shared.own_app(make_app, 2)
    return app, calls.headers["X-Svc-Site"], calls_b.headers["X-Svc-Site"], calls, calls_b


async def _restart_with_raw_items(make_app: Any, svc_app: Any, site: str, site_b: str, calls: Calls,
                                  calls_b: Calls, tmp_path: Any) -> Any:
    """Posts in two sites, some written through the API and some straight into the table; then a
    second app on the same data (the next start), whose backfill task has run to its end."""
    await svc_app.kernel.state[search_backfill.TASK]  # this app's own (empty) backfill is over
    await _posts(calls)
    await _posts(calls_b)
    await calls.create("posts", {"id": "api", "title": "Egret by API"})
    await _insert_raw(svc_app, site, {f"raw{n}": {"title": f"Egret {n}", "body": "Salt marsh"} for n in range(3)})
    await _insert_raw(svc_app, site, {"notext": {"n": 1}})
    await _insert_raw(svc_app, site, {"gone": {"title": "Egret deleted"}}, deleted=True)
    await _insert_raw(svc_app, site_b, {"b1": {"title": "Egret of site b"}})
    assert await find(calls, "egret") == ["api"] and await find(calls_b, "egret") == []
    again = await make_app(data_dir=tmp_path / "app0")  # svc_app's data dir
    await again.kernel.state[search_backfill.TASK]
    return again


async def test_startup_backfills_items_the_index_misses(make_app: Any, tmp_path: Any):
    svc_app, site, site_b, calls, calls_b = await _own_app(make_app)
    again = await _restart_with_raw_items(make_app, svc_app, site, site_b, calls, calls_b, tmp_path)
    calls, calls_b = Calls(again.client, calls.headers), Calls(again.client, calls_b.headers)
    assert await find(calls, "egret") == ["api", "raw0", "raw1", "raw2"]
    assert await find(calls, "salt marsh") == ["raw0", "raw1", "raw2"]
    assert await find(calls_b, "egret") == ["b1"]
    assert await index_rows(again, site) == 7 and await index_missing(again.kernel, site) == 0
    await assert_fts_consistent(again)


async def test_a_failing_site_does_not_stop_the_backfill_or_the_app(make_app: Any, tmp_path: Any, monkeypatch: Any,
                                                                   caplog: Any):
    svc_app, site, site_b, calls, calls_b = await _own_app(make_app)

    async def broken_for_site_b(kernel: Any, site_id: str) -> int:
        if site_id == site_b:
            raise RuntimeError("boom")
        return await index_missing(kernel, site_id)

    monkeypatch.setattr(search_backfill, "index_missing", broken_for_site_b)
    again = await _restart_with_raw_items(make_app, svc_app, site, site_b, calls, calls_b, tmp_path)
    assert f"search backfill: site {site_b} failed" in caplog.text
    assert await find(Calls(again.client, calls.headers), "egret") == ["api", "raw0", "raw1", "raw2"]
    assert await find(Calls(again.client, calls_b.headers), "egret") == []


async def test_shutdown_cancels_a_running_backfill(make_app: Any, monkeypatch: Any):
    svc_app = await make_app()
    started = asyncio.Event()

    async def slow(kernel: Any, site_id: str) -> int:
        started.set()
        await asyncio.sleep(60)
        return 0

    async def one_site(kernel: Any) -> list[str]:
        return ["some-site"]

    monkeypatch.setattr(search_backfill, "index_missing", slow)
    monkeypatch.setattr(search_backfill, "sites_missing_rows", one_site)
    search_backfill.start(svc_app.kernel)
    task = svc_app.kernel.state[search_backfill.TASK]
    await asyncio.wait_for(started.wait(), 5)
    await search_backfill.stop(svc_app.kernel)
    assert task.cancelled() and search_backfill.TASK not in svc_app.kernel.state


async def test_concurrent_writes_of_one_item(svc_app: Any, site: str, calls: Calls):
    """PostgreSQL runs these transactions in parallel (SQLite serialises writers): the index ends
    with exactly the last write's words, and racing creates of one id give 201 and 409s."""
    if svc_app.kernel.db.dialect != "postgresql":
        pytest.skip("SQLite serialises write transactions")
    await _posts(calls)
    await calls.create("posts", {"id": "a", "title": "start", "body": "alpha"})
    words = [f"word{n}" for n in range(6)]
    patches = [calls.call("patch", "/items/posts/a", json={"title": w, **({"body": None} if n % 2 else {})})
               for n, w in enumerate(words)]
    creates = [calls.call("post", "/items/posts", json={"id": "b", "title": f"racer{n}"}) for n in range(4)]
    answers = await asyncio.gather(*patches, *creates)
    assert [r.status_code for r in answers[:6]] == [200] * 6
    assert sorted(r.status_code for r in answers[6:]) == [201, 409, 409, 409]
    final = await calls.get("posts", "a")
    assert await find(calls, final["title"]) == ["a"]
    assert [w for w in words if await find(calls, w)] == [final["title"]]
    assert (await find(calls, "alpha")) == (["a"] if final.get("body") else [])
    racer = (await calls.get("posts", "b"))["title"]
    assert [n for n in range(4) if await find(calls, f"racer{n}")] == [int(racer[-1])]
    assert await index_rows(svc_app, site) == (3 if final.get("body") else 2)


async def test_the_backfill_visits_only_sites_with_unindexed_searchable_values(make_app: Any):
    """One query over every site names the sites to index: none while the index is complete,
    whatever items hold no searchable value; then only the site of an item written around it."""
    svc_app, site, site_b, calls, calls_b = await _own_app(make_app)
    await _posts(calls)
    await _posts(calls_b)
    await calls.field("posts", "secret", "text", options={"sensitive": True})
    await calls.create("posts", {"id": "api", "title": "Egret by API"})
    assert await search_backfill.sites_missing_rows(svc_app.kernel) == []
    await _insert_raw(svc_app, site_b, {"empty": {"title": ""}, "notext": {"n": 1}})
    await _insert_raw(svc_app, site, {"gone": {"title": "Egret deleted"}}, deleted=True)
    await _insert_raw(svc_app, site, {"hidden": {"secret": "Egret in secret"}})
    assert await search_backfill.sites_missing_rows(svc_app.kernel) == []
    await _insert_raw(svc_app, site_b, {"raw": {"title": "Egret", "body": "Salt marsh"}})
    assert await search_backfill.sites_missing_rows(svc_app.kernel) == [site_b]
    assert await search_backfill.backfill(svc_app.kernel) == 2
    assert await search_backfill.sites_missing_rows(svc_app.kernel) == []
    assert await find(calls_b, "egret") == ["raw"] and await find(calls, "egret") == ["api"]
