"""A member whose read rule has row conditions hears only of items it may read (items_api.LiveReach),
over a real socket: no frame for a hidden item's create, update or delete; an item leaving its
reach is told once; a rule withdrawn stops the events; frames never name a field. Each check
writes the hidden item first and a visible one after it: the next frame must be the visible
one's (frames of one site keep their order), so nothing waits on a silence."""

from __future__ import annotations

from kernel.testing import Calls
from plugin_tests.realtime.helpers import connect, frame, subscribe, ticket


async def test_a_conditional_reader_hears_only_of_items_it_may_read(live_server, svc_app, calls, site, make_member):
    server = await live_server(svc_app)
    await calls.collection("posts", {"title": "string", "secret": "string", "published": "boolean"})
    await calls.collection("private", {"title": "string"})
    member = await make_member(site, "subscriber")
    policy = await calls.grant([{"collection": "posts", "action": "read", "fields": ["title"],
                                 "conditions": {"published": {"_eq": True}}}], {"userId": member.id})
    mine = Calls(calls.client, member.headers)
    # A subscriber gets no studio ticket, and an audience ticket covering what it may read.
    await mine.err("post", "/realtime/ticket", 403, "PERMISSION_DENIED")
    async with connect(server, await ticket(mine, "audience-ticket")) as ws:
        assert (await subscribe(ws, "private"))["code"] == "SUBSCRIBE_FORBIDDEN"
        assert await subscribe(ws, "posts") == {"type": "subscribed", "collection": "posts"}

        await calls.create("posts", {"id": "hidden", "title": "draft words", "secret": "s", "published": False})
        await calls.create("posts", {"id": "shown", "title": "public", "secret": "s", "published": True})
        got = await frame(ws)
        assert got == {"type": "event", "collection": "posts", "action": "create", "itemId": "shown", "payload": None}

        await calls.ok("patch", "/items/posts/hidden", json={"secret": "changed"})
        await calls.ok("patch", "/items/posts/shown", json={"secret": "changed"})
        assert (await frame(ws))["itemId"] == "shown"  # the hidden field's change: a bare signal

        # Leaving its reach is told once (it knew the item); after that the item is hidden.
        await calls.ok("patch", "/items/posts/shown", json={"published": False})
        assert (await frame(ws))["itemId"] == "shown"
        await calls.ok("patch", "/items/posts/shown", json={"title": "now hidden"})
        await calls.create("posts", {"id": "second", "title": "b", "published": True})
        assert (await frame(ws))["itemId"] == "second"

        # Deletes: of a hidden item, nothing; of one it was told about, the signal.
        await calls.ok("delete", "/items/posts/hidden", status=204)
        await calls.ok("delete", "/items/posts/shown", status=204)
        await calls.ok("delete", "/items/posts/second", status=204)
        assert await frame(ws) == {"type": "event", "collection": "posts", "action": "delete", "itemId": "second",
                                   "payload": None}

        # The rule withdrawn while the socket is open: no more events (a notification still comes).
        await calls.ok("delete", f"/policies/{policy}", status=204)
        await calls.create("posts", {"id": "late", "title": "c", "published": True})
        await calls.ok("post", "/push/test", status=202)
        assert (await frame(ws))["type"] == "notification"


async def test_an_editorial_transition_reaches_the_items_readers(live_server, svc_app, calls, site, make_member):
    """Submit, approve and reject change no field of the item, yet a review panel or a list's
    badges show them: each is a ``review`` event on the item, for those who may read it."""
    server = await live_server(svc_app)
    await calls.collection("articles", {"title": "string", "published": "boolean"}, editorialWorkflow=True)
    reviewer = await make_member(site, "admin")
    reader = await make_member(site, "subscriber")
    await calls.grant([{"collection": "articles", "action": "read", "fields": ["title"],
                        "conditions": {"published": {"_eq": True}}}], {"userId": reader.id})
    async with connect(server, await ticket(Calls(calls.client, reader.headers), "audience-ticket")) as ws, \
            connect(server, await ticket(calls)) as admin_ws:
        await subscribe(ws, "articles")
        await subscribe(admin_ws, "articles", {"action": {"_eq": "review"}})
        hidden = str((await calls.create("articles", {"title": "h", "published": False}))["id"])
        shown = str((await calls.create("articles", {"title": "s", "published": True}))["id"])
        assert (await frame(ws))["itemId"] == shown  # not the hidden one's create
        for item in (hidden, shown):
            await calls.ok("post", f"/editorial/articles/{item}/submit-review", json={"reviewerId": reviewer.id})
        assert await frame(admin_ws) == {"type": "event", "collection": "articles", "action": "review",
                                         "itemId": hidden, "payload": None}
        assert (await frame(admin_ws))["itemId"] == shown
        assert await frame(ws) == {"type": "event", "collection": "articles", "action": "review", "itemId": shown,
                                   "payload": None}  # the hidden item's transition never reached it
        await Calls(calls.client, reviewer.headers).ok("post", f"/editorial/articles/{shown}/reject",
                                                        json={"reason": "no"})
        assert ((await frame(admin_ws))["action"], (await frame(ws))["action"]) == ("review", "review")
