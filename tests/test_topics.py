"""Live topics: in-process fan-out, bounded queues, and Redis pub/sub across processes."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kernel.messaging.topics import Lagged, TopicMessage, Topics


async def test_publish_reaches_exact_and_pattern_subscribers_of_that_site_only():
    topics = Topics()
    async with topics.subscribe("s1", "articles.items") as exact, \
            topics.subscribe("s1", "articles.*") as pattern, \
            topics.subscribe("s2", "articles.*") as other_site:
        await topics.publish("s1", "articles.items", {"id": "a1", "action": "update"})
        await topics.publish("s1", "pages.items", {"id": "p1"})
        assert await exact.get(1) == TopicMessage("s1", "articles.items", {"id": "a1", "action": "update"})
        assert (await pattern.get(1)).data == {"id": "a1", "action": "update"}
        assert exact.pending() == pattern.pending() == 0
        assert other_site.pending() == 0  # nothing of site s1 reaches site s2
        assert topics.subscriber_count == 3
    assert topics.subscriber_count == 0


async def test_a_slow_subscriber_lags_and_never_blocks_the_publisher():
    topics = Topics()
    async with topics.subscribe("s1", "t", queue_size=3) as slow, topics.subscribe("s1", "t") as fast:
        for n in range(100):  # returns although nobody reads: the publisher never waits
            await topics.publish("s1", "t", {"n": n})
        assert slow.pending() == 3
        got = [await slow.get(1) for _ in range(4)]
        assert [m.data["n"] for m in got[:3]] == [0, 1, 2]
        assert got[3] == Lagged(97)  # the gap is reported where it happened
        await topics.publish("s1", "t", {"n": 100})
        assert (await slow.get(1)).data == {"n": 100}
        assert fast.pending() == 101
    assert topics.stats.lagged == 97


async def test_a_gap_before_new_messages_comes_first():
    topics = Topics()
    async with topics.subscribe("s1", "t", queue_size=1) as sub:
        await topics.publish("s1", "t", {"n": 1})
        await topics.publish("s1", "t", {"n": 2})  # lost
        assert (await sub.get(1)).data == {"n": 1}
        await topics.publish("s1", "t", {"n": 3})
        assert await sub.get(1) == Lagged(1)
        assert (await sub.get(1)).data == {"n": 3}


async def test_overflow_drop_ends_the_subscription():
    topics = Topics()
    sub = await topics.subscribe("s1", "t", queue_size=2, overflow="drop").start()
    for n in range(3):
        await topics.publish("s1", "t", {"n": n})
    assert sub.dropped and topics.subscriber_count == 0
    assert [m.data["n"] async for m in sub] == [0, 1]  # what was queued, then the end
    await sub.aclose()
    assert topics.stats.dropped_subscribers == 1


async def test_a_waiting_reader_wakes_on_publish_and_stop_ends_iteration():
    topics = Topics()
    sub = await topics.subscribe("s1", "t").start()
    reader = asyncio.create_task(sub.get(5))
    await asyncio.sleep(0)
    await topics.publish("s1", "t", {"ok": True})
    assert (await reader).data == {"ok": True}
    waiting = asyncio.create_task(sub.__anext__())
    await asyncio.sleep(0)
    await topics.stop()
    with pytest.raises(StopAsyncIteration):
        await waiting


@pytest.mark.parametrize("call", [
    lambda t: t.publish("Bad Site", "t", {}),
    lambda t: t.publish("s1", "bad topic", {}),
    lambda t: t.publish("s1", "t*", {}),
    lambda t: t.publish("s1", "t", {"big": "x" * 9000}),
    lambda t: t.publish("s1", "t", {"nan": float("nan")}),
])
async def test_bad_input_is_refused(call):
    with pytest.raises(ValueError):
        await call(Topics())


def test_bad_subscriptions_are_refused():
    topics = Topics()
    with pytest.raises(ValueError):
        topics.subscribe("s1", "a b")
    with pytest.raises(ValueError):
        topics.subscribe("s1", "t", overflow="block")
    with pytest.raises(ValueError):
        topics.subscribe("s1", "t", queue_size=0)


async def test_subscribers_do_not_share_mutations():
    topics = Topics()
    message = {"ids": [1]}
    async with topics.subscribe("s1", "t") as sub:
        await topics.publish("s1", "t", message)
        message["ids"].append(2)
        assert (await sub.get(1)).data == {"ids": [1]}


# ---------------------------------------------------------------------------- Redis


# The redis_url fixture (kernel.testing): skips without a Redis, fails under CI=true.
async def test_redis_carries_messages_between_processes_once_each(redis_url):
    namespace = f"svctest:{uuid.uuid4().hex[:8]}"
    a = Topics(redis_url, namespace=namespace)
    b = Topics(redis_url, namespace=namespace)
    other_namespace = Topics(redis_url, namespace=namespace + "x")
    await a.start()
    await b.start()
    await other_namespace.start()
    try:
        async with b.subscribe("s1", "articles.items") as exact, b.subscribe("s1", "articles.*") as pattern, \
                b.subscribe("s2", "articles.*") as site2, other_namespace.subscribe("s1", "*") as stranger, \
                a.subscribe("s1", "articles.items") as own:
            await a.publish("s1", "articles.items", {"id": "a1"})
            assert (await exact.get(5)).data == {"id": "a1"}
            assert (await pattern.get(5)).data == {"id": "a1"}
            assert (await own.get(5)).data == {"id": "a1"}  # served locally
            await a.publish("s1", "articles.items", {"id": "a2"})  # a marker message: all before it arrived
            assert (await exact.get(5)).data == {"id": "a2"}
            assert (await pattern.get(5)).data == {"id": "a2"}
            assert (await own.get(5)).data == {"id": "a2"}  # its own copy from Redis was ignored
            assert exact.pending() == pattern.pending() == own.pending() == 0
            assert site2.pending() == 0 and stranger.pending() == 0
        assert b._remote == {}  # unsubscribed in Redis once nobody local listens
    finally:
        for topics in (a, b, other_namespace):
            await topics.stop()
