"""GET /cdc/events: paging with cursors, filters, bounds, expiry, long polls, isolation, guard.

The tests share the module's app (kernel/testing/shared.py, the change feed's settings), each in
new sites of its own; the two that prune the whole event log or count every publication of the
app take an app of their own (``own``)."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
import pytest_asyncio

from kernel.events import COMMITTED_TOPIC
from kernel.testing import Calls, shared_site_with
from kernel.testing import shared as testing_shared
from plugin_tests.cdc.conftest import CDC_ENV
from plugins.cdc import feed

EVENTS = "/cdc/events"

svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_site(svc_shared_db, svc_template_db, tmp_path_factory):
    async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory,
                                env={**CDC_ENV, **testing_shared.NO_AUTH_LIMIT}) as shared:
        yield shared


@pytest_asyncio.fixture
async def own(make_app):
    """An app of the test's own, a site of it and calls as its admin there: ``(app, site, calls)``."""
    return await testing_shared.app_with_site(make_app, env=CDC_ENV)


async def page(calls: Calls, **params):
    body = await calls.ok("get", EVENTS, full=True, params=params)
    assert set(body["meta"]) == {"nextCursor", "hasMore"} and body["meta"]["nextCursor"]
    return body["data"], body["meta"]


async def posts(calls: Calls, *titles: str) -> list[str]:
    if not (await calls.call("get", "/collections/posts")).status_code == 200:
        await calls.collection("posts", {"title": "string", "secret": "string"})
    return [(await calls.create("posts", {"title": t, "secret": f"value-{t}"}))["id"] for t in titles]


async def test_pages_through_writes_with_cursors(calls):
    ids = await posts(calls, "a", "b", "c", "d", "e")
    data, meta = await page(calls)
    types = [e["type"] for e in data]
    assert types[:3] == ["collections.create", "fields.create", "fields.create"]
    assert [e["itemId"] for e in data if e["type"] == "items.create"] == ids
    assert meta["hasMore"] is False

    seen, cursor, rounds = [], None, 0
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        chunk, meta = await page(calls, **params)
        assert len(chunk) <= 2
        seen.extend(chunk)
        cursor, rounds = meta["nextCursor"], rounds + 1
        if not meta["hasMore"]:
            break
    assert seen == data and rounds == 4  # 8 events in pages of 2; the last one knows it is last

    tail, meta = await page(calls, cursor=cursor)
    assert tail == [] and meta == {"nextCursor": cursor, "hasMore": False}  # never null
    await calls.ok("patch", f"/items/posts/{ids[0]}", json={"title": "A"})
    await calls.ok("delete", f"/items/posts/{ids[1]}", status=204)
    more, _ = await page(calls, cursor=cursor)
    assert [(e["type"], e.get("itemId")) for e in more] == [("items.update", ids[0]), ("items.delete", ids[1])]
    assert more[0]["fields"] == ["title"]


async def test_events_carry_no_values(calls):
    await posts(calls, "hello")
    data, _ = await page(calls)
    text = repr(data)
    assert "value-hello" not in text and "'hello'" not in text
    item = next(e for e in data if e["type"] == "items.create")
    assert set(item) <= {"id", "type", "collection", "itemId", "fields", "occurredAt"}


async def test_filters_by_collection_and_operation(calls):
    [post] = await posts(calls, "p")
    await calls.collection("tags", {"label": "string"})
    tag = (await calls.create("tags", {"label": "t"}))["id"]
    await calls.ok("patch", f"/items/posts/{post}", json={"title": "q"})

    data, _ = await page(calls, collections="tags")
    assert {e["collection"] for e in data} == {"tags"} and len(data) == 3
    data, _ = await page(calls, operations="update")
    assert [(e["type"], e["itemId"]) for e in data] == [("items.update", post)]
    data, _ = await page(calls, operations="create", collections="tags,posts")
    assert {e["type"] for e in data} == {"collections.create", "fields.create", "items.create"}
    data, meta = await page(calls, operations="delete")
    assert data == []
    # A filtered page's cursor moves past the events it left out.
    everything, last = await page(calls)
    assert meta["nextCursor"] == last["nextCursor"]
    data, _ = await page(calls, collections="tags", operations="create,update")
    assert [e["type"] for e in data] == ["collections.create", "fields.create", "items.create"]
    assert data[-1]["itemId"] == tag


