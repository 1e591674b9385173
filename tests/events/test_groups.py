"""Consumer groups: consumers that exist per site at run time, each member with its own
checkpoint, order and retries, so one failing member never holds another back."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kernel.events import START, ConsumerGroup, EventConsumer, GroupMember
from kernel.hooks.hookspecs import hookimpl
from tests.events.test_dispatch import FAST, write


class Hooks:
    """A plugin whose group ``hooks`` has the members listed in ``members[site]``; a member in
    ``failing`` raises, and its retry waits ``delay`` seconds."""

    def __init__(self) -> None:
        self.members: dict[str, list[GroupMember]] = {}
        self.failing: set[str] = set()
        self.delay = 0.01
        self.got: dict[str, list[int]] = {}
        self.attempts: dict[str, list[int]] = {}
        self.changed = asyncio.Event()

    @hookimpl
    def register_event_consumers(self, kernel: Any) -> list[Any]:
        async def members(kernel: Any, site_id: str) -> list[GroupMember]:
            return list(self.members.get(site_id, []))

        async def handle(kernel: Any, site_id: str, key: str, events: list[Any], attempt: int) -> None:
            self.attempts.setdefault(key, []).append(attempt)
            self.changed.set()
            if key in self.failing:
                raise RuntimeError(f"{key} is down")
            self.got.setdefault(key, []).extend(e.id for e in events)

        return [ConsumerGroup("hooks", members, handle, retry_delay=lambda attempts, exc: self.delay)]

    async def until(self, check: Any) -> None:
        async def wait() -> None:
            while not check():
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(wait(), 30)


async def _app(make_app, plugin: Hooks) -> Any:
    app = await make_app(plugins=[plugin], **FAST)
    token = await app.login()
    for site in ("site-a", "site-b"):
        resp = await app.client.post("/api/v1/sites", json={"id": site},
                                     headers={"Authorization": f"Bearer {token}"})
        assert resp.status_code == 201
    return app


async def test_members_deliver_independently_from_their_own_checkpoints(make_app):
    plugin = Hooks()
    app = await _app(make_app, plugin)
    kernel = app.kernel
    await write(kernel, "site-a", 2)
    before = [e.id for e in (await kernel.events.read_after("site-a")).events]
    # A member created now starts at the head: it never sees the events before it.
    async with kernel.db.begin() as conn:
        for key in ("ok", "down", "posts-only"):
            await kernel.events.set_checkpoint(conn, "site-a", f"hooks:{key}", await kernel.events.head("site-a"))
    plugin.members["site-a"] = [GroupMember("ok"), GroupMember("down"),
                                GroupMember("posts-only", types=["items.update"])]
    plugin.failing.add("down")
    plugin.delay = 3600.0
    await write(kernel, "site-a", 3)
    await write(kernel, "site-a", 1, "items.update")
    await write(kernel, "site-b", 2)  # site B has no members: nothing of it reaches A's
    after = [e.id for e in (await kernel.events.read_after("site-a")).events if e.id not in before]
    await plugin.until(lambda: plugin.got.get("ok") == after and plugin.got.get("posts-only") == after[-1:])
    # "down" is delivered beside the others: its first attempt may end after theirs.
    await kernel.events.dispatcher.idle()
    assert plugin.attempts["down"] == [1]  # failed once; its retry waits an hour, the others went on
    state = await kernel.events.checkpoint("site-a", "hooks:down")
    assert state["attempts"] == 1 and state["lastError"] == "RuntimeError: down is down"

    # An on-demand dispatch ends the wait: attempt 2 now, and it gets the whole backlog in order.
    plugin.failing.clear()
    assert await kernel.events.dispatch_now("site-a", "hooks:down") is True
    await plugin.until(lambda: plugin.got.get("down") == after)
    assert plugin.attempts["down"] == [1, 2]
    assert await kernel.events.dispatch_now("site-a", "hooks:nobody") is False


async def test_a_removed_member_gets_nothing_more_and_a_rewind_replays(make_app):
    plugin = Hooks()
    app = await _app(make_app, plugin)
    kernel = app.kernel
    async with kernel.db.begin() as conn:  # made with the member, here at the start of the log
        await kernel.events.set_checkpoint(conn, "site-a", "hooks:one", START)
    plugin.members["site-a"] = [GroupMember("one")]
    await write(kernel, "site-a", 2)
    first = [e.id for e in (await kernel.events.read_after("site-a")).events]
    await plugin.until(lambda: plugin.got.get("one") == first)
    await kernel.events.dispatcher.idle()

    plugin.members["site-a"] = []
    await write(kernel, "site-a", 1)
    await kernel.events.dispatcher.idle()
    assert plugin.got["one"] == first

    # Back, rewound to the start: everything again, in order (at least once, never skipping).
    async with kernel.db.begin() as conn:
        await kernel.events.set_checkpoint(conn, "site-a", "hooks:one", (await kernel.events.read_after("site-a")).events[0].cursor)
    plugin.members["site-a"] = [GroupMember("one")]
    everything = [e.id for e in (await kernel.events.read_after("site-a")).events]
    kernel.events.dispatcher.wake("site-a")
    await plugin.until(lambda: plugin.got["one"] == first + everything[1:])
    async with kernel.db.begin() as conn:
        await kernel.events.remove_checkpoint(conn, "site-a", "hooks:one")
    assert await kernel.events.checkpoint("site-a", "hooks:one") is None


async def test_a_listed_member_without_a_checkpoint_is_taken_as_deleted(make_app):
    """A member still listed after its checkpoint was removed (a dispatcher that listed it just
    before its plugin deleted it) gets nothing, and no claim makes its checkpoint again."""
    plugin = Hooks()
    app = await _app(make_app, plugin)
    kernel = app.kernel
    dispatcher = kernel.events.dispatcher
    async with kernel.db.begin() as conn:
        for key in ("kept", "gone"):
            await kernel.events.set_checkpoint(conn, "site-a", f"hooks:{key}", await kernel.events.head("site-a"))
    plugin.members["site-a"] = [GroupMember("kept"), GroupMember("gone")]
    await write(kernel, "site-a", 1)
    await plugin.until(lambda: "kept" in plugin.got and "gone" in plugin.got)
    await dispatcher.idle()
    assert "hooks:gone" in dispatcher._members

    async with kernel.db.begin() as conn:  # deleted; the listing (and the dispatcher) still has it
        await kernel.events.remove_checkpoint(conn, "site-a", "hooks:gone")
    before = list(plugin.got["gone"])
    await write(kernel, "site-a", 2)
    await plugin.until(lambda: len(plugin.got["kept"]) == 3)
    await dispatcher.idle()
    assert plugin.got["gone"] == before
    assert await kernel.events.checkpoint("site-a", "hooks:gone") is None
    assert "hooks:gone" not in dispatcher._members and not dispatcher._timers  # forgotten: no retry
    # A listing that still has it runs it again, and it is forgotten again: never re-created.
    dispatcher.wake("site-a")
    await dispatcher.idle()
    assert await kernel.events.checkpoint("site-a", "hooks:gone") is None and plugin.got["gone"] == before


async def test_hanging_members_give_their_places_up_to_a_quick_one(make_app):
    """More hanging endpoints than the dispatcher runs at once (in another site): each gives
    its place in the quick lane up once it runs past ``slow_after``, so the quick member of
    site A is still delivered while every one of them hangs."""
    from kernel.events.dispatch import CONCURRENCY

    plugin = Hooks()
    hang = asyncio.Event()  # set only at the end: until then every slow member's delivery hangs
    app = await _app(make_app, plugin)
    kernel = app.kernel
    dispatcher = kernel.events.dispatcher
    dispatcher.slow_after = 0.05
    dispatcher.per_site = 0  # the lanes alone (the per-site gate would hold site B to a few at once)
    slow = [f"hang-{i}" for i in range(CONCURRENCY + 2)]
    original = dispatcher.groups["hooks"].handle

    started: list[str] = []

    async def handle(kernel: Any, site_id: str, key: str, events: list[Any], attempt: int) -> None:
        if key.startswith("hang-"):
            started.append(key)
            plugin.changed.set()
            await hang.wait()
        await original(kernel, site_id, key, events, attempt)  # records the attempt and the events

    dispatcher.groups["hooks"] = ConsumerGroup("hooks", dispatcher.groups["hooks"].members, handle)
    async with kernel.db.begin() as conn:
        for site, key in [("site-b", k) for k in slow] + [("site-a", "quick")]:
            await kernel.events.set_checkpoint(conn, site, f"hooks:{key}", await kernel.events.head(site))
    plugin.members = {"site-b": [GroupMember(k) for k in slow], "site-a": [GroupMember("quick")]}
    try:
        await write(kernel, "site-b", 1)
        await plugin.until(lambda: len(started) == len(slow))  # every one started: none waits for a place
        await write(kernel, "site-a", 2)
        expected = [e.id for e in (await kernel.events.read_after("site-a")).events]
        await plugin.until(lambda: plugin.got.get("quick") == expected)
        assert not hang.is_set() and not any(k in plugin.got for k in slow)  # all still hanging
        # All of them started although only CONCURRENCY fit the quick lane, and the quick one got
        # a place too: at least that many gave theirs up.
        assert dispatcher.demoted >= len(slow) - CONCURRENCY + 1
    finally:
        hang.set()
    await plugin.until(lambda: all(k in plugin.got for k in slow))
    assert sorted(started) == sorted(slow)  # slow, never failed: each delivered once
    assert all(plugin.attempts[k] == [1] for k in slow)


async def test_group_names_cannot_clash_with_consumers(make_app):
    class Clash:
        @hookimpl
        def register_event_consumers(self, kernel: Any) -> list[Any]:
            async def members(kernel: Any, site_id: str) -> list[GroupMember]:
                return []

            async def handle(*args: Any) -> None:
                return None

            return [ConsumerGroup("hooks", members, handle), EventConsumer("hooks:x", handle)]

    with pytest.raises(ValueError, match="registered twice"):
        await make_app(plugins=[Clash()], **FAST)
    with pytest.raises(ValueError, match="without ':'"):
        ConsumerGroup("a:b", lambda k, s: [], lambda *a: None)
