"""Notifications: api.notify stores, broadcasts to every session of the site, studio and audience
tickets alike (never another site's), lists, marks handled and prunes."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import update

from kernel import ApiError
from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugin_tests.realtime.helpers import connect, frame, no_frame, ticket
from plugins.realtime import api
from plugins.realtime.tables import notifications as notifications_table

# Every test writes and reads in a site of its own: they share the module's app and its one
# server, each in a new site (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b
server = testing_shared.shared_live_server


async def test_notify_reaches_every_session_of_the_site_only(server, svc_app, calls, calls_b, site, site_b,
                                                             make_member):
    subscriber = await make_member(site, "subscriber")
    audience = Calls(calls.client, subscriber.headers)
    audience_b = Calls(calls.client, (await make_member(site_b, "subscriber")).headers)
    async with connect(server, await ticket(calls)) as one, connect(server, await ticket(calls)) as two, \
            connect(server, await ticket(calls_b)) as other, \
            connect(server, await ticket(audience_b, "audience-ticket")) as other_end_user, \
            connect(server, await ticket(audience, "audience-ticket")) as end_user, \
            connect(server, await ticket(audience, "audience-ticket")) as end_user_again:
        sockets = (one, two, other, other_end_user, end_user, end_user_again)
        for ws in sockets:  # every socket is set up before the notification
            await ws.send_json({"type": "ping"})
            assert await frame(ws) == {"type": "pong"}
        # No subscription is needed: the frame is not collection-scoped.
        note = await api.notify(svc_app.kernel, site, kind="release.published", title="Spring release is live",
                                severity="success", body="12 items", deep_link="/releases/7", entity_id="7")
        assert set(note) == {"id", "kind", "severity", "title", "body", "deepLink", "entityId", "ts"}
        for ws in (one, two, end_user, end_user_again):  # studio and audience sessions alike
            assert await frame(ws) == {"type": "notification", "notification": note}
        # A notification of the other site reaches its sessions, of both kinds, and only them;
        # it comes after the first, so had the first reached them it would be the frame they read.
        note_b = await api.notify(svc_app.kernel, site_b, kind="flow", title="Other site")
        for ws in (other, other_end_user):
            assert await frame(ws) == {"type": "notification", "notification": note_b}
        for ws in (one, end_user):
            await no_frame(ws)
    listed = await calls.ok("get", "/notifications", full=True)
    assert listed["data"] == [{**note, "handledAt": None}] and listed["meta"]["total"] == 1
    listed_b = await calls_b.ok("get", "/notifications", full=True)
    assert listed_b["data"] == [{**note_b, "handledAt": None}] and listed_b["meta"]["total"] == 1


async def test_notify_in_a_unit_of_work_sends_nothing_on_rollback(svc_app, site, calls):
    kernel = svc_app.kernel
    async with kernel.topics.subscribe(site, "realtime.*") as sub:
        with pytest.raises(RuntimeError):
            async with kernel.unit_of_work(site) as uow:
                await api.notify(kernel, site, kind="k", title="t", uow=uow)
                raise RuntimeError("veto")
        await api.notify(kernel, site, kind="k", title="kept")
        got = await sub.get(timeout=5)
        assert got.data["title"] == "kept" and sub.pending() == 0
    assert [n["title"] for n in await calls.ok("get", "/notifications")] == ["kept"]


@pytest.mark.parametrize(("fields", "path"), [
    ({"kind": "", "title": "t"}, ["kind"]),
    ({"kind": "k", "title": None}, ["title"]),
    ({"kind": "k", "title": "t" * 201}, ["title"]),
    ({"kind": "k", "title": "t", "severity": "loud"}, ["severity"]),
    ({"kind": "k", "title": "t", "body": 5}, ["body"]),
    ({"kind": "k", "title": "t", "deep_link": "x\x00"}, ["deepLink"]),
])
async def test_notify_checks_its_fields(svc_app, site, fields, path):
    with pytest.raises(ApiError) as err:
        await api.notify(svc_app.kernel, site, **fields)
    assert err.value.code == "VALIDATION_FAILED" and list(err.value.details[0].path) == path


async def test_handled_notifications_and_pruning(svc_app, site, calls, calls_b):
    kernel = svc_app.kernel
    old = await api.notify(kernel, site, kind="k", title="old")
    new = await api.notify(kernel, site, kind="k", title="new")
    done = await calls.ok("patch", f"/notifications/{old['id']}", json={"handled": True})
    assert done["handledAt"]
    assert [n["id"] for n in await calls.ok("get", "/notifications", params={"handled": "true"})] == [old["id"]]
    assert [n["id"] for n in await calls.ok("get", "/notifications", params={"handled": "false"})] == [new["id"]]
    # Cross-tenant: site B neither sees nor marks site A's notification.
    await calls_b.err("patch", f"/notifications/{old['id']}", 404, "RECORD_NOT_FOUND", json={"handled": False})
    assert await api.prune_handled(kernel, site, dt.timedelta(days=1)) == 0
    async with kernel.db.begin() as conn:
        await conn.execute(update(notifications_table).where(notifications_table.c.id == old["id"])
                           .values(handled_at=dt.datetime.now(dt.UTC) - dt.timedelta(days=3)))
    assert await api.prune_handled(kernel, site, dt.timedelta(days=1)) == 1
    assert [n["id"] for n in await calls.ok("get", "/notifications")] == [new["id"]]


async def test_notification_routes_refuse_bad_input(svc_app, calls, anon_calls, make_member, site):
    note = await api.notify(svc_app.kernel, site, kind="k", title="t")
    for body in ({}, {"handled": "yes"}, {"handled": True, "x": 1}, [True]):
        await calls.err("patch", f"/notifications/{note['id']}", 400, "VALIDATION_FAILED", json=body)
    await calls.err("patch", f"/notifications/{'x' * 80}", 404, "RECORD_NOT_FOUND", json={"handled": True})
    await calls.err("get", "/notifications", 400, "VALIDATION_FAILED", params={"handled": "maybe"})
    await calls.err("get", "/notifications", 400, "VALIDATION_FAILED", params={"limit": "0"})
    await anon_calls.err("get", "/notifications", 401, "UNAUTHENTICATED")
    subscriber = await make_member(site, "subscriber")
    # A subscriber reads the list (the frames reach it anyway) but marks nothing handled for the site.
    as_subscriber = Calls(calls.client, subscriber.headers)
    assert [n["id"] for n in await as_subscriber.ok("get", "/notifications")] == [note["id"]]
    await as_subscriber.err("patch", f"/notifications/{note['id']}", 403, "PERMISSION_DENIED", json={"handled": True})


async def test_a_notification_for_one_user_reaches_only_that_user(server, svc_app, calls, site, site_b,
                                                                   make_member):
    """``recipient``: its frame goes to that user's sessions alone (never another member's, an end
    user's, nor the same user's session in another site), it is listed and handled by that user
    alone, and the frame keeps the API's shape (no recipient in it)."""
    kernel = svc_app.kernel
    editor = await calls.ok("post", "/roles", status=201, json={"name": "Editor"})
    meant = await make_member([site, site_b], "admin")
    other = await make_member(site, editor["id"])
    end_user = await make_member(site, "subscriber")
    as_meant, as_other = Calls(calls.client, meant.headers), Calls(calls.client, other.headers)
    meant_in_b = Calls(calls.client, {"Authorization": f"Bearer {await svc_app.login(meant.email, meant.password, site=site_b)}",
                                      "X-Svc-Site": site_b})
    async with connect(server, await ticket(as_meant)) as mine, \
            connect(server, await ticket(as_meant, "audience-ticket")) as mine_too, \
            connect(server, await ticket(as_other)) as theirs, \
            connect(server, await ticket(Calls(calls.client, end_user.headers), "audience-ticket")) as public, \
            connect(server, await ticket(meant_in_b)) as mine_in_b:
        for ws in (mine, mine_too, theirs, public, mine_in_b):
            await ws.send_json({"type": "ping"})
            assert await frame(ws) == {"type": "pong"}
        personal = await api.notify(kernel, site, kind="ai.approval.requested", title="Approve?", severity="warning",
                                    recipient=meant.id)
        assert set(personal) == {"id", "kind", "severity", "title", "body", "deepLink", "entityId", "ts"}
        for ws in (mine, mine_too):
            assert await frame(ws) == {"type": "notification", "notification": personal}
        # The site's next notification is the first frame everyone else reads: the personal one
        # never reached them.
        everyone = await api.notify(kernel, site, kind="flow", title="For the whole site")
        for ws in (mine, mine_too, theirs, public):
            assert await frame(ws) == {"type": "notification", "notification": everyone}
        in_b = await api.notify(kernel, site_b, kind="flow", title="Site B", recipient=meant.id)
        assert await frame(mine_in_b) == {"type": "notification", "notification": in_b}
    assert [n["id"] for n in await as_meant.ok("get", "/notifications")] == [everyone["id"], personal["id"]]
    listed = await as_other.ok("get", "/notifications", full=True)
    assert [n["id"] for n in listed["data"]] == [everyone["id"]] and listed["meta"]["total"] == 1
    # The instance admin is no recipient either: only the site's own notifications.
    assert [n["id"] for n in await calls.ok("get", "/notifications")] == [everyone["id"]]
    # Another user cannot mark it handled (as unknown to them as another site's), its recipient can.
    await as_other.err("patch", f"/notifications/{personal['id']}", 404, "RECORD_NOT_FOUND", json={"handled": True})
    await meant_in_b.err("patch", f"/notifications/{personal['id']}", 404, "RECORD_NOT_FOUND",
                         json={"handled": True})
    done = await as_meant.ok("patch", f"/notifications/{personal['id']}", json={"handled": True})
    assert done["id"] == personal["id"] and done["handledAt"] is not None
    assert [n["id"] for n in await meant_in_b.ok("get", "/notifications")] == [in_b["id"]]


async def test_a_recipient_must_be_a_user_id(svc_app, site):
    with pytest.raises(ValueError, match="recipient"):
        await api.notify(svc_app.kernel, site, kind="k", title="t", recipient="user:../x")
