"""``plugins.items.api``: the typed calls other plugins make (the same path REST takes).

Reads inside a unit of work see its uncommitted writes; a bus filter writes in the
transaction of the write it filters (``ctx.uow``), committed or rolled back with it; the cause
of a write reaches the event payload and the revision; permissions and tenancy hold.
"""

from __future__ import annotations

import pytest

from kernel import ApiError
from kernel.auth.principal import ANONYMOUS, Principal
from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugins.items import api

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

ADMIN = Principal(kind="user", is_instance_admin=True)


def _ctx(svc_app, site, principal=ADMIN):
    return api.context(svc_app.kernel, site, principal)


async def _raises(awaitable) -> ApiError:
    with pytest.raises(ApiError) as caught:
        await awaitable
    return caught.value


async def test_reads_in_a_unit_of_work_see_its_uncommitted_writes(calls: Calls, svc_app, site):
    await calls.collection("notes", {"title": "string", "n": "integer"})
    ctx = _ctx(svc_app, site)
    async with ctx.unit_of_work() as uow:
        created = await api.create(ctx, "notes", {"id": "a", "title": "one", "n": 2}, uow=uow)
        assert created["title"] == "one"
        assert (await api.read(ctx, "notes", "a", uow=uow))["title"] == "one"
        page = await api.list_items(ctx, "notes", api.query(filter={"n": {"_gt": 1}}), uow=uow)
        assert [i["id"] for i in page.items] == ["a"] and page.total == 1
        counted = await api.aggregate(ctx, "notes", api.query(aggregate={"count": "*"}), uow=uow)
        await api.update(ctx, "notes", "a", {"n": 3}, uow=uow)
        assert (await api.read(ctx, "notes", "a", uow=uow))["n"] == 3
        # Outside the transaction, nothing is visible before the commit.
        assert (await _raises(api.read(ctx, "notes", "a"))).code == "RECORD_NOT_FOUND"
    assert (await calls.get("notes", "a"))["n"] == 3
    assert counted == (await calls.list("notes", **{"aggregate[count]": "*"}))["data"]
    assert counted != (await api.aggregate(ctx, "notes", api.query(aggregate={"count": "*"}, filter={"n": {"_eq": 0}})))


async def test_a_unit_of_work_that_fails_keeps_nothing(calls: Calls, svc_app, site):
    await calls.collection("notes", {"title": "string"})
    ctx = _ctx(svc_app, site)
    with pytest.raises(RuntimeError):
        async with ctx.unit_of_work() as uow:
            await api.create_many(ctx, "notes", [{"id": "a"}, {"id": "b"}], uow=uow)
            assert len((await api.list_items(ctx, "notes", uow=uow)).items) == 2
            raise RuntimeError("stop")
    assert (await calls.list("notes"))["data"] == []


async def test_the_api_checks_permissions_and_input_like_rest(calls: Calls, svc_app, site):
    await calls.collection("notes", {"title": {"type": "string", "required": True}})
    assert (await _raises(api.create(_ctx(svc_app, site, ANONYMOUS), "notes", {"title": "x"}))).status == 403
    err = await _raises(api.create(_ctx(svc_app, site), "notes", {"title": 5}))
    assert (err.status, err.code) == (400, "VALIDATION_FAILED")
    assert (await _raises(api.create(_ctx(svc_app, site), "nope", {}))).status == 404
    assert (await _raises(api.create(_ctx(svc_app, site), "notes", [{"title": "x"}]))).status == 400
    assert (await _raises(api.aggregate(_ctx(svc_app, site), "notes", api.query()))).status == 400
    with pytest.raises(ApiError) as caught:
        api.query(bogus=1)
    with pytest.raises(ApiError):
        api.query(limit=500)
    assert caught.value.status == 400


