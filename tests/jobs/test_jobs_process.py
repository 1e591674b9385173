"""Real processes: a write committed just before SIGKILL still gets its job run, by `svc worker`'s
loop (``JobQueue.run_worker``) in another process, which stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kernel.testing import svc_test_database_url

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import asyncio, os, signal, sys
from pathlib import Path
from kernel.app import build_kernel, shutdown_kernel, startup_kernel
from kernel.base.settings import Settings

role, data = sys.argv[1], Path(sys.argv[2])
env = {"SVC_DATA_DIR": str(data), "JWT_SECRET": "x" * 40, "SVC_ADMIN_PASSWORD": "pw-pw-pw-pw",
       "SVC_JOBS_INPROCESS": "false", "SVC_JOBS_POLL_MS": "100"}
if os.environ.get("SVC_DATABASE_URL"):
    env["SVC_DATABASE_URL"] = os.environ["SVC_DATABASE_URL"]
kernel = build_kernel(Settings.from_env(environ=env), plugins=[])

async def write(k, site_id, text):
    # Written whole, then renamed: the test polls for "out" and must never read it half-written.
    (data / "out.tmp").write_text(f"{type(k).__name__}:{site_id}:{text}")
    os.replace(data / "out.tmp", data / "out")

kernel.jobs.task("demo.write", write)

async def commit_then_die():
    await startup_kernel(kernel)
    async with kernel.unit_of_work("default") as uow:
        await uow.enqueue("demo.write", site_id="default", text="hello")
    os.kill(os.getpid(), signal.SIGKILL)  # right after the commit: no shutdown, no flush

async def startup():  # what `svc worker` hands run_worker
    await startup_kernel(kernel)
    return kernel

async def shutdown(k):
    await shutdown_kernel(k)
    (data / "shutdown").write_text("done")

if role == "writer":
    asyncio.run(commit_then_die())
else:
    kernel.jobs.run_worker(startup, shutdown, workers=2, grace=5)
    (data / "exited").write_text("yes")
"""


def spawn(role: str, data: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if svc_test_database_url():
        env["SVC_DATABASE_URL"] = svc_test_database_url()
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-c", SCRIPT, role, str(data)], env=env, stdout=out,
                                stderr=subprocess.STDOUT)


async def test_a_job_committed_before_sigkill_runs_in_the_next_worker_process(make_app, tmp_path):
    data = tmp_path / "data"
    await make_app(plugins=[], data_dir=data)  # a migrated database there (SQLite) or empty tables (PostgreSQL)
    log = tmp_path / "processes.log"

    writer = spawn("writer", data, log)
    assert await asyncio.to_thread(writer.wait, 60) == -signal.SIGKILL, log.read_text()
    assert not (data / "out").exists()

    worker = spawn("worker", data, log)
    try:
        deadline = time.monotonic() + 60  # a cold interpreter start on a busy machine
        while not (data / "out").exists() and worker.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert (data / "out").read_text() == "Kernel:default:hello", log.read_text()
        worker.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(worker.wait, 30)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert code == 0, log.read_text()
    assert (data / "shutdown").read_text() == "done"
    assert (data / "exited").exists()
