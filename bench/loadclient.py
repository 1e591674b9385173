"""What the benchmark scripts share (``items_http_bench.py``, ``scale_sites.py``, ``soak.py``,
``fairness_bench.py``, ``delivery_bench.py``, ``realtime_bench.py``, the fault scripts, ...):

- ``Http``: a keep-alive HTTP/1.1 client on asyncio streams, one request at a time per
  connection, with headers fixed per connection and more per request (so one connection can
  serve many sites); ``wait_healthy`` for a ``svc serve`` just started;
- ``Server`` and ``server_env``: ``svc serve --workers N`` on a loopback port;
- ``/proc`` readings: a process tree (``tree``), its CPU seconds (``cpu_seconds``), the
  PostgreSQL server's processes (``database_pids``), RSS (``proc_status``, ``rss_mb``) and open
  file descriptors (``open_fds``);
- ``quantile`` and ``percentile`` (nearest rank), ``free_port``;
- ``WsClient``: a minimal WebSocket client for load runs.

Only the standard library: a script imports it as a sibling (``bench/`` is the script's folder;
the fault scripts put it on ``sys.path``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

API = "/api/v1"
PASSWORD = "bench-pass-1"
ADMIN_EMAIL = "admin@example.com"
JWT_SECRET = "bench-secret-0123456789-0123456789-0123"
SVC = str(Path(sys.executable).with_name("svc"))
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class Http:
    """One keep-alive HTTP/1.1 connection; ``request`` returns ``(status, body bytes)``.
    ``headers`` go with every request, before the request's own."""

    def __init__(self, host: str, port: int, headers: dict[str, str] | None = None) -> None:
        self.host, self.port = host, port
        self.fixed = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()
            self.reader = self.writer = None

    async def request(self, method: str, target: str, body: Any = None,
                      headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        for attempt in (0, 1):
            fresh = self.writer is None
            if fresh:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            assert self.reader is not None and self.writer is not None
            head = f"{method} {target} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self.fixed}"
            head += "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
            payload = b""
            if body is not None:
                payload = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
                head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
            try:
                self.writer.write(head.encode() + b"\r\n" + payload)
                return await self._response()
            except (ConnectionError, asyncio.IncompleteReadError):
                await self.close()
                if fresh or attempt:  # a kept-alive socket the server closed gets one retry
                    raise
        raise AssertionError("unreachable")

    async def _response(self) -> tuple[int, bytes]:
        assert self.reader is not None
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        fields = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
        if "content-length" in fields:
            body = await self.reader.readexactly(int(fields["content-length"]))
        elif fields.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while size := int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16):
                parts.append(await self.reader.readexactly(size))
                await self.reader.readexactly(2)
            await self.reader.readuntil(b"\r\n")
            body = b"".join(parts)
        else:
            body = b""
        if fields.get("connection", "").lower() == "close":
            await self.close()
        return status, body

    async def data(self, method: str, target: str, body: Any = None, headers: dict[str, str] | None = None,
                   expect: int | tuple[int, ...] = (200, 201)) -> Any:
        """The response's ``data``; anything but ``expect`` stops the benchmark with the body."""
        status, payload = await self.request(method, target, body, headers)
        wanted = (expect,) if isinstance(expect, int) else expect
        if status not in wanted:
            raise SystemExit(f"{method} {target}: {status} {payload[:300]!r}")
        return json.loads(payload)["data"] if payload else None


