"""A PostgreSQL or Redis that accepts connections but never answers (a paused process, a
blackholed connection) fails requests in bounded time and is used again once it answers:
503 ``SERVICE_UNAVAILABLE`` for the database (``SVC_DB_*_TIMEOUT``), the per-process fallback
for Redis (``SVC_REDIS_TIMEOUT``). The peers are real local TCP servers: a black hole that
accepts and reads but never writes, a PostgreSQL impostor that completes the startup handshake
and then goes silent, and a proxy in front of the real servers that can be frozen like
``kill -STOP`` (bytes wait in it until it is thawed)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import struct
import sys
import threading
import types
from pathlib import Path
from typing import Any

import pytest

from kernel import Route, hookimpl
from kernel.db.engine import Database
from kernel.redisio.redis_fallback import outages_of
from kernel.testing import METRICS_HEADERS, svc_test_database_url
from tests.http.test_errors import assert_envelope
from tests.jobs.test_worker_metrics import samples

BOUND = 10.0  # seconds: turns a hang into a failure (docs/testing.md, rule 6); the timeouts are far lower
CLI_BOUND = 60.0  # the same for a child process, which spends seconds importing on a loaded machine


class BlackHole:
    """Accepts every connection and reads what comes, never answering; with ``handshake``, it
    first completes a PostgreSQL startup (no SSL, trust) and then stops answering."""

    def __init__(self, handshake: bool = False) -> None:
        self.handshake = handshake
        self.server: asyncio.Server | None = None
        self.connections = 0
        self.unanswered = b""  # what came after the handshake (if any), never answered
        self.writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> BlackHole:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:  # the handlers read EOF and end
            writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.server.wait_closed(), 2)

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            if self.handshake:
                length = struct.unpack("!i", await reader.readexactly(4))[0]
                startup = await reader.readexactly(length - 4)
                assert struct.unpack("!i", startup[:4])[0] == 196608  # protocol 3.0, no SSL request
                writer.write(b"R" + struct.pack("!ii", 8, 0))  # AuthenticationOk
                for name, value in (("server_version", "16.0"), ("client_encoding", "UTF8"),
                                    ("standard_conforming_strings", "on"), ("integer_datetimes", "on"),
                                    ("DateStyle", "ISO, MDY")):
                    body = name.encode() + b"\0" + value.encode() + b"\0"
                    writer.write(b"S" + struct.pack("!i", 4 + len(body)) + body)
                writer.write(b"K" + struct.pack("!iii", 12, 4242, 1))  # BackendKeyData
                writer.write(b"Z" + struct.pack("!i", 5) + b"I")  # ReadyForQuery: idle
                await writer.drain()
            while data := await reader.read(65536):
                self.unanswered += data
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


class FreezableProxy:
    """A TCP proxy to ``127.0.0.1:target`` on a thread of its own (the app's setup talks to the
    database synchronously too); ``freeze()`` holds every byte in both directions, new
    connections' too, until ``thaw()``, as a paused server's socket buffers would."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.flowing = asyncio.Event()
        self.writers: list[asyncio.StreamWriter] = []
        self.port = 0

    def __enter__(self) -> FreezableProxy:
        self.thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(5)
        return self

    def __exit__(self, *exc: Any) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()

    def freeze(self) -> None:
        self.loop.call_soon_threadsafe(self.flowing.clear)

    def thaw(self) -> None:
        self.loop.call_soon_threadsafe(self.flowing.set)

    async def _start(self) -> int:
        self.flowing.set()
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _stop(self) -> None:
        self.flowing.set()
        self.server.close()
        for writer in self.writers:
            writer.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        await asyncio.wait(tasks, timeout=2) if tasks else None

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                await self.flowing.wait()
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        self.writers.append(up_writer)
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))


# ---------------------------------------------------------------------------------- PostgreSQL