@pytest.mark.parametrize("params, path", [
    ({"cursor": "nope"}, "cursor"), ({"cursor": ""}, "cursor"), ({"cursor": "1-2-3"}, "cursor"),
    ({"cursor": "-5"}, "cursor"),
    ({"limit": "0"}, "limit"), ({"limit": "501"}, "limit"), ({"limit": "ten"}, "limit"), ({"limit": "1.5"}, "limit"),
    ({"wait": "26"}, "wait"), ({"wait": "-1"}, "wait"), ({"wait": "nan"}, "wait"), ({"wait": "soon"}, "wait"),
    ({"operations": "create,upsert"}, "operations"), ({"operations": "create,"}, "operations"),
    ({"collections": "a,,b"}, "collections"), ({"collections": "bad name"}, "collections"),
])
async def test_bad_parameters(shared_site, params, path):
    await shared_site.calls.err("get", EVENTS, 400, "VALIDATION_FAILED", [path], params=params)


async def test_limit_bounds(calls):
    await posts(calls, *"abc")
    data, meta = await page(calls, limit=500)
    assert len(data) == 6 and meta["hasMore"] is False
    data, meta = await page(calls, limit=1)
    assert len(data) == 1 and meta["hasMore"] is True
    data, _ = await page(calls)  # the default, 100, holds them all
    assert len(data) == 6


async def test_expired_cursor_answers_410_with_the_earliest_cursor(own):
    svc_app, site, calls = own
    await posts(calls, "old")
    first, _ = await page(calls, limit=1)
    start_cursor = (await page(calls, limit=1))[1]["nextCursor"]
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=svc_app.kernel.settings.cdc_retention_days + 1)
    assert await svc_app.kernel.events.prune(now=later) > 0
    earliest = str(await svc_app.kernel.events.earliest_cursor(site))

    error = await calls.err("get", EVENTS, 410, "CURSOR_EXPIRED", params={"cursor": start_cursor})
    assert error["extensions"]["earliestCursor"] == earliest
    # The earliest cursor itself, and anything later, still reads. (Not compared with a head
    # read before the prune: on PostgreSQL the horizon may have held the last event back then.)
    data, meta = await page(calls, cursor=earliest)
    assert data == [] and meta["nextCursor"] == earliest
    await posts(calls, "new")
    data, _ = await page(calls)  # without a cursor: from the oldest retained event
    assert [e["type"] for e in data] == ["items.create"] and first[0]["type"] == "collections.create"


async def test_long_poll_returns_when_a_write_commits(calls, svc_app, monkeypatch):
    await posts(calls, "before")
    _, meta = await page(calls)
    # Only the committed-events signal can end this poll early: no periodic re-read.
    monkeypatch.setattr(feed, "RECHECK_SECONDS", 1000.0)
    topics = svc_app.kernel.topics
    waiting_before = topics.subscriber_count
    poll = asyncio.create_task(calls.call("get", EVENTS, params={"cursor": meta["nextCursor"], "wait": 25}))
    while topics.subscriber_count == waiting_before:  # the poll has subscribed and read: nothing yet
        assert not poll.done(), poll.result().text
        await asyncio.sleep(0.01)
    [made] = await posts(calls, "during")
    resp = await asyncio.wait_for(poll, 20)
    assert resp.status_code == 200, resp.text
    assert [(e["type"], e["itemId"]) for e in resp.json()["data"]] == [("items.create", made)]
    assert topics.subscriber_count == waiting_before  # the poll let go of its subscription


async def test_long_poll_ends_with_an_empty_page(own):
    svc_app, _, calls = own
    await posts(calls, "x")
    _, meta = await page(calls)
    published = svc_app.kernel.topics.stats.published
    data, after = await page(calls, cursor=meta["nextCursor"], wait=1)
    assert data == [] and after == {"nextCursor": meta["nextCursor"], "hasMore": False}
    assert svc_app.kernel.topics.stats.published == published


async def test_a_write_signals_the_committed_topic(calls, svc_app, site, site_b):
    async with svc_app.kernel.topics.subscribe(site, COMMITTED_TOPIC) as mine, \
            svc_app.kernel.topics.subscribe(site_b, COMMITTED_TOPIC) as other:
        await posts(calls, "s")
        message = await mine.get(5)
        assert message.site_id == site and message.data == {}
        assert other.pending() == 0


