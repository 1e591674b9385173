"""Shared parts of the delivery fault scripts (worker_kill, disk_full, slow_webhook; redis_down,
postgres_restart and hang use faultkit.py alone): real ``svc`` processes on PostgreSQL and Redis
(or SQLite), a recording HTTP receiver on loopback, and the JSON verdict. The API client
(``Api``), ``wait_until`` and ``ROOT`` are faultkit's; ``quantile`` is ``bench/loadclient.py``'s.

Every wait is bounded in count and time; every process a script starts is stopped by it (by its
own pid) in a ``finally``. Nothing listens beyond 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from faultkit import PASSWORD as ADMIN_PASSWORD
from faultkit import ROOT, Api, wait_until
from loadclient import quantile  # faultkit put bench/ on sys.path

__all__ = ["DEFAULT_DATABASE", "DEFAULT_REDIS", "Api", "Deployment", "Receiver", "Received", "Route", "clear_redis",
           "quantile", "reset_postgres", "verdict", "wait_until"]

ADMIN_EMAIL = "admin@example.com"
ENCRYPTION_KEY = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="  # base64 of 32 ASCII bytes
DEFAULT_DATABASE = "postgresql://postgres@127.0.0.1:5432/svc_test_faultsb"
DEFAULT_REDIS = "redis://127.0.0.1:6379/13"


# ------------------------------------------------------------------------------- receiver

@dataclass
class Received:
    at: float  # time.monotonic() when the request arrived
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Route:
    delay: float = 0.0  # seconds to sleep before answering
    status: int = 200
    body: Any = None


class Receiver:
    """A threaded HTTP server on 127.0.0.1:``port`` that records every request and answers each
    path prefix as its ``Route`` says (a delay, a status). A delayed answer sleeps in its own
    thread, so one slow path never holds another back."""

    def __init__(self, port: int = 0) -> None:
        self.lock = threading.Lock()
        self.got: list[Received] = []
        self.routes: dict[str, Route] = {}
        self.stopping = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                seen = Received(time.monotonic(), self.command, parts.path, parse_qs(parts.query),
                                {k.lower(): v for k, v in self.headers.items()}, body)
                route = receiver.route(parts.path)
                with receiver.lock:
                    receiver.got.append(seen)
                if route.delay:
                    receiver.stopping.wait(route.delay)  # interruptible, so stop() is quick
                data = json.dumps(route.body).encode()
                try:
                    self.send_response(route.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (a timeout): nothing to answer

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815 - the stdlib's names

            def log_message(self, *args: Any) -> None:
                return None

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128

            def handle_error(self, request: Any, client_address: Any) -> None:
                return None  # a client killed mid-request (the point of these scripts) is no news

        self.httpd = Server(("127.0.0.1", port), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def route(self, path: str) -> Route:
        best = ""
        for prefix in self.routes:
            if path.startswith(prefix) and len(prefix) > len(best):
                best = prefix
        return self.routes.get(best, Route())

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def requests(self, prefix: str) -> list[Received]:
        with self.lock:
            return [r for r in self.got if r.path.startswith(prefix)]

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


# ------------------------------------------------------------------------------- svc processes

def reset_postgres(url: str) -> None:
    """Drop and create the database of ``url`` (its own, named by the task)."""
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    assert name.startswith("svc_test_"), f"refusing to reset {name!r}: only svc_test_* databases"
    admin = ["psql", "-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432),
             "-U", parts.username or "postgres", "-q", "test"]
    subprocess.run([*admin, "-c", f'drop database if exists "{name}" with (force)', "-c", f'create database "{name}"'],
                   check=True, capture_output=True, timeout=60)


def clear_redis(url: str, namespace: str) -> int:
    """Delete the keys of ``namespace`` in the Redis database of ``url``; how many."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(f"{namespace}:*", count=500))
        for start in range(0, len(keys), 500):
            client.delete(*keys[start:start + 500])
        return len(keys)
    finally:
        client.close()


@dataclass
class Deployment:
    """One svc deployment's environment: a data dir, the database, Redis, and settings."""

    data_dir: Path
    database_url: str | None = DEFAULT_DATABASE
    redis_url: str | None = DEFAULT_REDIS
    extra: dict[str, str] = field(default_factory=dict)
    namespace: str = field(default_factory=lambda: f"svcfault{uuid.uuid4().hex[:8]}")
    procs: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def env(self, **more: str) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(ROOT),
               "SVC_DATA_DIR": str(self.data_dir), "SVC_ADMIN_EMAIL": ADMIN_EMAIL,
               "SVC_ADMIN_PASSWORD": ADMIN_PASSWORD, "JWT_SECRET": "fault-jwt-secret-" + "x" * 40,
               "SVC_ENCRYPTION_KEY": ENCRYPTION_KEY, "SVC_LOG_LEVEL": "warning",
               "SVC_REDIS_NAMESPACE": self.namespace, "SVC_RATE_LIMIT_ITEMS_WRITE": "0",
               "SVC_RATE_LIMIT_ITEMS_READ": "0", "SVC_RATE_LIMIT_AUTH": "0", "SVC_RATE_LIMIT_UPLOAD": "0",
               "SVC_RATE_LIMIT_CDC": "0", "SVC_OUTBOUND_ALLOW_NETWORKS": "127.0.0.1/32",  # the receiver
               "SVC_METRICS_PUBLIC": "true",  # scraped without a token, on the loopback
               **self.extra, **more}
        if self.database_url:
            env["SVC_DATABASE_URL"] = self.database_url
        if self.redis_url:
            env["SVC_REDIS_URL"] = self.redis_url
        return env

    def _start(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.data_dir / f"{name}.log", "ab")  # noqa: SIM115 - the child writes it
        proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", *args], env=env, cwd=str(ROOT),
                                stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.procs.append((name, proc))
        return proc

    def migrate(self) -> None:
        subprocess.run([sys.executable, "-m", "kernel.cli", "migrate"], env=self.env(), cwd=str(ROOT), check=True,
                       capture_output=True, timeout=300)

    def serve(self, port: int, workers: int = 2, **more: str) -> subprocess.Popen[bytes]:
        proc = self._start(f"serve-{port}", ["serve", "--port", str(port), "--workers", str(workers)],
                           self.env(**more))
        api = Api(f"http://127.0.0.1:{port}")
        try:
            wait_until(lambda: proc.poll() is None and api.healthy(), 120, "svc serve to answer", step=0.2)
        finally:
            api.close()
        if proc.poll() is not None:
            raise RuntimeError(self.log_tail(f"serve-{port}"))
        return proc

    def worker(self, name: str = "worker", **more: str) -> subprocess.Popen[bytes]:
        return self._start(name, ["worker"], self.env(**more))

    def log_tail(self, name: str, size: int = 3000) -> str:
        path = self.data_dir / f"{name}.log"
        return path.read_text(errors="replace")[-size:] if path.exists() else ""

    def stop(self, proc: subprocess.Popen[bytes], grace: float = 20.0) -> None:
        """SIGTERM ``proc`` (one this deployment started), then SIGKILL after ``grace`` seconds."""
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def stop_all(self) -> None:
        for _name, proc in reversed(self.procs):
            self.stop(proc)


def verdict(name: str, ok: bool, **details: Any) -> dict[str, Any]:
    """Print the JSON verdict of a scenario on stdout and return it."""
    out = {"scenario": name, "ok": bool(ok), **details}
    print(json.dumps(out, indent=2, sort_keys=False, default=str))
    return out
