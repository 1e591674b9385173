"""``svc worker``'s own ``/metrics`` (``kernel.metrics.worker``): the runs and failures of its
jobs, its slots, and the queue depths read from the database, in the Prometheus text format,
served by prometheus_client's HTTP server on the loopback; off unless a port is given."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from kernel.metrics.worker import WorkerMetrics
from kernel.testing import (
    ADMIN_PASSWORD,
    JWT_SECRET,
    free_port,
    svc_test_database_url,
    svc_test_redis_url,
    wait_until_answering,
)

REPO = Path(__file__).resolve().parents[2]


def answers(url: str, timeout: float) -> bool:
    """Whether anything answers HTTP at ``url``."""
    try:
        httpx.get(url, timeout=timeout)
    except httpx.TransportError:
        return False
    return True


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape: (name, sorted labels) -> value (the parser refuses a bad format)."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def test_the_worker_registry_counts_runs_failures_and_the_queue(make_app, run_due_jobs):
    app = await make_app(plugins=[])
    jobs = app.kernel.jobs
    for job in jobs.periodic_jobs():
        jobs.unregister(job.name)

    async def fine(kernel, **args):
        return None

    async def boom(kernel, **args):
        raise RuntimeError("no luck")

    jobs.task("wm.fine", fine)
    jobs.task("wm.boom", boom, retries=0)
    jobs.task("wm.flaky", boom, retries=3, retry_delay=3600)
    for name in ("wm.fine", "wm.fine", "wm.boom", "wm.flaky"):
        await jobs.enqueue(name, site_id="default")
    await run_due_jobs(app.kernel)

    metrics = WorkerMetrics(app.kernel)
    port = await metrics.start("127.0.0.1", 0)
    try:
        async with httpx.AsyncClient() as client:
            resp = await client.get(f"http://127.0.0.1:{port}/metrics")
    finally:
        await metrics.stop()
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/plain")
    got = samples(resp.text)
    assert got[("svc_job_runs_total", (("job", "wm.fine"), ("outcome", "succeeded")))] == 2
    assert got[("svc_job_runs_total", (("job", "wm.boom"), ("outcome", "failed")))] == 1
    assert got[("svc_job_runs_total", (("job", "wm.flaky"), ("outcome", "retry")))] == 1
    assert got[("svc_job_failures_total", (("job", "wm.boom"), ("outcome", "failed")))] == 1
    # From the database: the failed row, and the flaky one pending its retry an hour away.
    assert got[("svc_jobs_queued", (("job", "wm.boom"), ("state", "failed")))] == 1
    assert got[("svc_jobs_queued", (("job", "wm.flaky"), ("state", "pending")))] == 1
    assert ("svc_jobs_queued", (("job", "wm.flaky"), ("state", "due"))) not in got
    assert got[("svc_job_worker_running", ())] == 0
    assert not answers(f"http://127.0.0.1:{port}/metrics", timeout=1)  # stopped: the port no longer answers


async def test_svc_worker_serves_metrics_on_the_loopback(make_app, tmp_path):
    data = tmp_path / "data"
    app = await make_app(plugins=[], data_dir=data)  # a migrated database (SQLite) or empty tables (PostgreSQL)

    async def nothing(kernel, **args):
        return None

    app.kernel.jobs.task("wm.nobody.runs.this", nothing)  # registered here, not in the worker: stays queued
    await app.kernel.jobs.enqueue("wm.nobody.runs.this", site_id="default")
    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(REPO),
           "SVC_DATA_DIR": str(data), "SVC_ADMIN_PASSWORD": ADMIN_PASSWORD, "JWT_SECRET": JWT_SECRET,
           "SVC_LOG_LEVEL": "warning", "SVC_EVENTS_DISPATCH": "false", "SVC_NODE_ID": "worker-node"}
    if svc_test_database_url():
        env["SVC_DATABASE_URL"] = svc_test_database_url()
    if svc_test_redis_url():
        env.update(SVC_REDIS_URL=svc_test_redis_url(), SVC_REDIS_NAMESPACE=f"wm{port}")
    log = tmp_path / "worker.log"
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", "worker", "--metrics-port", str(port)],
                                env=env, cwd=str(REPO), stdout=out, stderr=subprocess.STDOUT)
    try:
        resp = wait_until_answering(proc, f"http://127.0.0.1:{port}/metrics")
        assert resp.status_code == 200, log.read_text()[-2000:]
        got = samples(resp.text)
        assert got[("svc_jobs_queued", (("job", "wm.nobody.runs.this"), ("state", "pending")))] == 1
        assert got[("svc_job_worker_slots", ())] == 10  # SVC_JOBS_CONCURRENCY's default
        assert got[("svc_node_info", (("hostname", socket.gethostname()), ("node", "worker-node")))] == 1
        families = {f.name for f in text_string_to_metric_families(resp.text)}
        assert {"svc_job_runs", "svc_job_failures", "svc_event_consumer_lag_events"} <= families
        if svc_test_redis_url():  # the Redis parts of this process, as on the API's /metrics
            assert got[("svc_redis_up", (("component", "cache"),))] == 1
        # Bound to 127.0.0.1: another local address of the machine is refused.
        assert not answers(f"http://127.0.0.2:{port}/metrics", timeout=2)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
    assert code == 0, log.read_text()[-2000:]