async def wait_healthy(host: str, port: int, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    """Until ``/utils/health`` answers (anything below 500) on ``host:port``; SystemExit when
    ``proc`` (the ``svc serve`` started for it) exits first or ``timeout`` seconds pass."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"svc serve exited with {proc.returncode}")
        conn = Http(host, port)
        try:
            status, _ = await conn.request("GET", f"{API}/utils/health")
            if status < 500:
                return
        except OSError:
            pass
        finally:
            await conn.close()
        await asyncio.sleep(0.2)
    raise SystemExit(f"svc serve did not answer within {timeout:.0f} s")


def stop_server(proc: subprocess.Popen[bytes], grace: float = 30.0) -> None:
    """SIGINT ``proc`` (a ``svc serve`` the script started), SIGKILL after ``grace`` seconds."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()


def quantile(values: list[float], q: float, empty: Any = 0.0) -> Any:
    """The ``q`` quantile (0..1) of ``values`` by nearest rank (the value at ``int(q * n)`` of
    the sorted values), in their unit; ``empty`` for none."""
    if not values:
        return empty
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (seconds) in milliseconds, to 0.01; 0 for none."""
    return round(1000 * quantile(values, q), 2)


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts connections on ``host:port`` now."""
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def refuse_taken(host: str, port: int) -> None:
    """SystemExit when ``host:port`` is taken: a server left there would be measured instead."""
    if port_open(port, host):
        raise SystemExit(f"{host}:{port} is taken: stop what listens there or pass --port")


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now (for a server the script starts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (uvicorn's supervisor and its workers)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of ``pids`` so far (a process that is gone counts 0)."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except OSError:
            pass
    return total / CLOCK_TICKS


def database_pids() -> list[int]:
    """The PostgreSQL server's processes on this machine (its CPU is the request's too)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as fh:
                    if fh.read().strip() in ("postgres", "postmaster"):
                        out.append(int(entry))
            except OSError:
                continue
    return out


def proc_status(pid: int, field: str) -> int:
    """A ``/proc/<pid>/status`` figure in kB (``VmRSS``), 0 when the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_bytes(pid: int | None = None) -> int:
    """Resident memory of ``pid`` (this process by default) in bytes, 0 when it is gone."""
    return 1024 * proc_status(os.getpid() if pid is None else pid, "VmRSS")


def rss_mb(pid: int | None = None) -> float:
    """Resident memory of ``pid`` (this process by default) in MiB, to 0.1."""
    return round(rss_bytes(pid) / 2**20, 1)


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def server_env(database_url: str, redis_url: str, data_dir: str, **extra: str) -> dict[str, str]:
    """The environment of a benchmark's ``svc`` commands: rate limits off, a fixed secret."""
    env = {**os.environ, "SVC_DATA_DIR": data_dir, "SVC_DATABASE_URL": database_url,
           "SVC_ADMIN_EMAIL": ADMIN_EMAIL, "SVC_ADMIN_PASSWORD": PASSWORD, "JWT_SECRET": JWT_SECRET,
           "SVC_RATE_LIMIT_ITEMS_READ": "0", "SVC_RATE_LIMIT_ITEMS_WRITE": "0", "SVC_RATE_LIMIT_AUTH": "0",
           "SVC_ACCESS_TOKEN_TTL": "86400", "SVC_LOG_LEVEL": "WARNING", **extra}
    if redis_url:
        env["SVC_REDIS_URL"] = redis_url
    return env


class Server:
    """``svc serve --workers N`` on a loopback port: start, wait for /health, stop."""

    def __init__(self, env: dict[str, str], port: int, workers: int, log_path: str) -> None:
        self.env, self.port, self.workers, self.log_path = env, port, workers, log_path
        self.proc: subprocess.Popen[bytes] | None = None

    async def start(self, timeout: float = 300.0) -> float:
        """Start and wait for the first 200 of ``/utils/health``; returns the seconds it took."""
        log = open(self.log_path, "ab")  # noqa: SIM115 - the server's for its life
        started = time.perf_counter()
        self.proc = subprocess.Popen([SVC, "serve", "--host", "127.0.0.1", "--port", str(self.port),
                                      "--workers", str(self.workers)], env=self.env, stdout=log, stderr=log,
                                     start_new_session=True)
        conn = Http("127.0.0.1", self.port)
        while time.perf_counter() - started < timeout:
            if self.proc.poll() is not None:
                raise SystemExit(f"svc serve exited with {self.proc.returncode}; see {self.log_path}")
            try:
                status, _ = await conn.request("GET", f"{API}/utils/health")
                if status == 200:
                    await conn.close()
                    return time.perf_counter() - started
            except OSError:
                pass
            await conn.close()
            await asyncio.sleep(0.05)
        raise SystemExit(f"svc serve did not answer /health within {timeout:.0f} s")

    def worker_pids(self) -> list[int]:
        """The uvicorn workers (not the supervisor, nor multiprocessing's resource tracker)."""
        assert self.proc is not None
        out = []
        for pid in tree(self.proc.pid):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmdline = fh.read()
            except OSError:
                continue
            if pid != self.proc.pid and b"resource_tracker" not in cmdline:
                out.append(pid)
        return sorted(out)

    async def wait_workers(self, timeout: float = 120.0) -> list[int]:
        """The worker pids once every worker answers (each binds its own socket)."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            pids = self.worker_pids()
            if len(pids) >= self.workers:
                return pids
            await asyncio.sleep(0.1)
        return self.worker_pids()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None


async def admin_token(conn: Http, site: str = "default") -> str:
    data = await conn.data("POST", f"{API}/auth/login", {"email": ADMIN_EMAIL, "password": PASSWORD},
                           {"X-Svc-Site": site}, expect=200)
    return data["token"]


class WsClient(asyncio.Protocol):
    """A minimal WebSocket client for load runs (RFC 6455): the opening handshake, masked text
    frames out, and each unmasked text frame in handed to ``on_text`` from ``data_received``
    (pings answered with pongs). No extensions and no fragmented messages: svc sends neither.

    A thousand sockets of the ``websockets`` library cost this client about 0.2 ms of CPU per
    frame (a reader task woken per message): on a 2-core machine the load generator then took
    a core from the server it measured. Parsing frames in the protocol callback costs a tenth."""

    def __init__(self, on_text: Any = None) -> None:
        self.on_text = on_text
        self.transport: asyncio.Transport | None = None
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed = asyncio.get_running_loop().create_future()
        self.buffer = bytearray()
        self.handshake_done = False

    @classmethod
    async def connect(cls, host: str, port: int, target: str, on_text: Any = None,
                      timeout: float = 10.0) -> WsClient:
        loop = asyncio.get_running_loop()
        _, client = await loop.create_connection(lambda: cls(on_text), host, port)
        key = base64.b64encode(os.urandom(16)).decode()
        assert client.transport is not None
        client.transport.write((f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                                "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        await asyncio.wait_for(asyncio.shield(client.opened), timeout)
        return client

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(ConnectionError("closed during the handshake"))
        if not self.closed.done():
            self.closed.set_result(None)

    def send_text(self, text: str) -> None:
        self._send(0x1, text.encode())

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self._send(0x8, (1000).to_bytes(2, "big"))
            self.transport.close()

    def _send(self, opcode: int, payload: bytes) -> None:
        assert self.transport is not None
        mask = os.urandom(4)
        size = len(payload)
        head = bytes([0x80 | opcode])
        if size < 126:
            head += bytes([0x80 | size])
        elif size < 65536:
            head += bytes([0x80 | 126]) + size.to_bytes(2, "big")
        else:
            head += bytes([0x80 | 127]) + size.to_bytes(8, "big")
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes((mask * (size // 4 + 1))[:size], "big")
                  ).to_bytes(size, "big") if size else b""
        self.transport.write(head + mask + masked)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.handshake_done:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(self.buffer[:end]).split(b"\r\n", 1)[0]
            del self.buffer[:end + 4]
            if b" 101 " not in status + b" ":
                self.opened.set_exception(ConnectionError(status.decode("latin-1")))
                assert self.transport is not None
                self.transport.close()
                return
            self.handshake_done = True
            self.opened.set_result(None)
        buf = self.buffer
        while len(buf) >= 2:
            opcode, size, at = buf[0] & 0x0F, buf[1] & 0x7F, 2
            if size == 126:
                if len(buf) < 4:
                    return
                size, at = int.from_bytes(buf[2:4], "big"), 4
            elif size == 127:
                if len(buf) < 10:
                    return
                size, at = int.from_bytes(buf[2:10], "big"), 10
            if len(buf) < at + size:
                return
            payload = bytes(buf[at:at + size])
            del buf[:at + size]
            if opcode == 0x1 and self.on_text is not None:
                self.on_text(payload.decode())
            elif opcode == 0x9:
                self._send(0xA, payload)
            elif opcode == 0x8:
                assert self.transport is not None
                self.transport.close()
