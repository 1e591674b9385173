"""``svc serve --workers N`` on SO_REUSEPORT sockets (kernel/workers/serve.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from kernel.testing import free_port, stop_process, svc_test_database_url, wait_until_answering
from kernel.workers.serve import bind_reuseport, reuseport_supported, serve_reuseport

linux_only = pytest.mark.skipif(not reuseport_supported(1, 2), reason="SO_REUSEPORT sockets need Linux")


def test_when_reuseport_is_used():
    assert not reuseport_supported(8000, 1)  # one worker: uvicorn.run as before
    assert not reuseport_supported(0, 2)  # port 0: each worker would get a port of its own


@linux_only
def test_two_reuseport_sockets_share_a_port_that_a_plain_listener_refuses():
    first = bind_reuseport("127.0.0.1", 0)
    port = first.getsockname()[1]
    try:
        second = bind_reuseport("127.0.0.1", port)
        second.close()
    finally:
        first.close()
    with socket.socket() as plain:
        plain.bind(("127.0.0.1", 0))
        plain.listen(1)
        with pytest.raises(OSError):
            bind_reuseport("127.0.0.1", plain.getsockname()[1])


@linux_only
def test_a_port_held_by_another_program_fails_the_start(capsys):
    with socket.socket() as plain:
        plain.bind(("127.0.0.1", 0))
        plain.listen(1)
        port = plain.getsockname()[1]
        assert serve_reuseport("127.0.0.1", port, 2, {}) == 1
    assert f"cannot bind 127.0.0.1:{port}" in capsys.readouterr().err


@linux_only
@pytest.mark.skipif(bool(svc_test_database_url()), reason="serve smoke test runs on the embedded default only")
def test_two_workers_answer_and_stop_cleanly(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(SVC_DATA_DIR=str(tmp_path / "data"), SVC_ADMIN_PASSWORD="cli-admin-pass", JWT_SECRET="x" * 40)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", "serve", "--port", str(port), "--workers", "2"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        resp = wait_until_answering(proc, f"http://127.0.0.1:{port}/api/v1/utils/version")
        assert resp.status_code == 200
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        assert len(children) >= 2  # the two workers (spawn may add its resource tracker)
        # Fresh connections (no keep-alive): every one of them is answered, whichever worker takes it.
        statuses = {httpx.get(f"http://127.0.0.1:{port}/api/v1/utils/version", timeout=5).status_code
                    for _ in range(8)}
        assert statuses == {200}
    finally:
        code = stop_process(proc, timeout=40)
    out = proc.stdout.read() if proc.stdout else ""
    assert code == 0, out
    assert "with 2 workers (SO_REUSEPORT)" in out


def test_the_start_lines_say_what_differs_between_one_process_and_several():
    from types import SimpleNamespace

    from kernel.workers.serve import differences

    assert differences(SimpleNamespace(redis_url=""), 1) == []  # one process: nothing differs
    alone = differences(SimpleNamespace(redis_url=""), 3)
    assert any("several nodes need Redis" in line for line in alone)
    assert any("3 times it in all" in line for line in alone)
    shared = differences(SimpleNamespace(redis_url="redis://127.0.0.1:6379/0"), 2)
    assert any("through Redis pub/sub" in line for line in shared)
    assert not any("several nodes need Redis" in line for line in shared)
    assert all("\n" not in line for line in alone + shared)  # one line each
