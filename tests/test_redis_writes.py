"""``kernel.redis_writes``: Redis writes of one process sent together, against a real Redis.

What a unit of work's after-commit steps publish (the committed signal, the live topic, the bus
fan-out) and the dashboards' generation bumps reach Redis as one pipeline, in order; a Redis
that does not answer is counted on each command's part, never raised to the writer.
"""

from __future__ import annotations

import asyncio
import uuid

import redis.asyncio as aioredis

from kernel.redisio.redis_fallback import RedisCircuit
from kernel.redisio.redis_writes import RedisWrites

DEAD_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1: refused at once


async def _subscribed(url: str, channel: str) -> tuple[aioredis.Redis, object]:
    client = aioredis.from_url(url)
    pubsub = client.pubsub()
    await pubsub.subscribe(channel)
    await pubsub.get_message(timeout=1.0)  # the subscribe confirmation
    return client, pubsub


async def _received(pubsub: object, count: int) -> list[bytes]:
    got: list[bytes] = []
    async with asyncio.timeout(5):
        while len(got) < count:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)  # type: ignore[attr-defined]
            if message is not None:
                got.append(message["data"])
    return got


async def test_commands_held_together_go_as_one_pipeline_in_order(redis_url):
    channel, key = f"rw-{uuid.uuid4().hex}", f"rw-key-{uuid.uuid4().hex}"
    client, pubsub = await _subscribed(redis_url, channel)
    writes = RedisWrites(redis_url)
    part = RedisCircuit().part("topics", "nothing")
    try:
        async with writes.held():
            for n in range(3):
                assert await writes.send(part, "PUBLISH", channel, f"m{n}") is None  # returns at once
            await writes.send(part, "INCR", key)
            assert writes.pipelines == 0  # nothing went out inside the scope: the end waits for it
        assert (writes.pipelines, writes.commands) == (1, 4)
        assert await _received(pubsub, 3) == [b"m0", b"m1", b"m2"]
        assert await client.get(key) == b"1"

        # outside a scope, each send waits for Redis; sends of one turn still share a pipeline
        await asyncio.gather(*(writes.send(part, "INCR", key) for _ in range(5)))
        assert await client.get(key) == b"6"
        assert writes.pipelines == 2
        assert part.up and part.failures == 0
    finally:
        await writes.aclose()
        await client.delete(key)
        await pubsub.aclose()  # type: ignore[attr-defined]
        await client.aclose()


async def test_a_refusing_redis_is_counted_never_raised():
    writes = RedisWrites(DEAD_URL, redis_timeout=0.5)
    part = RedisCircuit().part("bus", "this process only")
    failed: list[int] = []
    try:
        async with writes.held():
            await writes.send(part, "PUBLISH", "c", "m", failed=lambda: failed.append(1))
            await writes.send(part, "PUBLISH", "c", "m", failed=lambda: failed.append(2))
        assert failed == [1, 2] and part.failures == 2 and not part.up
        # while down, a send skips Redis (the fallback served it) until the probe interval passes
        await writes.send(part, "PUBLISH", "c", "m", failed=lambda: failed.append(3))
        assert failed == [1, 2, 3] and part.fallbacks == 1 and writes.pipelines == 1
    finally:
        await writes.aclose()


async def test_a_command_redis_refuses_is_counted_on_its_part_alone(redis_url):
    key = f"rw-text-{uuid.uuid4().hex}"
    client = aioredis.from_url(redis_url)
    await client.set(key, "not a number")
    writes = RedisWrites(redis_url)
    part = RedisCircuit().part("cache", "memory")
    failed: list[str] = []
    try:
        async with writes.held():
            await writes.send(part, "INCR", key, failed=lambda: failed.append("incr"))
            await writes.send(part, "PUBLISH", f"rw-{uuid.uuid4().hex}", "m", failed=lambda: failed.append("publish"))
        assert failed == ["incr"]  # Redis answered: a refusal, not an outage
        assert part.up and part.failures == 0
    finally:
        await writes.aclose()
        await client.delete(key)
        await client.aclose()


async def test_an_item_write_sends_its_redis_writes_as_one_pipeline(make_app, redis_url, monkeypatch):
    app = await make_app(env={"SVC_REDIS_URL": redis_url})
    writes = app.kernel.redis_writes
    assert writes is not None and app.kernel.cache.writes is writes
    token = await app.login()
    headers = {"Authorization": f"Bearer {token}"}
    resp = await app.client.post("/api/v1/sites", json={"id": "rw-site"}, headers=headers)
    assert resp.status_code == 201
    headers["X-Svc-Site"] = "rw-site"
    resp = await app.client.post("/api/v1/collections", headers=headers,
                                 json={"collection": "posts", "fields": [{"field": "title", "type": "string"}]})
    assert resp.status_code == 201, resp.text
    batches: list[list[str]] = []
    real = writes._execute

    async def recorded(batch):
        batches.append([str(command.args[0]) for command in batch])
        await real(batch)

    monkeypatch.setattr(writes, "_execute", recorded)
    resp = await app.client.post("/api/v1/items/posts", json={"title": "one"}, headers=headers)
    assert resp.status_code == 201, resp.text
    # the committed signal, the live topic and the bus fan-out, and the dashboards' two counters,
    # in one pipeline (background work of the process may send pipelines of its own)
    assert any(batch.count("PUBLISH") >= 3 and batch.count("INCR") >= 2 for batch in batches), batches
