"""The shared Redis pub/sub listener (kernel/redisio/pubsub_listener.py), against a real Redis.

Losing Redis and subscribing again is shown with a killed and restarted ``redis-server`` in
tests/test_bus_redis_restart.py and tests/test_topics_redis_restart.py, through its two users.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from kernel.redisio.pubsub_listener import PubSubListener, open_redis


async def test_a_listener_hands_over_messages_and_closes_on_stop(redis_url):
    channel = f"svc-test:listener:{uuid.uuid4().hex}"
    got: asyncio.Queue[bytes] = asyncio.Queue()
    connected: list[bool] = []

    async def subscribe(pubsub):
        await pubsub.subscribe(channel)

    async def handle(message):  # an async handler is awaited
        await got.put(message["data"])

    listener = PubSubListener(
        "test",
        logging.getLogger("svc.test"),
        subscribe,
        handle,
        on_connected=lambda: connected.append(True),
        ignore_subscribe_messages=True,
    )
    redis = open_redis(redis_url, 2.0)
    publisher = open_redis(redis_url, 2.0)
    try:
        await listener.connect(redis)
        assert listener.connected and listener.pubsub is not None
        listener.start(redis)
        await publisher.publish(channel, b"one")
        assert await asyncio.wait_for(got.get(), 10) == b"one"
        assert connected == []  # connected before start: not a reconnection
    finally:
        await listener.stop()
        await publisher.aclose()
        await redis.aclose()
    assert not listener.connected and listener.pubsub is None


async def test_a_listener_started_unconnected_subscribes_and_says_so(redis_url):
    channel = f"svc-test:listener:{uuid.uuid4().hex}"
    seen: list[dict] = []
    connected, handed = asyncio.Event(), asyncio.Event()

    def handle(message):  # a sync handler is called as it is
        seen.append(message)
        handed.set()

    async def subscribe(pubsub):
        await pubsub.subscribe(channel)

    # Subscribe confirmations are handed over too (the topics need them).
    listener = PubSubListener(
        "test", logging.getLogger("svc.test"), subscribe, handle, on_connected=connected.set
    )
    redis = open_redis(redis_url, 2.0)
    try:
        listener.start(redis)
        await asyncio.wait_for(connected.wait(), 10)
        assert listener.connected
        await asyncio.wait_for(handed.wait(), 10)
        assert seen[0]["type"] == "subscribe"
    finally:
        await listener.stop()
        await redis.aclose()