class ReadsThrough:
    """Reads ``SELECT 1`` through a database at ``app.state['hang_url']`` with low timeouts."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        db = Database(self.kernel.state["hang_url"], connect_timeout=2, command_timeout=0.3, pool_timeout=0.5)
        try:
            await db.ping()
        finally:
            await db.dispose()
        resp.media = {"data": {"ok": True}}


class HangPlugin:
    name = "hang"

    @hookimpl
    def register_routes(self, kernel: Any) -> list[Route]:
        return [Route("/test/hang", ReadsThrough(kernel), site="none", auth="public")]


@pytest.mark.parametrize("handshake", [True, False], ids=["silent-after-startup", "silent-from-the-start"])
async def test_a_postgresql_that_never_answers_is_503_in_bounded_time(make_app, handshake):
    """After the startup the command timeout (0.3 s) ends it, before it the connect timeout
    (2 s, libpq's least); either way 503 with the database named, and the black hole did get
    the statement (or the startup) it never answered."""
    app = await make_app(plugins=["accounts", HangPlugin()])
    async with BlackHole(handshake=handshake) as hole:
        app.kernel.state["hang_url"] = (f"postgresql://svc@127.0.0.1:{hole.port}/hang"
                                        "?sslmode=disable&gssencmode=disable")
        async with asyncio.timeout(BOUND):
            resp = await app.client.get("/api/v1/test/hang")
    err = assert_envelope(resp, 503, "SERVICE_UNAVAILABLE")
    assert err["extensions"] == {"dependency": "database", "code": "SERVICE_UNAVAILABLE"}
    assert resp.headers["Retry-After"] == "2"
    assert hole.connections >= 1
    if handshake:  # a query (simple or extended protocol) went unanswered
        assert hole.unanswered[:1] in (b"Q", b"P")
    else:  # the startup message went unanswered
        assert struct.unpack("!i", hole.unanswered[4:8])[0] == 196608


@pytest.mark.svc_services
@pytest.mark.skipif(not svc_test_database_url(), reason="the PostgreSQL leg (SVC_TEST_DATABASE_URL)")
async def test_a_paused_postgresql_fails_requests_then_recovers(make_app):
    """The app's own database behind a frozen proxy: a request gets 503 once its statement, or
    its wait for a pooled connection, runs out; after the thaw the next request is served on a
    new connection, without a restart."""
    from sqlalchemy.engine import make_url

    real = make_url(svc_test_database_url())
    with FreezableProxy(real.port or 5432) as proxy:
        via_proxy = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        app = await make_app(env={"SVC_DATABASE_URL": via_proxy, "SVC_DB_COMMAND_TIMEOUT": "0.5",
                                  "SVC_DB_POOL_TIMEOUT": "0.5", "SVC_DB_CONNECT_TIMEOUT": "2"})
        headers = {"Authorization": f"Bearer {await app.login()}"}
        assert (await app.client.get("/api/v1/sites", headers=headers)).status_code == 200
        proxy.freeze()
        try:
            for _ in range(2):  # the pooled connection times out; so does the next one's ping or connect
                async with asyncio.timeout(BOUND):
                    resp = await app.client.get("/api/v1/sites", headers=headers)
                err = assert_envelope(resp, 503, "SERVICE_UNAVAILABLE")
                assert err["extensions"]["dependency"] == "database"
        finally:
            proxy.thaw()
        async with asyncio.timeout(BOUND):
            resp = await app.client.get("/api/v1/sites", headers=headers)
        assert resp.status_code == 200, resp.text


async def run_svc_against(hole: Any, *args: str, extra_env: dict[str, str] | None = None) -> tuple[int, str]:
    """``svc <args>`` in a child process with its database on ``hole`` (low timeouts); its exit
    status and stderr. The child is killed if it outlives ``CLI_BOUND`` (a hang fails the test)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(SVC_DATABASE_URL=(f"postgresql://svc@127.0.0.1:{hole.port}/hang"
                                 "?sslmode=disable&gssencmode=disable"),
               SVC_DB_CONNECT_TIMEOUT="2", SVC_DB_COMMAND_TIMEOUT="0.3", JWT_SECRET="x" * 40)
    env.update(extra_env or {})
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "kernel.cli", *args, env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                cwd=Path(__file__).resolve().parents[1])
    try:
        async with asyncio.timeout(CLI_BOUND):
            _, stderr = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return int(proc.returncode or 0), stderr.decode()


