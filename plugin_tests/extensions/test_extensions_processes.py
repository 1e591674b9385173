"""Processes without an HTTP app load extensions too (issue 35, item 8): a real ``svc worker``
runs the job of an enabled extension that also has routes, and ``svc sites list`` with that
extension enabled prints no traceback. Such a process checks the routes and mounts none."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from extension_bundles import ENV, enable, install, write_extension

from kernel.testing import (
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    JWT_SECRET,
    Calls,
    stop_process,
    svc_test_database_url,
    until_in_process,
)

REPO = Path(__file__).resolve().parents[2]
ROUTED_WITH_JOB = '''
    from extensions_sdk import Route, hookimpl
    from kernel.http.media import send_data


    class Ping:
        async def on_get(self, req, resp):
            send_data(resp, {"pong": True})


    async def record(kernel, site_id, marker):
        print(f"{marker} {site_id}", flush=True)  # its runner writes to the server's output


    @hookimpl
    def register_routes(kernel):
        return [Route("/routed/ping", Ping(), auth="public", rate_limit="upload")]


    @hookimpl
    def register_jobs(jobs, kernel):
        jobs.task("ext.routed.record", record)
'''


async def _enabled(make_app, tmp_path: Path) -> tuple[object, str, Path]:
    """An app on ``tmp_path/data`` where ``routed`` (a route naming a plugin's rate-limit bucket,
    and a job) is installed, granted and enabled in a new site, answering there."""
    data = tmp_path / "data"
    app = await make_app(data_dir=data, env=ENV)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    ext = await install(app.client, admin, write_extension(tmp_path / "src", "routed", ROUTED_WITH_JOB,
                                                           ["routes", "jobs"]))
    await enable(calls, ext["id"], ["routes", "jobs"])
    assert await calls.ok("get", "/ext/routed/ping") == {"pong": True}
    return app, site, data


def _env(app, data: Path) -> dict[str, str]:
    """The environment of an ``svc`` process on the app's database, keys and Redis namespace."""
    settings = app.kernel.settings
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(REPO),
           "SVC_DATA_DIR": str(data), "SVC_ADMIN_EMAIL": ADMIN_EMAIL, "SVC_ADMIN_PASSWORD": ADMIN_PASSWORD,
           "JWT_SECRET": JWT_SECRET, "SVC_LOG_LEVEL": "info", "SVC_EVENTS_DISPATCH": "false",
           "SVC_JOBS_POLL_MS": "100", "SVC_REDIS_NAMESPACE": settings.redis_namespace, **ENV}
    if svc_test_database_url():
        env["SVC_DATABASE_URL"] = svc_test_database_url()
    if settings.redis_url:
        env["SVC_REDIS_URL"] = settings.redis_url
    return env


def _log_problems(text: str) -> list[str]:
    return [line for line in text.splitlines()
            if "Traceback" in line or "Error" in line or "could not be loaded" in line]


async def test_svc_worker_runs_the_job_of_an_extension_with_routes(make_app, tmp_path):
    app, site, data = await _enabled(make_app, tmp_path)
    marker = "the-job-ran-in"
    await app.kernel.jobs.enqueue("ext.routed.record", site_id=site, marker=marker)
    log = data / "svc.log"
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", "worker", "--workers", "1"],
                                env=_env(app, data), cwd=str(REPO), stdout=out, stderr=subprocess.STDOUT)
    try:
        await until_in_process(lambda: marker in log.read_text(), proc, data)
    finally:
        code = stop_process(proc)
    text = log.read_text()
    assert code == 0, text[-3000:]
    assert f"{marker} {site}" in text  # the extension's job, in the extension's site
    assert "extension routed 1.0.0 loaded" in text, text[-3000:]
    assert _log_problems(text) == [], text[-3000:]


async def test_svc_sites_list_with_an_extension_with_routes_prints_no_traceback(make_app, tmp_path):
    app, site, data = await _enabled(make_app, tmp_path)
    done = subprocess.run([sys.executable, "-m", "kernel.cli", "sites", "list"], env=_env(app, data),
                          cwd=str(REPO), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert site in [line.split("\t")[0] for line in done.stdout.splitlines()], done.stdout
    assert "extension routed 1.0.0 loaded" in done.stderr, done.stderr[-3000:]
    assert _log_problems(done.stdout + done.stderr) == [], done.stderr[-3000:]
