"""Bounds: connections per site (in process and across processes through Redis, with leases
that a dead worker cannot leak), and a client that stops reading."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import uuid

from kernel.messaging.slots import ConnectionLimiter
from kernel.testing import Calls
from plugin_tests.realtime.helpers import closed, connect, frame, ticket


async def _setup(make_app, live_server, **env):
    app = await make_app(env=env)
    server = await live_server(app)
    headers = {"Authorization": f"Bearer {await app.login()}"}
    site, site_b = await app.create_site(headers), await app.create_site(headers)
    return app, server, Calls(app.client, {**headers, "X-Svc-Site": site}), Calls(app.client, {**headers, "X-Svc-Site": site_b})


def test_the_default_limit_is_the_specs_50():
    from plugins.realtime.plugin import register_settings

    assert {s.env: s.default for s in register_settings()}["SVC_REALTIME_MAX_CONNECTIONS"] == 50


async def test_at_most_n_connections_per_site(make_app, live_server):
    app, server, calls, calls_b = await _setup(make_app, live_server, SVC_REALTIME_MAX_CONNECTIONS="2")
    async with connect(server, await ticket(calls)) as one, connect(server, await ticket(calls)) as two:
        for ws in (one, two):
            await ws.send_json({"type": "ping"})
            assert await frame(ws) == {"type": "pong"}
        close = await closed(connect(server, await ticket(calls)))
        assert (close.code, close.reason) == (4429, "RATE_LIMITED: At most 2 concurrent realtime connections per site")
        async with connect(server, await ticket(calls_b)) as other:  # another site counts apart
            await other.send_json({"type": "ping"})
            assert await frame(other) == {"type": "pong"}
    deadline = time.monotonic() + 10
    while app.kernel.state["realtime"].limiter.held:  # the server notices the closes
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    async with connect(server, await ticket(calls)) as again:
        await again.send_json({"type": "ping"})
        assert await frame(again) == {"type": "pong"}


async def test_the_limit_holds_across_processes_through_redis(make_app, live_server, redis_url):
    env = {"SVC_REDIS_URL": redis_url, "SVC_REALTIME_MAX_CONNECTIONS": "1"}
    app, server, calls, _ = await _setup(make_app, live_server, **env)
    worker_b = await live_server(await make_app(env=env, data_dir=app.kernel.settings.data_path))
    async with connect(server, await ticket(calls)) as ws:
        await ws.send_json({"type": "ping"})
        assert await frame(ws) == {"type": "pong"}
        close = await closed(connect(worker_b, await ticket(calls)))
        assert close.code == 4429


async def test_a_dead_workers_slots_expire(redis_url):
    from kernel.cache.redis_cache import make_redis_client

    namespace = f"svctest:{uuid.uuid4().hex[:12]}"
    dead = ConnectionLimiter(make_redis_client(redis_url), namespace, 2, lease=1.0)
    alive = ConnectionLimiter(make_redis_client(redis_url), namespace, 2, lease=1.0)
    alive.start()
    try:
        assert await dead.admit("s1") and await dead.admit("s1")
        assert await alive.admit("s1") is None
        await dead.redis.aclose()  # the worker dies: no release, no renewal
        kept = None
        deadline = time.monotonic() + 10
        while kept is None:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.2)
            kept = await alive.admit("s1")
        assert await alive.admit("s1") is not None and await alive.admit("s1") is None
        # Alive renews its own leases: once the lease it started with is over, they still hold.
        held = await alive.redis.zrange(alive.key("s1"), 0, -1, withscores=True)
        first_deadline = max(score for _, score in held)
        while time.time() <= first_deadline:  # the condition: that first lease is over
            assert time.monotonic() < deadline + 10, "the clock did not reach the first lease's end"
            await asyncio.sleep(0.05)
        assert await alive.admit("s1") is None
    finally:
        await alive.stop()


async def test_a_client_that_stops_reading_is_dropped(make_app, live_server):
    from websockets.asyncio.client import connect as ws_connect

    app, server, calls, _ = await _setup(make_app, live_server, SVC_REALTIME_QUEUE_SIZE="8",
                                         SVC_REALTIME_SEND_TIMEOUT_SECONDS="1")
    site = calls.headers["X-Svc-Site"]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    url = f"ws://127.0.0.1:{server.port}/api/v1/realtime?ticket={await ticket(calls)}"
    async with ws_connect(url, sock=sock, max_queue=1, close_timeout=0.5) as ws:
        await ws.send(json.dumps({"type": "subscribe", "collection": "posts"}))
        assert json.loads(await ws.recv())["type"] == "subscribed"
        stats = app.kernel.state["ws_stats"]
        # Only a bound against a hang: filling the kernel's socket buffers through Redis on a
        # loaded machine takes a while (long item ids fill them in fewer messages: 4 KB ids took
        # ~2 s with Redis where 200-byte ids took 5 to 14 s).
        deadline = time.monotonic() + 90
        n = 0
        pad = "x" * 4000
        while not stats["4408"]:  # the client reads nothing more
            assert time.monotonic() < deadline, "the slow client was never dropped"
            for _ in range(200):
                n += 1
                await app.kernel.topics.publish(site, "items.posts", {"collection": "posts", "action": "update",
                                                                    "itemId": f"i-{n}-{pad}"})
            await asyncio.sleep(0.01)
        assert n < 100_000
    assert not app.kernel.state["realtime"].limiter.held.get(site)


async def test_an_unreachable_counter_falls_back_to_this_processs_count(caplog):
    from kernel.cache.redis_cache import make_redis_client
    from kernel.testing import free_port

    limiter = ConnectionLimiter(make_redis_client(f"redis://127.0.0.1:{free_port()}/0"), "svctest:x", 2, lease=5.0)
    try:
        first, second = await limiter.admit("s1"), await limiter.admit("s1")
        assert first is not None and second is not None
        assert await limiter.admit("s1") is None  # the limit still holds, in this process
        assert limiter.outage.up is False
        assert limiter.unlisted == {"s1": {first, second}}
        warnings = [r for r in caplog.records if "Redis unreachable for realtime connections" in r.getMessage()]
        assert len(warnings) == 1
        await limiter.release("s1", first)
        assert limiter.unlisted == {"s1": {second}} and limiter.held == {"s1": {second}}
    finally:
        await limiter.stop()


async def test_sockets_admitted_during_an_outage_are_counted_once_redis_answers(redis_url):
    from redis.exceptions import ConnectionError as RedisConnectionError

    from kernel.cache.redis_cache import make_redis_client

    limiter = ConnectionLimiter(make_redis_client(redis_url), f"svctest:{uuid.uuid4().hex[:12]}", 5, lease=5.0)
    try:
        limiter.outage.failed(RedisConnectionError("refused"))  # as a refused call leaves it
        conn = await limiter.admit("s1")
        assert limiter.unlisted == {"s1": {conn}}
        assert await limiter.redis.zcard(limiter.key("s1")) == 0
        await limiter.renew()  # the heartbeat's next beat
        assert limiter.outage.up is True and limiter.unlisted == {}
        assert await limiter.redis.zscore(limiter.key("s1"), conn) is not None
    finally:
        await limiter.stop()