@pytest.mark.parametrize("handshake", [True, False], ids=["silent-after-startup", "silent-from-the-start"])
async def test_svc_migrate_against_a_postgresql_that_never_answers_exits_with_a_message(handshake):
    """``svc migrate`` builds its own (synchronous) engine for Alembic; it takes the app's
    ``SVC_DB_*_TIMEOUT`` bounds, so a server that accepts and goes silent ends the command with
    exit status 1 and one line naming the cause, not a hang (it waited forever before: the
    URL had no connect_timeout and the connection no command timeout)."""
    async with BlackHole(handshake=handshake) as hole:
        status, stderr = await run_svc_against(hole, "migrate")
    assert status == 1, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("svc: the database is not reachable: ")
    if handshake:  # the first statement went unanswered, and the setting that bounded it is named
        assert "did not answer within 0.3 s (SVC_DB_COMMAND_TIMEOUT)" in last
        assert hole.unanswered[:1] in (b"Q", b"P")
    else:  # the startup went unanswered: libpq's connect_timeout (SVC_DB_CONNECT_TIMEOUT)
        assert last.endswith("connection timeout expired (SVC_DB_CONNECT_TIMEOUT, or connect_timeout "
                             "in SVC_DATABASE_URL)")
        assert struct.unpack("!i", hole.unanswered[4:8])[0] == 196608
    assert "Traceback" not in stderr


async def test_svc_migrate_keeps_a_connect_timeout_in_the_url():
    """A ``connect_timeout`` in ``SVC_DATABASE_URL`` wins over ``SVC_DB_CONNECT_TIMEOUT``, as for
    the app: with 2 s in the URL and an hour in the setting, the command still ends."""
    async with BlackHole() as hole:
        url = f"postgresql://svc@127.0.0.1:{hole.port}/hang?sslmode=disable&gssencmode=disable&connect_timeout=2"
        status, stderr = await run_svc_against(hole, "migrate", extra_env={"SVC_DATABASE_URL": url,
                                                                           "SVC_DB_CONNECT_TIMEOUT": "3600"})
    assert status == 1, stderr
    assert "timeout expired" in stderr.strip().splitlines()[-1]


@pytest.mark.svc_services
@pytest.mark.skipif(not svc_test_database_url(), reason="the PostgreSQL leg (SVC_TEST_DATABASE_URL)")
async def test_svc_migrate_on_a_paused_postgresql_fails_then_succeeds_after_the_thaw(svc_template_db):
    """The real test database (migrated already) behind a frozen proxy, as a PostgreSQL paused at
    boot: ``svc migrate`` exits 1 naming the timeout; after the thaw the same command applies
    nothing and exits 0."""
    from sqlalchemy.engine import make_url

    real = make_url(svc_test_database_url())
    with FreezableProxy(real.port or 5432) as proxy:
        via_proxy = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        hole = types.SimpleNamespace(port=proxy.port)
        proxy.freeze()
        try:
            status, stderr = await run_svc_against(hole, "migrate", extra_env={"SVC_DATABASE_URL": via_proxy})
        finally:
            proxy.thaw()
        assert status == 1, stderr
        assert stderr.strip().splitlines()[-1].startswith("svc: the database is not reachable: ")
        status, stderr = await run_svc_against(hole, "migrate", extra_env={"SVC_DATABASE_URL": via_proxy})
        assert status == 0, stderr


# --------------------------------------------------------------------------------------- Redis


async def test_a_redis_that_never_answers_falls_back_in_bounded_time():
    """Cache and rate limiter on a black hole with a 0.2 s timeout: each call returns (from
    this process) instead of hanging, and each part says it is down."""
    from kernel.cache import FallbackCache, RedisCache
    from kernel.http.ratelimit import FallbackRateLimiter, RedisRateLimiter

    async with BlackHole() as hole:
        url = f"redis://127.0.0.1:{hole.port}/0"
        cache = FallbackCache(RedisCache(url, namespace="hang:", timeout=0.2))
        limiter = FallbackRateLimiter(RedisRateLimiter(url, namespace="hang:", timeout=0.2))
        try:
            async with asyncio.timeout(BOUND):
                await cache.set("k", "v", ttl=60)
                assert await cache.get("k") == "v"  # the per-process fallback kept it
                decision = await limiter.hit("login:1.2.3.4", limit=5, window=60)
                assert decision.allowed is True and decision.remaining == 4
        finally:
            await cache.close()
            await limiter.close()
        assert cache.outage.up is False and limiter.outage.up is False
        assert hole.connections >= 2  # each part did reach the black hole