async def test_another_site_sees_nothing(calls: Calls, svc_app, site, site_b, calls_b: Calls):
    await calls.collection("notes", {"title": "string"})
    await calls_b.collection("notes", {"title": "string"})
    await api.create(_ctx(svc_app, site), "notes", {"id": "a", "title": "mine"})
    other = _ctx(svc_app, site_b)
    assert (await _raises(api.read(other, "notes", "a"))).code == "RECORD_NOT_FOUND"
    assert (await api.list_items(other, "notes")).items == []
    assert (await _raises(api.update(other, "notes", "a", {"title": "x"}))).code == "RECORD_NOT_FOUND"
    assert (await _raises(api.delete(other, "notes", "a"))).code == "RECORD_NOT_FOUND"
    # A unit of work of one site cannot carry another site's calls.
    async with _ctx(svc_app, site).unit_of_work() as uow:
        for call in (api.read(other, "notes", "a", uow=uow), api.list_items(other, "notes", uow=uow),
                     api.update(other, "notes", "a", {"title": "x"}, uow=uow),
                     api.create(other, "notes", {"id": "b"}, uow=uow)):
            assert (await _raises(call)).details[0].path == ["uow"]
    assert (await calls.get("notes", "a"))["title"] == "mine"
    assert (await calls.list("notes"))["data"] == [await calls.get("notes", "a")]


async def test_the_cause_reaches_the_event_and_the_revision(calls: Calls, svc_app, site, recorder):
    await calls.collection("notes", {"title": "string"})
    ctx = _ctx(svc_app, site)
    await api.create(ctx, "notes", {"id": "a", "title": "one"}, cause="flow-run:7")
    await api.update(ctx, "notes", "a", {"title": "two"}, cause="release:r1")
    await calls.ok("patch", "/items/notes/a", json={"title": "three"})
    created, updated, by_rest = (recorder.named("items.create") + recorder.named("items.update"))
    assert created["causedBy"] == "flow-run:7" and updated["causedBy"] == "release:r1"
    assert "causedBy" not in by_rest
    revisions = await calls.ok("get", "/items/notes/a/revisions")
    assert [(r["kind"], r["causedBy"]) for r in revisions] == [("update", None), ("update", "release:r1"),
                                                               ("create", None)]
    one = await calls.ok("get", f"/items/notes/a/revisions/{revisions[1]['id']}")
    assert one["causedBy"] == "release:r1"
    # Revert writes its own cause, and tags the revision as before.
    revert = await calls.ok("post", "/items/notes/a/revert", full=True, json={"revisionId": revisions[2]["id"]})
    latest = (await calls.ok("get", "/items/notes/a/revisions"))[0]
    assert revert["meta"]["revisionId"] == latest["id"]
    assert (latest["kind"], latest["origin"], latest["causedBy"]) == (
        "revert", {"revisionId": revisions[2]["id"]}, f"revert:{revisions[2]['id']}")
    for bad in ("release", "no spaces: here", 5, "revert:x", "promote:draft", "x:" + "y" * 300):
        err = await _raises(api.update(ctx, "notes", "a", {"title": "z"}, cause=bad))
        assert (err.status, err.details[0].path) == (400, ["cause"])
    assert (await calls.get("notes", "a"))["title"] == "one"


async def test_a_delete_cascade_carries_the_cause(calls: Calls, svc_app, site, recorder):
    await calls.collection("authors", {"name": "string"})
    await calls.collection("books", {"title": "string", "author": "string"})
    await calls.relation(type="m2o", collection="books", field="author", relatedCollection="authors",
                         onDelete="cascade")
    await calls.create("authors", {"id": "a1", "name": "A"})
    await calls.create("books", {"id": "b1", "title": "B", "author": "a1"})
    await api.delete(_ctx(svc_app, site), "authors", "a1", cause="release:r9")
    deleted = {p["collection"]: p for p in recorder.named("items.delete")}
    assert deleted["authors"]["causedBy"] == "release:r9" and deleted["books"]["causedBy"] == "release:r9"
    assert deleted["books"]["cause"]["collection"] == "authors"
    assert (await calls.list("books"))["data"] == []


def _log_articles(svc_app, site, seen):
    """A filter on ``items.create`` that writes a log item in the same transaction."""
    async def log(event, payload, ctx):
        if payload["collection"] != "articles":
            return None
        seen.append(ctx.uow is not None)
        actor = api.context(ctx.kernel, ctx.site_id, ADMIN, ctx.request_id)
        await api.create(actor, "logs", {"article": payload["id"]}, uow=ctx.uow, cause=f"article:{payload['id']}")
        return None

    return svc_app.kernel.bus.on_filter("items.create", log)


