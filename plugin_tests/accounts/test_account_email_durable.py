"""A sign-up's verification email survives the death of the process that answered it (issue 36,
point 4): `svc serve` answers the sign-up with no job runner of its own and is killed (SIGKILL,
no shutdown); `svc worker`, started afterwards on the same data dir, sends the email, and its
link is one the database accepts."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from kernel.testing import Mailbox, free_port, stop_process, svc_test_database_url, wait_until_answering

REPO = Path(__file__).resolve().parents[2]
ADMIN_PASSWORD = "durable-admin-pass"


def svc(command: list[str], data: Path, mailbox: Mailbox, log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(PYTHONPATH=str(REPO), SVC_DATA_DIR=str(data), JWT_SECRET="d" * 40, SVC_ADMIN_PASSWORD=ADMIN_PASSWORD,
               SVC_SMTP_HOST="127.0.0.1", SVC_SMTP_PORT=str(mailbox.port), SVC_JOBS_POLL_MS="100",
               SVC_JOBS_INPROCESS="false")  # `svc serve` runs no job: only the queue can send
    return subprocess.Popen([sys.executable, "-m", "kernel.cli", *command], env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT)


@pytest.mark.skipif(bool(svc_test_database_url()), reason="the embedded default (SQLite); one process run suffices")
def test_the_verification_email_leaves_after_the_answering_process_died(tmp_path, mailbox):
    data = tmp_path / "data"
    port = free_port()
    base = f"http://127.0.0.1:{port}/api/v1"
    email = f"durable-{uuid.uuid4().hex[:8]}@example.com"
    server = svc(["serve", "--port", str(port)], data, mailbox, tmp_path / "serve.log")
    try:
        wait_until_answering(server, f"{base}/utils/version")
        login = httpx.post(f"{base}/auth/login", json={"email": "admin@example.com", "password": ADMIN_PASSWORD})
        assert login.status_code == 200, login.text
        admin = {"Authorization": f"Bearer {login.json()['data']['token']}"}
        assert httpx.post(f"{base}/sites", json={"id": "durable", "name": "Durable"}, headers=admin).status_code == 201
        resp = httpx.post(f"{base}/auth/register", json={"email": email, "password": "durable-pass-1"},
                          headers={"X-Svc-Site": "durable"})
        assert resp.status_code == 202, resp.text
    finally:
        stop_process(server, signal.SIGKILL)  # answered, not sent: the process dies with no shutdown
    assert mailbox.messages(email) == []  # nothing ran the job in that process

    worker = svc(["worker"], data, mailbox, tmp_path / "worker.log")
    try:
        deadline = time.monotonic() + 60
        while not mailbox.messages(email):
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            assert time.monotonic() < deadline, "svc worker sent no email within 60 s: " + (
                tmp_path / "worker.log").read_text()[-2000:]
            time.sleep(0.1)
    finally:
        stop_process(worker)
    [message] = mailbox.messages(email)
    assert "/verify-email?token=" in message.get_content() and "site=durable" in message.get_content()
    token = Mailbox.token(message)
    with sqlite3.connect(data / "svc.sqlite3") as db:
        rows = db.execute("SELECT purpose, used_at FROM svc_one_time_tokens WHERE token_hash = ?",
                          (hashlib.sha256(token.encode()).hexdigest(),)).fetchall()
        queued = db.execute("SELECT count(*) FROM svc_jobs WHERE name = 'accounts.email'").fetchone()[0]
    assert rows == [("verify_email", None)]  # the link works: its token is the one stored, unused
    assert queued == 0  # the job is done, not waiting for another try
