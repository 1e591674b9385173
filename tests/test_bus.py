"""The bus: filters veto or replace, actions run after commit, unregister, Redis fan-out."""

from __future__ import annotations

import asyncio

import pytest

from kernel import ApiError
from kernel.messaging.bus import Bus, EventContext


def ctx() -> EventContext:
    return EventContext(site_id="s1")


async def test_filters_run_in_priority_order_and_replace_payload():
    bus = Bus()
    bus.on_filter("items.create", lambda e, p, c: {**p, "b": p["a"] + 1}, priority=20)
    bus.on_filter("items.create", lambda e, p, c: {**p, "a": 10}, priority=10)
    assert await bus.filter("items.create", {"a": 1}, ctx()) == {"a": 10, "b": 11}


async def test_filter_may_veto():
    bus = Bus()

    def veto(event, payload, c):
        raise ApiError.validation("no")

    bus.on_filter("items.create", veto)
    with pytest.raises(ApiError):
        await bus.filter("items.create", {}, ctx())


async def test_unregister_handles():
    bus = Bus()
    seen = []
    off = bus.on_action("x", lambda e, p, c: seen.append(p))
    await bus.action("x", 1, ctx())
    off()
    off()  # twice is harmless
    await bus.action("x", 2, ctx())
    assert seen == [1]


async def test_patterns_and_failing_actions_do_not_break_others(caplog):
    bus = Bus()
    seen = []

    def broken(e, p, c):
        raise RuntimeError("handler bug")

    bus.on_action("*.items.create", broken)
    bus.on_action("*.items.create", lambda e, p, c: seen.append(e))
    bus.on_action("*", lambda e, p, c: seen.append("all:" + e))
    await bus.action("articles.items.create", {}, ctx())
    assert seen == ["articles.items.create", "all:articles.items.create"]
    assert "handler bug" in caplog.text


async def test_async_handlers_are_awaited():
    bus = Bus()
    seen = []

    async def handler(e, p, c):
        await asyncio.sleep(0)
        seen.append(p)

    bus.on_action("y", handler)
    await bus.action("y", "ok", ctx())
    assert seen == ["ok"]


async def test_actions_released_only_after_commit(svc_app):
    kernel = svc_app.kernel
    seen = []
    off = kernel.bus.on_action("test.event", lambda e, p, c: seen.append(p))
    try:
        async with kernel.unit_of_work("default") as uow:
            uow.action("test.event", "committed")
            assert seen == []
        assert seen == ["committed"]
        with pytest.raises(RuntimeError):
            async with kernel.unit_of_work("default") as uow:
                uow.action("test.event", "rolled back")
                raise RuntimeError("fail")
        assert seen == ["committed"]
    finally:
        off()


async def test_filters_get_the_unit_of_work_and_a_view_acts_in_it(svc_app):
    kernel = svc_app.kernel
    seen: list[tuple[object, object, object]] = []
    done: list[object] = []

    def filt(event, payload, ctx):
        seen.append((ctx.uow, ctx.principal, ctx.cause))

    offs = [kernel.bus.on_filter("test.filtered", filt), kernel.bus.on_action("test.done", lambda e, p, c: done.append(p))]
    try:
        async with kernel.unit_of_work("default", "request-principal") as uow:
            await uow.filter("test.filtered", {})
            view = uow.acting("flow-principal", cause="flow-run:1")
            await view.filter("test.filtered", {})
            view.action("test.done", "from the view")
            assert view.conn is uow.conn and uow.principal == "request-principal" and uow.cause is None
            assert uow.acting(cause="release:2").principal == "request-principal"
        assert seen == [(uow, "request-principal", None), (view, "flow-principal", "flow-run:1")]
        assert done == ["from the view"]  # queued on the view, released by the unit of work's commit
        with pytest.raises(RuntimeError):
            async with kernel.unit_of_work("default") as uow:
                uow.acting("other").action("test.done", "rolled back")
                raise RuntimeError("fail")
        assert done == ["from the view"]
        assert uow.event_context(in_transaction=False).uow is None
    finally:
        for off in offs:
            off()


async def test_two_apps_on_one_redis_share_actions(make_app, tmp_path, redis_url):
    one = await make_app(data_dir=tmp_path / "shared", redis_url=redis_url)
    two = await make_app(data_dir=tmp_path / "shared", redis_url=redis_url)
    received = asyncio.Event()
    got = []

    def on_two(event, payload, c):
        got.append((event, payload, c.site_id, c.remote))
        received.set()

    two.kernel.bus.on_action("cache.invalidate", on_two)
    one.kernel.bus.on_action("cache.invalidate", lambda e, p, c: None)  # the same handlers everywhere
    await one.kernel.bus.action("cache.invalidate", {"key": "k"}, EventContext(site_id="default"))
    await asyncio.wait_for(received.wait(), 5)
    assert got == [("cache.invalidate", {"key": "k"}, "default", True)]

    # An event no handler of the sending process takes is not published at all.
    two.kernel.bus.on_action("nobody.here", on_two)
    received.clear()
    await one.kernel.bus.action("nobody.here", {"key": "k"}, EventContext(site_id="default"))
    await one.kernel.bus.action("cache.invalidate", {"key": "after"}, EventContext(site_id="default"))
    await asyncio.wait_for(received.wait(), 5)
    assert got[1:] == [("cache.invalidate", {"key": "after"}, "default", True)]


async def test_site_rename_on_one_worker_reaches_the_other(make_app, tmp_path, redis_url):
    one = await make_app(data_dir=tmp_path / "shared", redis_url=redis_url)
    two = await make_app(data_dir=tmp_path / "shared", redis_url=redis_url)
    token = await one.login()
    headers = {"Authorization": f"Bearer {token}"}
    await two.client.get("/api/v1/auth/me", headers={**headers, "X-Svc-Site": "default"})  # warm cache
    assert two.kernel.site_caches["sites"].contains("default")
    resp = await one.client.delete("/api/v1/sites/default", headers=headers)
    assert resp.status_code == 204
    for _ in range(100):
        if not two.kernel.site_caches["sites"].contains("default"):
            break
        await asyncio.sleep(0.05)
    resp = await two.client.get("/api/v1/auth/me", headers={**headers, "X-Svc-Site": "default"})
    assert resp.status_code == 404
