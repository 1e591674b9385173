"""``svc serve --workers N`` on SO_REUSEPORT sockets (kernel/workers/serve.py)."""

from __future__ import annotations

import socket

import pytest

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


# The smoke test of a real ``svc serve --workers 2`` (both workers answer fresh connections, the
# start says "with 2 workers (SO_REUSEPORT)", SIGTERM stops the parent and both workers with exit
# code 0) is tests/test_serve_workers_share.py's ``node`` fixture and its start-lines test: that
# module's two servers prove it, so no third one is started here.


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
