"""The bus's Redis fan-out survives a Redis restart: remote actions (cache invalidations) keep
arriving once Redis is back (a real redis-server of the test's own)."""

from __future__ import annotations

import asyncio

from kernel.messaging.bus import Bus, EventContext
from tests.test_topics_redis_restart import redis_server, wait_until  # noqa: F401 - the fixture


async def test_remote_actions_arrive_again_after_a_redis_restart(redis_server):  # noqa: F811
    listener, publisher = Bus(redis_server.url, channel="svc:bus:restart"), Bus(redis_server.url,
                                                                                channel="svc:bus:restart")
    seen: list[dict] = []
    for bus in (listener, publisher):  # every process has the same handlers (unhandled events stay local)
        bus.on_action("sites.changed", lambda event, payload, ctx: seen.append(payload) if ctx.remote else None)
    await listener.start()
    await publisher.start()
    ctx = EventContext(site_id="s1")
    try:
        await publisher.action("sites.changed", {"n": 1}, ctx)
        await wait_until(lambda: seen == [{"n": 1}])

        redis_server.kill()
        await wait_until(lambda: not listener.redis_connected)
        redis_server.start()
        await wait_until(lambda: listener.redis_connected)
        for n in range(2, 200):  # the publisher's pool reconnects on its next command
            await publisher.action("sites.changed", {"n": n}, ctx)
            await asyncio.sleep(0.02)
            if len(seen) > 1:
                break
        assert len(seen) > 1 and seen[-1]["n"] >= 2
        assert listener.reconnects == 1
    finally:
        await listener.stop()
        await publisher.stop()


async def test_a_bus_started_while_redis_is_down_connects_when_it_comes(redis_server):  # noqa: F811
    redis_server.kill()
    bus = Bus(redis_server.url, channel="svc:bus:late")
    bus.on_action("sites.changed", lambda event, payload, ctx: None)
    await bus.start()  # a process restarted during the outage starts anyway
    try:
        assert bus.redis_connected is False
        assert bus.publish_outage.up is False
        await bus.action("sites.changed", {"n": 1}, EventContext(site_id="s1"))  # skipped, not raised
        assert bus.publish_outage.fallbacks == 1
        redis_server.start()
        await wait_until(lambda: bus.redis_connected)
        assert bus.publish_outage.up is True
    finally:
        await bus.stop()
