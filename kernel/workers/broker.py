"""The local broker of ``svc serve --workers N`` without Redis: one truth across the workers.

Without Redis, each worker of one node would otherwise keep live topics, cache drops, rate-limit
counts and connection caps to itself. The supervising process of ``svc serve`` (the parent that
starts the workers) runs this broker on a thread, on a Unix socket in the data dir (mode 0600),
and hands its path to the workers in ``SVC_BROKER_SOCKET``. A worker talks to it through
``BrokerClient``, which speaks the subset of redis-py that the kernel uses for fan-out
(``pubsub()``, ``PUBLISH`` alone or in a pipeline), so the bus and the topics have one code path
whichever serves them; the rate limiter and the connection caps call ``slide``, ``admit`` and
``release``. See docs/decisions/multi-worker-without-redis.md.

``kernel.workers.fanout_gate.FanoutGate`` is the worker's side of the numbering.

Protocol: frames of a 4-byte big-endian length and an orjson array. Client to broker:
``["sub"|"psub"|"unsub"|"punsub", [names]]``, ``["pub", id, channel, data, gen]``,
``["slide", id, key, limit, width_ms]``, ``["admit", id, key, limit, lease]``,
``["hold", key, lease]`` (re-list a lease after a reconnect), ``["release", id, key, lease]``.
Broker to client: ``["hello", gen]`` first, ``["ok", id, value]``, ``["subscribe"|"psubscribe",
name]``, ``["m", channel, data, gen]`` and ``["pm", pattern, channel, data, gen]``.

- **Publishing never waits for subscribers**: the broker writes each frame into the subscriber
  connections' buffers and answers the publisher; a subscriber whose buffer holds more than
  ``MAX_BUFFERED`` bytes is disconnected (it reconnects, and its topics say ``Lagged(None)``).
- **The generation**: a publish with ``gen`` set (the bus's channel) bumps a counter kept in an
  8-byte file mapped by every worker (``<socket>.gen``) *before* the publisher gets its answer.
  A worker compares it with the last bus message it handled before it answers a request
  (``kernel.workers.fanout_gate.FanoutGate``), so a drop made by a write on another worker is applied before the next
  request that depends on it is answered.
- **Leases live as long as the connection**: a worker that dies closes its connection and its
  connection slots go with it; a worker that reconnects lists the slots it still holds again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import mmap
import os
import re
import struct
import threading
import time
import uuid
from collections import deque
from pathlib import Path
from typing import Any

import orjson

from kernel.workers.fanout_gate import GEN as _GEN
from kernel.workers.fanout_gate import gen_path

log = logging.getLogger("svc.broker")

SCHEME = "svc-broker://"
MAX_FRAME = 1 << 20
MAX_BUFFERED = 8 << 20  # a subscriber this far behind is dropped, never waited for
_LEN = struct.Struct(">I")
_TEMP_PREFIX = "svc-broker-"


def broker_url(socket_path: str) -> str:
    """The fan-out URL of the broker at ``socket_path`` (given where a Redis URL would be)."""
    return SCHEME + socket_path


def _glob(pattern: str) -> re.Pattern[str]:
    """A Redis glob (``*``, ``?``, ``\\`` escapes) as a regular expression."""
    out, chars = [], iter(pattern)
    for ch in chars:
        if ch == "\\":
            out.append(re.escape(next(chars, "\\")))
        elif ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        else:
            out.append(re.escape(ch))
    return re.compile("".join(out), re.DOTALL)


def _frame(item: Any) -> bytes:
    body = orjson.dumps(item)
    return _LEN.pack(len(body)) + body


async def _read_frame(reader: asyncio.StreamReader) -> Any:
    (size,) = _LEN.unpack(await reader.readexactly(4))
    if size > MAX_FRAME:
        raise ConnectionError(f"broker frame of {size} bytes")
    return orjson.loads(await reader.readexactly(size))


# ---------------------------------------------------------------------------------- the broker


class _Peer:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.leases: set[tuple[str, str]] = set()

    def send(self, item: Any) -> None:
        transport = self.writer.transport
        if transport.is_closing():
            return
        if transport.get_write_buffer_size() > MAX_BUFFERED:
            log.warning("broker: dropping a subscriber %d bytes behind", transport.get_write_buffer_size())
            transport.abort()
            return
        self.writer.write(_frame(item))


class BrokerServer:
    """Publish/subscribe, sliding-window counts and leases for the workers of one node."""

    def __init__(self, socket_path: str) -> None:
        from kernel.http.ratelimit import MemoryRateLimiter

        self.path = socket_path
        self.channels: dict[str, set[_Peer]] = {}
        self.patterns: dict[str, tuple[re.Pattern[str], set[_Peer]]] = {}
        self.leases: dict[str, dict[str, _Peer]] = {}
        self.limits = MemoryRateLimiter()
        self.published = 0
        self.peers: set[_Peer] = set()
        self._server: asyncio.AbstractServer | None = None
        fd = os.open(gen_path(socket_path), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.ftruncate(fd, _GEN.size)
            self._gen_map = mmap.mmap(fd, _GEN.size)
        finally:
            os.close(fd)
        self.gen = 0

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        old = os.umask(0o177)  # the socket is created 0600: only this user's processes connect
        try:
            self._server = await asyncio.start_unix_server(self._serve, path=self.path)
        finally:
            os.umask(old)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for peer in list(self.peers):
                peer.writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
        for name in (self.path, gen_path(self.path)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
        if Path(self.path).parent.name.startswith(_TEMP_PREFIX):  # socket_path_for's own directory
            with contextlib.suppress(OSError):
                os.rmdir(Path(self.path).parent)
        self._gen_map.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = _Peer(writer)
        self.peers.add(peer)
        peer.send(["hello", self.gen])
        try:
            while True:
                self._handle(peer, await _read_frame(reader))
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, struct.error):
            pass
        except asyncio.CancelledError:
            pass  # the broker stops
        except Exception:  # noqa: BLE001 - a frame it cannot take ends that connection, not the broker
            log.exception("broker: closing a connection after a frame it could not handle")
        finally:
            self.peers.discard(peer)
            self._forget(peer)
            writer.close()

    def _handle(self, peer: _Peer, item: list[Any]) -> None:
        op = item[0]
        if op == "pub":
            _, rid, channel, data, bump = item
            if bump:
                self.gen += 1
                self._gen_map[:] = _GEN.pack(self.gen)  # before anyone hears of it
            self._publish(channel, data, self.gen if bump else 0)
            peer.send(["ok", rid, self.gen])
        elif op in ("sub", "psub"):
            for name in item[1]:
                if op == "sub":
                    self.channels.setdefault(name, set()).add(peer)
                else:
                    self.patterns.setdefault(name, (_glob(name), set()))[1].add(peer)
                # The generation at this point: a worker that subscribes to the bus has missed
                # nothing numbered after it.
                peer.send(["subscribe" if op == "sub" else "psubscribe", name, self.gen])
        elif op in ("unsub", "punsub"):
            table: dict[str, Any] = self.channels if op == "unsub" else self.patterns
            for name in item[1]:
                entry = table.get(name)
                peers = entry if op == "unsub" else (entry[1] if entry else None)
                if peers is not None:
                    peers.discard(peer)
                    if not peers:
                        del table[name]
        elif op == "slide":
            _, rid, key, limit, width = item
            peer.send(["ok", rid, self.limits.hit_ms(key, limit, width)])
        elif op == "admit":
            _, rid, key, limit, lease = item
            held = self.leases.setdefault(key, {})
            ok = len(held) < limit
            if ok:
                held[lease] = peer
                peer.leases.add((key, lease))
            peer.send(["ok", rid, ok])
        elif op == "hold":
            _, key, lease = item
            self.leases.setdefault(key, {})[lease] = peer
            peer.leases.add((key, lease))
        elif op == "release":
            _, rid, key, lease = item
            self._drop_lease(key, lease)
            peer.leases.discard((key, lease))
            peer.send(["ok", rid, True])

    def _publish(self, channel: str, data: str, gen: int) -> None:
        self.published += 1
        for peer in list(self.channels.get(channel, ())):
            peer.send(["m", channel, data, gen])
        for name, (regex, peers) in list(self.patterns.items()):
            if regex.fullmatch(channel):
                for peer in list(peers):
                    peer.send(["pm", name, channel, data, gen])

    def _drop_lease(self, key: str, lease: str) -> None:
        held = self.leases.get(key)
        if held is not None:
            held.pop(lease, None)
            if not held:
                del self.leases[key]

    def _forget(self, peer: _Peer) -> None:
        for peers in self.channels.values():
            peers.discard(peer)
        for _, peers in self.patterns.values():
            peers.discard(peer)
        self.channels = {k: v for k, v in self.channels.items() if v}
        self.patterns = {k: v for k, v in self.patterns.items() if v[1]}
        for key, lease in peer.leases:
            self._drop_lease(key, lease)


class BrokerThread:
    """The broker on a thread of its own event loop, for the parent of ``svc serve``."""

    def __init__(self, socket_path: str) -> None:
        self.path = socket_path
        self._loop = asyncio.new_event_loop()
        self._server = BrokerServer(socket_path)
        self._thread = threading.Thread(target=self._run, name="svc-broker", daemon=True)
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._server.start())
        except BaseException as exc:  # noqa: BLE001 - reported by start()
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._server.stop())
        self._loop.close()

    def start(self) -> BrokerThread:
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)


def socket_path_for(data_dir: Path) -> str:
    """``<data dir>/broker.sock``, or a private temporary directory when that path is longer than
    a Unix socket address may be."""
    path = str(Path(data_dir).resolve() / "broker.sock")
    if len(path.encode()) <= 100:
        return path
    import tempfile

    return str(Path(tempfile.mkdtemp(prefix=_TEMP_PREFIX)) / "broker.sock")


# ---------------------------------------------------------------------------------- the client


class _Connection:
    """One socket to the broker: answers go to waiting futures, messages to a queue."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, hello_gen: int) -> None:
        self.reader, self.writer = reader, writer
        self.hello_gen = hello_gen
        self.answers: dict[int, asyncio.Future[Any]] = {}
        self.messages: deque[dict[str, Any]] = deque()
        self.arrived = asyncio.Event()
        self.closed = False
        self._task = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def open(cls, path: str, timeout: float) -> _Connection:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_unix_connection(path, limit=MAX_FRAME + 4)
            hello = await _read_frame(reader)
        return cls(reader, writer, int(hello[1]))

    async def _read(self) -> None:
        try:
            while True:
                item = await _read_frame(self.reader)
                kind = item[0]
                if kind == "ok":
                    future = self.answers.pop(item[1], None)
                    if future is not None and not future.done():
                        future.set_result(item[2])
                    continue
                if kind == "m":
                    message = {"type": "message", "pattern": None, "channel": item[1], "data": item[2],
                               "gen": item[3]}
                elif kind == "pm":
                    message = {"type": "pmessage", "pattern": item[1], "channel": item[2], "data": item[3],
                               "gen": item[4]}
                else:
                    message = {"type": kind, "pattern": None, "channel": item[1], "data": 1, "gen": item[2]}
                self.messages.append(message)
                self.arrived.set()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, struct.error, OSError):
            pass
        finally:
            self.closed = True
            self.arrived.set()
            for future in self.answers.values():
                if not future.done():
                    future.set_exception(ConnectionError("the broker connection closed"))
            self.answers.clear()
            self.writer.close()

    def send(self, item: Any) -> None:
        if self.closed:
            raise ConnectionError("the broker connection closed")
        self.writer.write(_frame(item))

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task


