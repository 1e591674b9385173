"""The Redis topic listener survives a Redis restart (a real redis-server of the test's own)."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel.messaging.topics import Lagged, Topics
from kernel.testing import free_port, skip_or_fail

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


class RedisServer:
    """A throwaway redis-server on ``port``, without persistence, that a test can kill and restart."""

    def __init__(self, port: int, workdir: Path) -> None:
        self.port = port
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for _ in range(500):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited at start")
            subprocess.run(["sleep", "0.01"], check=False)
        raise RuntimeError("redis-server did not answer")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if not Path(REDIS_SERVER).exists():
        skip_or_fail("redis-server is not installed (apt-get install redis-server)")
    server = RedisServer(free_port(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


async def wait_until(predicate, attempts: int = 500) -> None:
    for _ in range(attempts):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


async def test_subscribers_receive_messages_published_after_a_redis_restart(redis_server):
    listener = Topics(redis_server.url, namespace="restart")
    publisher = Topics(redis_server.url, namespace="restart")
    await listener.start()
    await publisher.start()
    try:
        async with listener.subscribe("s1", "news.*") as sub:
            await publisher.publish("s1", "news.flash", {"n": 1})
            assert (await sub.get(5)).data == {"n": 1}

            redis_server.kill()
            await wait_until(lambda: not listener.redis_connected)
            await publisher.publish("s1", "news.flash", {"n": 2})  # lost: nobody carries it; never raises
            late = await listener.subscribe("s1", "alerts").start()  # opened while Redis is down
            redis_server.start()
            await wait_until(lambda: listener.redis_connected)

            # The publisher's pool reconnects on its next command; the listener re-subscribed.
            received, markers = None, []
            for n in range(3, 200):
                await publisher.publish("s1", "news.flash", {"n": n})
                try:
                    item = await sub.get(0.1)
                except TimeoutError:
                    continue
                if isinstance(item, Lagged):
                    markers.append(item)
                    continue
                received = item
                break
            assert received is not None and received.data["n"] >= 3
            assert markers == [Lagged(None)]  # what was published during the outage is unknown
            await publisher.publish("s1", "alerts", {"a": 1})
            item = await late.get(5)
            if isinstance(item, Lagged):
                item = await late.get(5)
            assert item.data == {"a": 1}
            await late.aclose()
            assert listener.stats.reconnects == 1
    finally:
        await listener.stop()
        await publisher.stop()
