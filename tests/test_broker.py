"""The node's local broker (kernel/workers/broker.py) over a real Unix socket, in the test's own loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat

import pytest

from kernel.workers import broker as broker_module
from kernel.workers.broker import BrokerClient, BrokerServer, _glob
from kernel.workers.fanout_gate import FanoutGate


@pytest.fixture
async def server(tmp_path):
    srv = BrokerServer(str(tmp_path / "broker.sock"))
    await srv.start()
    yield srv
    await srv.stop()


async def next_message(pubsub, kind="message"):
    async with asyncio.timeout(5):
        while True:
            message = await pubsub.get_message(timeout=1.0)
            if message is not None and message["type"] == kind:
                return message


def test_redis_globs_escape_like_redis():
    assert _glob("svc\\*:topic:s1:posts.*").fullmatch("svc*:topic:s1:posts.items")
    assert not _glob("svc\\*:topic:s1:posts.*").fullmatch("svcX:topic:s1:posts.items")
    assert _glob("a?c").fullmatch("abc") and not _glob("a?c").fullmatch("abbc")


async def test_publish_reaches_channel_and_pattern_subscribers_and_numbers_the_bus(server):
    assert stat.S_IMODE(os.stat(server.path).st_mode) == 0o600
    client = BrokerClient(server.path, gen_channels=("svc:bus",))
    exact, pattern = client.pubsub(), client.pubsub()
    await exact.subscribe("svc:bus")
    await pattern.psubscribe("svc:topic:s1:*")
    assert (await next_message(exact, "subscribe"))["gen"] == 0
    await next_message(pattern, "psubscribe")
    gate = FanoutGate(server.path)
    assert gate.pending() == 0
    assert await client.publish("svc:topic:s1:posts", "t") == 0  # not the bus: no number
    got = await next_message(pattern, "pmessage")
    assert (got["pattern"], got["channel"], got["data"], got["gen"]) == ("svc:topic:s1:*", "svc:topic:s1:posts", "t", 0)
    assert await client.publish("svc:bus", b"drop") == 1
    assert gate.pending() == 1  # numbered before the publisher got its answer
    got = await next_message(exact)
    assert (got["data"], got["gen"]) == ("drop", 1)
    gate.applied_up_to(got["gen"])
    assert gate.pending() == 0
    for one in (exact, pattern):
        await one.aclose()
    await client.aclose()


async def test_the_gate_drops_everything_when_a_message_never_comes(server):
    client = BrokerClient(server.path, gen_channels=("svc:bus",))
    await client.publish("svc:bus", "nobody listens")
    gate = FanoutGate(server.path, wait_seconds=0.05)
    dropped = []
    await gate.wait_for(gate.pending(), lambda: dropped.append(True))
    assert (dropped, gate.timeouts, gate.pending()) == ([True], 1, 0)
    await client.aclose()


async def test_leases_are_shared_and_go_with_the_connection(server):
    one, two = BrokerClient(server.path), BrokerClient(server.path)
    first = await one.admit("k", 2)
    assert first is not None and await two.admit("k", 2) is not None
    assert await two.admit("k", 2) is None
    await one.aclose()  # a dead worker's connection: its slot goes with it
    async with asyncio.timeout(5):
        while len(server.leases.get("k", {})) != 1:
            await asyncio.sleep(0.01)
    third = await two.admit("k", 2)
    assert third is not None and await two.admit("k", 2) is None
    await two.release("k", third)
    assert len(server.leases["k"]) == 1
    # A reconnect lists the slots the client still holds again.
    await two.aclose()
    await two.ping()
    async with asyncio.timeout(5):
        while len(server.leases.get("k", {})) != 1:
            await asyncio.sleep(0.01)
    other = BrokerClient(server.path)
    assert await other.admit("k", 2) is not None and await other.admit("k", 2) is None
    await other.aclose()
    await two.aclose()


async def test_sliding_windows_count_across_clients(server):
    one, two = BrokerClient(server.path), BrokerClient(server.path)
    answers = [(await (one if i % 2 else two).slide("r", 3, 60_000))[0] for i in range(4)]
    assert answers == [True, True, True, False]
    await one.aclose()
    await two.aclose()


async def test_a_subscriber_that_does_not_read_is_dropped_not_waited_for(server, monkeypatch):
    monkeypatch.setattr(broker_module, "MAX_BUFFERED", 64 * 1024)
    client = BrokerClient(server.path)
    slow = client.pubsub()
    await slow.subscribe("c")
    await next_message(slow, "subscribe")
    slow._conn._task.cancel()  # the subscriber stops reading its socket
    payload = "x" * 8192
    for _ in range(400):  # 3 MB: past every buffer between the two
        assert await client.publish("c", payload) == 0
    async with asyncio.timeout(5):
        while server.channels.get("c"):
            await asyncio.sleep(0.01)
    await slow.aclose()
    await client.aclose()


async def _until(condition, what):
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(10):
            while not condition():
                await asyncio.sleep(0.01)
    assert condition(), what() if callable(what) else what


async def test_a_restarted_broker_is_found_again_and_topics_say_lagged(tmp_path):
    from kernel.messaging.bus import Bus, EventContext
    from kernel.messaging.topics import Lagged, Topics

    path = str(tmp_path / "broker.sock")
    first = BrokerServer(path)
    await first.start()
    client = BrokerClient(path, gen_channels=("svc:bus",))
    url = broker_module.broker_url(path)
    bus = Bus(url, channel="svc:bus", client=client)
    bus.gate = FanoutGate(path)
    heard = []
    bus.on_action("users.changed", lambda event, payload, ctx: heard.append((payload, ctx.remote)))
    topics = Topics(url, client=client)
    await bus.start()
    await topics.start()
    sub = await topics.subscribe("s1", "posts.*").start()
    for _ in range(3):
        await client.publish("svc:bus", "{}")
    await _until(lambda: bus.gate.applied == 3, f"applied {bus.gate.applied}")
    await first.stop()  # the supervising process's broker goes away...
    second = BrokerServer(path)
    await second.start()  # ...and comes back: the listeners reconnect with backoff
    try:
        await _until(lambda: bus.reconnects == 1 and topics.stats.reconnects == 1 and bus.redis_connected
                     and topics.redis_connected,
                     lambda: f"bus {bus.reconnects} {bus.redis_connected}, topics {topics.stats.reconnects}")
        assert isinstance(await sub.get(timeout=5), Lagged)  # what was published meanwhile is gone
        other = BrokerClient(path, gen_channels=("svc:bus",))
        other_bus = Bus(url, channel="svc:bus", client=other)
        other_bus.on_action("users.changed", lambda *a: None)
        await other_bus.start()
        await other_bus.action("users.changed", {"userId": "u1"}, EventContext(site_id=None))
        await _until(lambda: heard, lambda: f"the other process's action never arrived (listeners up: "
                     f"{bus.redis_connected}, {other_bus.redis_connected}; gate {bus.gate.applied})")
        # The new broker numbers from 1 again, in a new file: the gate follows it.
        assert heard == [({"userId": "u1"}, True)] and bus.gate.current() == 1 and bus.gate.pending() == 0
        await other.publish("svc:topic:s1:posts.items", '{"o":"x","s":"s1","t":"posts.items","m":"1"}')
        got = await sub.get(timeout=5)
        assert (got.topic, got.data) == ("posts.items", 1)
        await other_bus.stop()
        await other.aclose()
    finally:
        await sub.aclose()
        await topics.stop()
        await bus.stop()
        await client.aclose()
        await second.stop()


async def test_a_data_dir_too_deep_for_a_socket_gets_a_private_directory_that_goes_with_the_broker(tmp_path):
    from kernel.workers.broker import socket_path_for

    deep = tmp_path / ("d" * 60) / ("e" * 60)
    path = socket_path_for(deep)
    assert len(path.encode()) <= 100 and not path.startswith(str(tmp_path))
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    srv = BrokerServer(path)
    await srv.start()
    await srv.stop()
    assert not os.path.exists(os.path.dirname(path))
    assert socket_path_for(tmp_path) == str(tmp_path.resolve() / "broker.sock")
