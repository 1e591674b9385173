"""What the fault scripts share: private Redis and PostgreSQL servers, svc processes, HTTP helpers.

The scripts never touch the machine's shared PostgreSQL (5432) or Redis (6379): each starts its
own Redis (``redis-server`` as a child process, killed and started again to make an outage) and
its own PostgreSQL 15 cluster (``initdb`` into a temporary directory owned by ``postgres``,
``pg_ctl`` to stop and start it). Every wait here is bounded in time, every loop in count, and
every address is on the loopback.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PASSWORD = "faults-pass-1"
PG_BIN = Path("/usr/lib/postgresql/15/bin")


def wait_until(check: Callable[[], bool], seconds: float, what: str, step: float = 0.1) -> None:
    """Call ``check`` until it is true, for at most ``seconds``; ``TimeoutError`` naming ``what``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(step)
    raise TimeoutError(f"{what} not within {seconds} s")


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


class PrivateRedis:
    """A throwaway ``redis-server`` on ``port``, nothing saved; ``stop`` kills it, ``start`` again."""

    def __init__(self, port: int, workdir: Path) -> None:
        self.port = port
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        if port_open(self.port):
            raise RuntimeError(f"port {self.port} is taken: is an earlier run's Redis still up?")
        log = open(self.workdir / "redis.log", "ab")  # noqa: SIM115 - the child writes it
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--dir", str(self.workdir)],
            stdout=log, stderr=subprocess.STDOUT)
        wait_until(lambda: port_open(self.port), 10, "Redis to listen")

    def subscribers(self, channel: str) -> int:
        """How many connections are subscribed to ``channel`` (PUBSUB NUMSUB)."""
        import redis

        with redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5) as client:
            return int(client.pubsub_numsub(channel)[0][1])

    def stop(self) -> None:
        """SIGKILL, as a crash or a network cut would leave it (clients see their sockets reset)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None


class PrivatePostgres:
    """A PostgreSQL 15 cluster in a temporary directory, on ``port`` over TCP and a socket there."""

    def __init__(self, port: int, workdir: Path) -> None:
        self.port = port
        self.root = workdir / "pg"
        self.data = self.root / "data"

    def _as_postgres(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["runuser", "-u", "postgres", "--", *argv], capture_output=True, text=True,
                              check=check, timeout=120)

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def init(self) -> None:
        if port_open(self.port):
            raise RuntimeError(f"port {self.port} is taken: is an earlier run's PostgreSQL still up?")
        self.root.mkdir(parents=True)
        shutil.chown(self.root, "postgres", "postgres")
        self._as_postgres(str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                          "--no-sync", "-E", "UTF8")

    def start(self) -> None:
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c max_connections=200")
        self._as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "server.log"),
                          "-o", options, "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop",
                          check=False)

    def psql(self, database: str, sql: str) -> str:
        out = self._as_postgres(str(PG_BIN / "psql"), "-h", str(self.root), "-p", str(self.port), "-U",
                                "postgres", "-d", database, "-AtqX", "-v", "ON_ERROR_STOP=1", "-c", sql)
        return out.stdout.strip()

    def createdb(self, name: str) -> None:
        self.psql("postgres", f"CREATE DATABASE {name}")


class Svc:
    """A ``svc`` command (``serve``, ``worker``) as a child process in its own session, log to a file."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], workdir: Path) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.log_path = workdir / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child writes it
        self.proc = subprocess.Popen([str(BIN / "svc"), *self.argv], env=self.env, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        """SIGTERM (graceful), then SIGKILL to its own process group after 20 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def descendants(pid: int) -> list[int]:
    """Every descendant process of ``pid`` (the uvicorn workers of ``svc serve``)."""
    out, todo = [], [pid]
    while todo:
        one = todo.pop()
        try:
            kids = [int(k) for k in Path(f"/proc/{one}/task/{one}/children").read_text().split()]
        except OSError:
            kids = []
        out.extend(kids)
        todo.extend(kids)
    return out


def server_pid_of(client_port: int, server_port: int) -> int | None:
    """The pid of the process holding the server end of the loopback connection from ``client_port``."""
    out = subprocess.run(["ss", "-Htnp", "state", "established", f"( sport = :{server_port} and dport = :{client_port} )"],
                         capture_output=True, text=True, timeout=10).stdout
    found = re.findall(r"pid=(\d+)", out)
    return int(found[0]) if found else None


def base_env(workdir: Path, **extra: str) -> dict[str, str]:
    """The environment of every svc process of a scenario (one data dir, one secret)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update({
        "SVC_DATA_DIR": str(workdir / "data"),
        "SVC_ADMIN_PASSWORD": PASSWORD,
        "JWT_SECRET": "faults-" + uuid.uuid4().hex * 2,
        "SVC_REDIS_NAMESPACE": f"faults-{uuid.uuid4().hex[:8]}",
        "SVC_LOG_LEVEL": "info",
        "REFRESH_COOKIE_SECURE": "false",
    })
    env.update(extra)
    return env


class Api:
    """A small synchronous client of one site, as the instance admin."""

    def __init__(self, base: str, timeout: float = 10.0) -> None:
        self.base = base
        self.http = httpx.Client(base_url=base, timeout=timeout)
        self.token = ""
        self.site = ""

    def headers(self, site: str | None = None) -> dict[str, str]:
        out = {"Authorization": f"Bearer {self.token}"}
        if site or self.site:
            out["X-Svc-Site"] = site or self.site
        return out

    def wait_healthy(self, seconds: float = 120) -> None:
        wait_until(lambda: self.http.get("/utils/health").status_code == 200, seconds, "svc to answer health",
                   step=0.3)

    def login(self) -> None:
        resp = self.http.post("/auth/login", json={"email": "admin@example.com", "password": PASSWORD})
        resp.raise_for_status()
        self.token = resp.json()["data"]["token"]

    def make_site(self, collection: str = "posts") -> str:
        self.site = f"f{uuid.uuid4().hex[:8]}"
        for method, path, body, site in (
            ("post", "/sites", {"id": self.site, "name": self.site}, "default"),
            ("post", "/collections", {"name": collection}, None),
            ("post", f"/fields/{collection}", {"field": "title", "type": "string"}, None),
        ):
            resp = self.http.request(method, path, json=body, headers=self.headers(site))
            if resp.status_code != 201:
                raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
        return self.site


def metric_values(text: str, name: str) -> dict[str, float]:
    """The samples of metric ``name`` in a Prometheus text page: labels text -> value."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            key, _, value = line.rpartition(" ")
            out[key[len(name):]] = float(value)
    return out


def verdict(name: str, checks: dict[str, bool], figures: dict[str, Any]) -> int:
    """Print the JSON verdict; the exit status is 0 when every check passed."""
    ok = all(checks.values())
    print(json.dumps({"scenario": name, "ok": ok, "checks": checks, "figures": figures}, indent=2, default=str))
    return 0 if ok else 1


def workdir(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=f"svc-faults-{prefix}-"))
    path.chmod(0o755)
    return path