async def test_sites_see_only_their_own_events(calls, calls_b, site_b):
    await posts(calls, "a-only")
    mine, meta_a = await page(calls)
    assert mine
    theirs, meta_b = await page(calls_b)
    assert theirs == []
    # A's cursor in B reveals nothing of A.
    data, _ = await page(calls_b, cursor=(await page(calls, limit=1))[1]["nextCursor"])
    assert data == []
    await calls_b.collection("b_things", {"n": "integer"})
    theirs, _ = await page(calls_b)
    assert theirs and {e["collection"] for e in theirs} == {"b_things"}
    assert not {e["id"] for e in theirs} & {e["id"] for e in mine}
    again, _ = await page(calls, cursor=meta_a["nextCursor"])
    assert again == []


async def test_capability_needed_and_admin_implies_it(calls, svc_app, site, make_member):
    role = await calls.ok("post", "/roles", 201, json={"name": "Integrators"})
    member = await make_member(site, role["id"])
    as_member = Calls(svc_app.client, member.headers)
    error = await as_member.err("get", EVENTS, 403, "PERMISSION_DENIED")
    assert error["extensions"]["capability"] == "cdc:subscribe"
    # Another action on '*' does not grant it.
    policy = await calls.ok("post", "/policies", 201, json={"name": "Feed"})
    await calls.ok("post", f"/policies/{policy['id']}/attach", 201, json={"roleId": role["id"]})
    await calls.ok("post", f"/policies/{policy['id']}/permissions", 201, json={"collection": "*", "action": "read"})
    await as_member.err("get", EVENTS, 403, "PERMISSION_DENIED")
    await calls.ok("post", f"/policies/{policy['id']}/permissions", 201,
                   json={"collection": "*", "action": "cdc:subscribe"})
    await posts(calls, "p")
    data, _ = await page(as_member)
    assert any(e["type"] == "items.create" for e in data)
    site_admin = await make_member(site, "admin")
    assert await page(Calls(svc_app.client, site_admin.headers))


async def test_frontend_realm_is_refused(calls, svc_app, site, make_member):
    subscriber = await make_member(site, "subscriber")
    # Even a subscriber role holding the capability stays out.
    role_id = subscriber_role = None
    for role in await calls.ok("get", "/roles"):
        if role.get("systemKey") == "subscriber":
            subscriber_role = role
    assert subscriber_role is not None
    role_id = subscriber_role["id"]
    policy = await calls.ok("post", "/policies", 201, json={"name": "Feed for subscribers"})
    await calls.ok("post", f"/policies/{policy['id']}/attach", 201, json={"roleId": role_id})
    await calls.ok("post", f"/policies/{policy['id']}/permissions", 201,
                   json={"collection": "*", "action": "cdc:subscribe"})
    error = await Calls(svc_app.client, subscriber.headers).err("get", EVENTS, 403, "PERMISSION_DENIED")
    assert "Frontend" in error["message"]


async def test_anonymous_needs_a_token(anon_calls):
    await anon_calls.err("get", EVENTS, 401, "UNAUTHENTICATED")


async def test_documented_in_openapi(client):
    paths = (await client.get("/api/v1/openapi.json")).json()["paths"]
    operation = paths["/api/v1/cdc/events"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"cursor", "collections", "operations", "limit", "wait"}


async def test_tokens_carry_the_realm_claim(calls, svc_app, site, make_member):
    import jwt

    def realm(token: str) -> str:
        return jwt.decode(token, options={"verify_signature": False})["realm"]

    subscriber = await make_member(site, "subscriber")
    editor_role = await calls.ok("post", "/roles", 201, json={"name": "Editors"})
    editor = await make_member(site, editor_role["id"])
    assert realm(subscriber.token) == "frontend" and realm(editor.token) == "studio"
    refreshed = await svc_app.client.post("/api/v1/auth/login", headers={"X-Svc-Site": site},
                                          json={"email": subscriber.email, "password": subscriber.password})
    body = refreshed.json()["data"]
    again = await svc_app.client.post("/api/v1/auth/refresh", headers={"X-Svc-Site": site},
                                      json={"refreshToken": body["refreshToken"]})
    assert again.status_code == 200, again.text
    assert realm(again.json()["data"]["token"]) == "frontend"
