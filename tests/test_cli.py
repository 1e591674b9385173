"""The svc command, run as a user would: migrate, sites, plugins, serve."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from kernel.testing import svc_test_database_url


def run_svc(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernel.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=Path(__file__).resolve().parents[1])


@pytest.fixture
def env(tmp_path):
    base = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    base.update(SVC_DATA_DIR=str(tmp_path / "data"), SVC_ADMIN_PASSWORD="cli-admin-pass", JWT_SECRET="x" * 40)
    # The CLI tests use their own SQLite file even in the PostgreSQL run: they create and list
    # sites, which must not leak into the shared test database of other tests.
    return base


def test_migrate_is_idempotent(env):
    first = run_svc("migrate", env=env)
    assert first.returncode == 0, first.stderr
    assert "kernel_0003_events" in first.stdout
    second = run_svc("migrate", env=env)
    assert second.returncode == 0 and second.stdout == first.stdout


def test_sites_create_and_list(env):
    created = run_svc("sites", "create", "blog", "--name", "My Blog", env=env)
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout.strip().splitlines()[-1])["id"] == "blog"
    listed = run_svc("sites", "list", env=env)
    ids = [line.split("\t")[0] for line in listed.stdout.splitlines() if "\t" in line]
    assert ids == ["blog", "default"]
    dup = run_svc("sites", "create", "blog", env=env)
    assert dup.returncode == 1 and "already exists" in dup.stderr
    bad = run_svc("sites", "create", "Bad Id", env=env)
    assert bad.returncode == 1


def test_plugins_list_shows_state_and_registrations(env):
    out = run_svc("plugins", "list", "--json", env={**env, "SVC_PLUGINS_DISABLED": "utils"})
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["utils"]["enabled"] is False
    assert rows["accounts"]["enabled"] and rows["accounts"]["essential"]
    assert "/api/v1/auth/login" in rows["accounts"]["routes"]
    assert "svc_users" in rows["accounts"]["tables"]
    assert rows["accounts"]["requires"] == ["access"]
    text = run_svc("plugins", "list", env=env)
    assert "accounts" in text.stdout and "enabled (essential)" in text.stdout


def test_disabling_an_essential_plugin_stops_the_start(env):
    out = run_svc("plugins", "list", env={**env, "SVC_PLUGINS_DISABLED": "accounts"})
    assert out.returncode == 2
    assert "'accounts' is essential" in out.stderr


def test_bad_setting_stops_the_start(env):
    out = run_svc("migrate", env={**env, "SVC_PORT": "not-a-port"})
    assert out.returncode == 2 and "SVC_PORT" in out.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(bool(svc_test_database_url()), reason="serve smoke test runs on the embedded default only")
def test_serve_answers_and_runs_jobs_in_process(env):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                resp = httpx.get(f"http://127.0.0.1:{port}/api/v1/openapi.json", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise AssertionError("svc serve did not start") from None
                time.sleep(0.2)
        assert resp.status_code == 200 and resp.json()["openapi"].startswith("3.1")
        login = httpx.post(f"http://127.0.0.1:{port}/api/v1/auth/login",
                           json={"email": "admin@example.com", "password": "cli-admin-pass"})
        assert login.status_code == 200
        assert (Path(env["SVC_DATA_DIR"]) / "queue.lock").exists()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert proc.returncode == 0, proc.stdout.read() if proc.stdout else ""
