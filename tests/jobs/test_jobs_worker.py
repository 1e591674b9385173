"""`svc worker`: JobQueue.run_worker in a real process, stopped by a real signal."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from kernel.jobs import JobQueue

REPO = Path(__file__).resolve().parents[2]


WORKER_SCRIPT = """
import sys
from pathlib import Path
from types import SimpleNamespace
from kernel.jobs import JobQueue

data, name = Path(sys.argv[1]), sys.argv[2]

class Kernel:
    async def shutdown(self):
        (data / "shutdown").write_text("done")

async def factory():
    return Kernel()

async def write(kernel, text):
    (data / "out").write_text(type(kernel).__name__ + ":" + text)

queue = JobQueue(SimpleNamespace(data_path=data, redis_url=""), name=name)
queue.task("demo.write", write)
queue.run_worker(factory, workers=1)
(data / "exited").write_text("yes")
"""


async def test_run_worker_consumes_until_sigterm_then_shuts_the_kernel_down(tmp_path):
    async def placeholder(kernel, text):
        pass

    producer = JobQueue(SimpleNamespace(data_path=tmp_path, redis_url=""), name="svcworker")
    producer.task("demo.write", placeholder)
    await producer.enqueue("demo.write", text="hello")
    producer.close()

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", WORKER_SCRIPT, str(tmp_path), "svcworker"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 20  # a cold interpreter start on a busy machine
        while not (tmp_path / "out").exists() and proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert (tmp_path / "out").read_text() == "Kernel:hello"
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(proc.wait, 10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, log.read_text()
    assert (tmp_path / "shutdown").read_text() == "done"
    assert (tmp_path / "exited").exists()