async def test_a_paused_redis_falls_back_then_recovers(make_app, redis_url):
    """The app's Redis behind a frozen proxy: a login is still answered (rate limit in this
    process) once the 0.3 s timeout passes, a live-topic publish returns (skipped), and the
    limiter goes back to Redis after the thaw."""
    from redis.asyncio import Redis
    from sqlalchemy.engine import make_url

    real = make_url(redis_url)
    with FreezableProxy(real.port or 6379) as proxy:
        via_proxy = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        app = await make_app(env={"SVC_REDIS_URL": via_proxy, "SVC_REDIS_TIMEOUT": "1.0"})
        outage, topics = app.kernel.rate_limiter.outage, app.kernel.topics
        outage.retry_seconds = 0.0  # try Redis again at the next call
        await app.login()
        assert outage.up is True and topics.redis_connected is True
        proxy.freeze()
        try:
            async with asyncio.timeout(BOUND):
                await app.login()  # 200: the limiter's call timed out and fell back
                await topics.publish("s1", "posts.items", {"id": "1"})  # no socket timeout before: hung
            assert outage.up is False and outage.fallbacks >= 1
            assert topics.publish_outage.up is False and topics.stats.publish_failures == 1
        finally:
            proxy.thaw()
        async with asyncio.timeout(BOUND):
            await app.login()
        assert outage.up is True
        client = Redis.from_url(redis_url)
        try:
            namespace = app.kernel.settings.redis_namespace
            assert await client.keys(f"{namespace}:ratelimit:*")  # counted on Redis again
        finally:
            await client.aclose()


def redis_counts(kernel: Any) -> dict[str, tuple[int, int]]:
    """Per Redis part of the app: (calls Redis did not answer, operations its fallback served)."""
    return {o.component: (o.failures, o.fallbacks) for o in outages_of(kernel)}


async def test_one_write_on_a_paused_redis_waits_for_one_part_not_each(make_app, redis_url):
    """The cache, the rate limiter, the bus and the topics share the process's Redis state
    (``kernel.redis_circuit``): with Redis frozen, an item create (a rate-limit hit, cache
    invalidations, the bus fan-out, the live-topic publish) meets one timeout, and the other
    parts go to their fallback at once; each part waited its own ``SVC_REDIS_TIMEOUT`` before.
    After the thaw one probe, whichever part makes it, brings every part back to Redis."""
    from sqlalchemy.engine import make_url

    from kernel.testing import Calls

    real = make_url(redis_url)
    with FreezableProxy(real.port or 6379) as proxy:
        via_proxy = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        app = await make_app(env={"SVC_REDIS_URL": via_proxy, "SVC_REDIS_TIMEOUT": "1.0"})
        kernel, circuit = app.kernel, app.kernel.redis_circuit
        headers = {"Authorization": f"Bearer {await app.login()}"}
        site = await app.create_site(headers)
        calls = Calls(app.client, {**headers, "X-Svc-Site": site})
        await calls.collection("posts", {"title": "string"})
        await calls.create("posts", {"title": "warm"})  # every part has spoken to Redis once
        assert circuit.up is True and all(f == 0 for f, _ in redis_counts(kernel).values())
        circuit.retry_seconds = 3600.0  # no probe during the write, however slow the machine
        before = redis_counts(kernel)
        proxy.freeze()
        try:
            async with asyncio.timeout(BOUND):
                await calls.create("posts", {"title": "during"})
            during = redis_counts(kernel)
        finally:
            proxy.thaw()
        paid = {part: during[part][0] - before[part][0] for part in during}
        touched = {part for part in during if during[part] != before[part]}
        assert sum(paid.values()) == 1, paid  # one timeout for the whole write
        assert {"rate limits", "cache", "bus", "topics"} <= touched, touched  # each part had Redis work
        assert circuit.up is False and circuit.outages == 1 and circuit.probes == 0
        assert all(o.up is False for o in outages_of(kernel))
        metrics = samples((await app.client.get("/metrics", headers=METRICS_HEADERS)).text)
        assert metrics[("svc_redis_up", (("component", "cache"),))] == 0
        assert metrics[("svc_redis_up", (("component", "topics"),))] == 0
        assert metrics[("svc_redis_outages_total", ())] == 1
        assert sum(v for (name, _), v in metrics.items() if name == "svc_redis_failures_total") == 1

        circuit.retry_seconds = 0.0  # the next call probes
        async with asyncio.timeout(BOUND):
            item = await calls.create("posts", {"title": "after"})
        back = redis_counts(kernel)
        assert circuit.up is True and circuit.probes == 1  # one probe answered: every part is back
        assert back == {part: (during[part][0], during[part][1]) for part in during}  # no fallback since
        assert (await calls.get("posts", item["id"]))["title"] == "after"
