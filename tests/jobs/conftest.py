"""Fixtures for the job queue tests: each backend, a unique huey name per test."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
import redis

from kernel.jobs import JobQueue


def _purge(url: str, name: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"huey.*{name}*", count=500))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.fixture(params=["sqlite", "redis"])
async def make_queue(request, tmp_path):
    """A factory of JobQueues sharing one backend and one unique name (so one queue)."""
    url = request.getfixturevalue("redis_url") if request.param == "redis" else ""
    name = f"svctest{uuid.uuid4().hex[:12]}"
    settings = SimpleNamespace(data_path=tmp_path / "data", redis_url=url)
    made: list[JobQueue] = []

    def make() -> JobQueue:
        queue = JobQueue(settings, name=name)
        made.append(queue)
        return queue

    yield make
    for queue in made:
        await queue.stop_consumer()
        queue.close()
    if url:
        _purge(url, name)


@pytest.fixture
def sqlite_queue(tmp_path):
    queue = JobQueue(SimpleNamespace(data_path=tmp_path, redis_url=""), name="svctest")
    yield queue
    queue.close()