async def test_a_filter_writes_in_the_transaction_it_filters(calls: Calls, svc_app, site):
    await calls.collection("articles", {"title": "string"})
    await calls.collection("logs", {"article": "string"})
    seen: list[bool] = []
    off = _log_articles(svc_app, site, seen)
    try:
        await calls.create("articles", {"id": "a1", "title": "x"})
        await calls.create("articles", [{"id": "a2"}, {"id": "a3"}])
    finally:
        off()
    assert seen == [True, True, True]
    logs = (await calls.list("logs", sort="article"))["data"]
    assert [entry["article"] for entry in logs] == ["a1", "a2", "a3"]
    # The log item is a write of its own: its cause, its update path.
    await api.update(_ctx(svc_app, site), "logs", logs[0]["id"], {"article": "a1!"})
    [update, _] = await calls.ok("get", f"/items/logs/{logs[0]['id']}/revisions")
    assert update["delta"] == {"article": {"from": "a1", "to": "a1!"}}


async def test_a_veto_later_in_the_request_rolls_back_the_filters_writes(calls: Calls, svc_app, site):
    await calls.collection("articles", {"title": "string"})
    await calls.collection("logs", {"article": "string"})

    def veto(event, payload, ctx):
        if payload["after"].get("title") == "veto":
            raise ApiError.validation("vetoed", path=["title"])

    seen: list[bool] = []
    off = [_log_articles(svc_app, site, seen), svc_app.kernel.bus.on_filter("articles.items.create", veto, 50_000)]
    try:
        await calls.err("post", "/items/articles", 400, "VALIDATION_FAILED", json={"id": "a1", "title": "veto"})
        await calls.err("post", "/items/articles", 400, "VALIDATION_FAILED",
                        json=[{"id": "a2", "title": "ok"}, {"id": "a3", "title": "veto"}])
        await calls.create("articles", {"id": "a4", "title": "kept"})
    finally:
        for undo in off:
            undo()
    assert seen == [True, True, True, True]
    assert [a["id"] for a in (await calls.list("articles"))["data"]] == ["a4"]
    assert [entry["article"] for entry in (await calls.list("logs"))["data"]] == ["a4"]


async def test_rest_reads_take_the_same_options(calls: Calls, svc_app, site):
    await calls.collection("notes", {"title": "string", "translations": "json"})
    await calls.create("notes", {"id": "a", "title": "one", "translations": {"de": {"title": "Eins"}}})
    ctx = _ctx(svc_app, site)
    rest = await calls.get("notes", "a", headers={"X-Svc-Locale": "de"})
    assert rest == await api.read(ctx, "notes", "a", locale="de")
    assert rest["title"] == "Eins"
    items, meta = await api.read_collection(ctx, "notes", options=api.read_options(locale="de"))
    assert [i["title"] for i in items] == ["Eins"] and meta == {"total": 1, "limit": 25, "offset": 0}
    hits, _ = await api.search_items(ctx, "one")
    assert [h["id"] for h in hits] == ["a"]


async def test_a_release_pins_writes_as_its_holder_and_reads_revisions(calls: Calls, svc_app, site):
    await calls.collection("notes", {"title": "string"})
    ctx = _ctx(svc_app, site)
    await api.create(ctx, "notes", {"id": "a", "title": "one"})
    await api.update(ctx, "notes", "a", {"title": "two"})
    pin = await api.pin_field(ctx, "notes", "a", "title", holder=("release", "r1"), reason="release r1")
    assert pin["pinnedBy"] == {"kind": "release", "id": "r1"}
    assert (await _raises(api.update(ctx, "notes", "a", {"title": "x"}))).status == 409
    assert (await _raises(api.update(ctx, "notes", "a", {"title": "x"}, cause="release:r2"))).status == 409
    await calls.err("patch", "/items/notes/a", 409, "CONFLICT", json={"title": "x"})
    page, meta = await api.list_revisions(ctx, "notes", "a")
    assert [r["kind"] for r in page] == ["update", "create"] and meta["total"] == 2
    async with ctx.unit_of_work() as uow:
        await api.update(ctx, "notes", "a", {"title": "published"}, uow=uow, cause="release:r1")
        pinned = await api.pinnable_revision(ctx, "notes", "a", page[1]["id"], uow=uow)
        assert pinned["restore"] == {"title": "one"}  # against the uncommitted "published"
    assert (await api.get_revision(ctx, "notes", "a", page[0]["id"]))["data"]["title"] == "two"
    assert (await api.list_revisions(ctx, "notes", "a"))[0][0]["causedBy"] == "release:r1"
    for bad in (("nobody", "x"), ("release", ""), "release:r1"):
        assert (await _raises(api.pin_field(ctx, "notes", "a", "title", holder=bad))).status == 400