class BrokerPubSub:
    """redis-py's ``PubSub`` subset the bus and the topics use, on a connection of its own."""

    def __init__(self, client: BrokerClient) -> None:
        self.client = client
        self._conn: _Connection | None = None

    async def _connection(self) -> _Connection:
        if self._conn is None or self._conn.closed:
            self._conn = await _Connection.open(self.client.path, self.client.timeout)
        return self._conn

    async def subscribe(self, *channels: Any) -> None:
        (await self._connection()).send(["sub", [_text(c) for c in channels]])

    async def psubscribe(self, *patterns: Any) -> None:
        (await self._connection()).send(["psub", [_text(p) for p in patterns]])

    async def unsubscribe(self, *channels: Any) -> None:
        (await self._connection()).send(["unsub", [_text(c) for c in channels]])

    async def punsubscribe(self, *patterns: Any) -> None:
        (await self._connection()).send(["punsub", [_text(p) for p in patterns]])

    async def get_message(self, ignore_subscribe_messages: bool = False, timeout: float = 0.0) -> Any:
        """The next message, or None after ``timeout`` seconds; ``ConnectionError`` once the
        broker connection is gone (never a silent new connection: it would hold no subscription)."""
        conn = self._conn
        if conn is None:
            raise ConnectionError("not subscribed to anything on the broker")
        deadline = time.monotonic() + timeout
        while True:
            while conn.messages:
                message = conn.messages.popleft()
                if ignore_subscribe_messages and message["type"] in ("subscribe", "psubscribe"):
                    continue
                return message
            if conn.closed:
                raise ConnectionError("the broker connection closed")
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            conn.arrived.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await conn.arrived.wait()

    @property
    def hello_gen(self) -> int:
        return self._conn.hello_gen if self._conn is not None else 0

    async def aclose(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None


class _Pipeline:
    def __init__(self, client: BrokerClient) -> None:
        self.client = client
        self.commands: list[tuple[Any, ...]] = []

    def execute_command(self, *args: Any) -> None:
        self.commands.append(args)

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        sent = [self.client._send_command(*args) for args in self.commands]
        return list(await asyncio.gather(*[_answer(s) for s in sent], return_exceptions=not raise_on_error))


async def _answer(sent: Any) -> Any:
    return await sent


class BrokerClient:
    """A worker's connection to the broker at ``path``: requests and ``PUBLISH``; ``pubsub()``
    opens a connection of its own. ``gen_channels``: publishes on these bump the generation."""

    def __init__(self, path: str, *, timeout: float = 2.0, gen_channels: tuple[str, ...] = ()) -> None:
        self.path = path
        self.timeout = timeout
        self.gen_channels = set(gen_channels)
        self.held: dict[tuple[str, str], None] = {}  # leases this process holds: listed again on reconnect
        self._conn: _Connection | None = None
        self._connecting: asyncio.Lock | None = None
        self._ids = itertools.count(1)

    async def _connection(self) -> _Connection:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._conn is None or self._conn.closed:
                conn = await _Connection.open(self.path, self.timeout)
                for key, lease in self.held:
                    conn.send(["hold", key, lease])
                self._conn = conn
        return self._conn

    async def _request(self, op: str, *args: Any) -> Any:
        conn = await self._connection()
        rid = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        conn.answers[rid] = future
        try:
            conn.send([op, rid, *args])
            async with asyncio.timeout(self.timeout):
                return await asyncio.shield(future)
        finally:
            conn.answers.pop(rid, None)

    def _send_command(self, *args: Any) -> Any:
        name = str(args[0]).upper()
        if name != "PUBLISH":
            raise ValueError(f"the broker takes PUBLISH, not {name}")
        channel, data = _text(args[1]), _text(args[2])
        return self._request("pub", channel, data, channel in self.gen_channels)

    async def execute_command(self, *args: Any) -> Any:
        return await self._send_command(*args)

    async def publish(self, channel: str, data: Any) -> int:
        return int(await self._send_command("PUBLISH", channel, data))

    def pipeline(self, transaction: bool = False) -> _Pipeline:
        return _Pipeline(self)

    def pubsub(self) -> BrokerPubSub:
        return BrokerPubSub(self)

    async def slide(self, key: str, limit: int, width_ms: int) -> tuple[bool, int, int]:
        """One hit on the node-wide sliding window ``key``: (allowed, remaining, reset ms)."""
        allowed, remaining, reset = await self._request("slide", key, limit, width_ms)
        return bool(allowed), int(remaining), int(reset)

    async def admit(self, key: str, limit: int) -> str | None:
        """A lease on one of ``limit`` slots of ``key`` across the node, or None when all are held."""
        lease = uuid.uuid4().hex
        if not await self._request("admit", key, limit, lease):
            return None
        self.held[(key, lease)] = None
        return lease

    async def release(self, key: str, lease: str) -> None:
        self.held.pop((key, lease), None)
        with contextlib.suppress(ConnectionError, OSError, TimeoutError):  # a lost connection lost the lease
            await self._request("release", key, lease)

    async def ping(self) -> bool:
        await self._connection()
        return True

    async def aclose(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray, memoryview)) else str(value)
