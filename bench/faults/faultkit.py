"""What the fault scripts share: private Redis and PostgreSQL servers, svc processes, HTTP helpers
(``Api``, ``wait_until``: ``deliverykit.py`` builds on them; ``bench/loadclient.py`` has the
``/proc`` readers and the port checks).

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
sys.path.insert(0, str(ROOT / "bench"))
from loadclient import port_open, tree  # noqa: E402 - bench/ is not a package

__all__ = ["Api", "PrivatePostgres", "PrivateRedis", "Svc", "base_env", "metric_values", "port_open",
           "server_pid_of", "tree", "verdict", "wait_until", "workdir"]
BIN = Path(sys.executable).parent
PASSWORD = "faults-pass-1"
PG_BIN = Path("/usr/lib/postgresql/15/bin")


def wait_until(check: Callable[[], bool], seconds: float, what: str = "condition", step: float = 0.1) -> float:
    """Call ``check`` every ``step`` seconds until it is true (a check that raises counts as not
    yet), for at most ``seconds``; the seconds it took. ``TimeoutError`` naming ``what``."""
    started = time.monotonic()
    deadline = started + seconds
    while True:
        with contextlib.suppress(Exception):
            if check():
                return time.monotonic() - started
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what} not within {seconds} s")
        time.sleep(step)


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
        # The scenarios scrape /metrics without a token: on the loopback, an operator's choice.
        "SVC_METRICS_PUBLIC": "true",
    })
    env.update(extra)
    return env


class Api:
    """A small synchronous client of one svc at ``root`` (``http://127.0.0.1:PORT``), as the
    instance admin once ``login`` ran; ``site`` is the default ``X-Svc-Site``."""

    def __init__(self, root: str, site: str | None = None, timeout: float = 60.0, password: str = PASSWORD) -> None:
        self.base = root
        self.http = httpx.Client(base_url=root, timeout=timeout)
        self.token: str | None = None
        self.site = site
        self.password = password

    def close(self) -> None:
        self.http.close()

    def healthy(self) -> bool:
        try:
            return self.http.get("/api/v1/utils/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def wait_healthy(self, seconds: float = 120) -> None:
        wait_until(self.healthy, seconds, "svc to answer health", step=0.3)

    def headers(self, site: str | None = None) -> dict[str, str]:
        out = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        if site or self.site:
            out["X-Svc-Site"] = site or self.site or ""
        return out

    def login(self) -> None:
        resp = self.http.post("/api/v1/auth/login", json={"email": "admin@example.com", "password": self.password})
        resp.raise_for_status()
        self.token = resp.json()["data"]["token"]

    def call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        """``method`` of ``/api/v1<path>``; ``site=`` another site than the default."""
        headers = {**self.headers(kw.pop("site", None)), **kw.pop("headers", {})}
        return self.http.request(method, f"/api/v1{path}", headers=headers, **kw)

    def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        """The answer's ``data``; RuntimeError for any other status than ``status``."""
        resp = self.call(method, path, **kw)
        if resp.status_code != status:
            raise RuntimeError(f"{method.upper()} {path}: expected {status}, got {resp.status_code}: {resp.text[:500]}")
        return resp.json().get("data") if resp.content else None

    def create_site(self, site_id: str) -> str:
        self.ok("post", "/sites", 201, json={"id": site_id, "name": site_id}, site="")
        return site_id

    def collection(self, name: str, fields: dict[str, str]) -> None:
        self.ok("post", "/collections", 201, json={"name": name, "fields": [
            {"field": f, "type": t} for f, t in fields.items()]})

    def make_site(self, collection: str = "posts") -> str:
        """A fresh site (the default from now on) with ``collection`` of one ``title``."""
        self.site = self.create_site(f"f{uuid.uuid4().hex[:8]}")
        self.collection(collection, {"title": "string"})
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
