"""The db-rollup strategy's loss bound with real processes (issue 36, point 4; docs/delivery.md):
hits are buffered in the worker and written every ``flushIntervalS``; a worker killed with
SIGKILL loses only the hits since its last flush, and a clean stop (SIGTERM) loses none."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from kernel.testing import free_port, stop_process, svc_test_database_url, wait_until_answering

REPO = Path(__file__).resolve().parents[2]
ADMIN_PASSWORD = "rollup-admin-pass"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"


class Server:
    """One `svc serve` on the test's data dir."""

    def __init__(self, data: Path, log: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
        env.update(PYTHONPATH=str(REPO), SVC_DATA_DIR=str(data), JWT_SECRET="r" * 40, SVC_ADMIN_PASSWORD=ADMIN_PASSWORD)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}/api/v1"
        self.proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", "serve", "--port", str(self.port)],
                                     env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
        wait_until_answering(self.proc, f"{self.base}/utils/version")

    def hit(self, site: str, path: str) -> None:
        resp = httpx.post(f"{self.base}/pageviews/{site}/hit", content=b'{"path": "%s"}' % path.encode(),
                          headers={"User-Agent": BROWSER, "Content-Type": "text/plain;charset=UTF-8"})
        assert resp.status_code == 204, resp.text

    def end(self, sig: int) -> int:
        return stop_process(self.proc, sig)


def stored_views(data: Path, site: str) -> int:
    """The site's views written to the rollup table (every day, the site-total row)."""
    with sqlite3.connect(data / "svc.sqlite3") as db:
        (views,) = db.execute("SELECT coalesce(sum(views), 0) FROM svc_pageview_daily WHERE site_id = ? AND path = ''",
                              (site,)).fetchone()
    return int(views)


@pytest.mark.skipif(bool(svc_test_database_url()), reason="the embedded default (SQLite); one process run suffices")
def test_a_killed_worker_loses_only_the_hits_since_its_last_flush(tmp_path):
    data = tmp_path / "data"
    server = Server(data, tmp_path / "first.log")
    try:
        login = httpx.post(f"{server.base}/auth/login", json={"email": "admin@example.com", "password": ADMIN_PASSWORD})
        admin = {"Authorization": f"Bearer {login.json()['data']['token']}"}
        assert httpx.post(f"{server.base}/sites", json={"id": "pv", "name": "PV"}, headers=admin).status_code == 201

        def flush_every(seconds: int) -> None:
            resp = httpx.put(f"{server.base}/settings/pageviews", headers={**admin, "X-Svc-Site": "pv"},
                             json={"value": {"strategy": "db-rollup", "flushIntervalS": seconds, "botFilter": False}})
            assert resp.status_code == 200, resp.text

        flush_every(1)
        for path in ("/a", "/a", "/b"):
            server.hit("pv", path)
        deadline = time.monotonic() + 30
        while stored_views(data, "pv") < 3:
            assert time.monotonic() < deadline, f"not flushed within 30 s: {stored_views(data, 'pv')} views stored"
            time.sleep(0.1)
        flush_every(86400)  # from now on nothing is written before the kill
        server.hit("pv", "/a")
        server.hit("pv", "/c")
    finally:
        server.end(signal.SIGKILL)
    # The two hits since the last flush were only in the killed worker's memory.
    assert stored_views(data, "pv") == 3

    server = Server(data, tmp_path / "second.log")
    try:
        server.hit("pv", "/a")
        server.hit("pv", "/d")
        assert stored_views(data, "pv") == 3  # buffered: the interval is a day
    finally:
        code = server.end(signal.SIGTERM)
    log = (tmp_path / "second.log").read_text()
    # uvicorn finishes its shutdown, then ends by the signal it caught (Python's default action).
    assert code == -signal.SIGTERM and "Application shutdown complete." in log, log[-2000:]
    assert stored_views(data, "pv") == 5  # the clean stop wrote what it held
