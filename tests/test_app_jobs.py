"""Jobs registered by a plugin run inside the app, and the operator's view of the queue."""

from __future__ import annotations

import asyncio

from kernel import hookimpl


class JobPlugin:
    name = "jobplugin"

    def __init__(self) -> None:
        self.ran: list[tuple[object, dict]] = []
        self.done = asyncio.Event()

    @hookimpl
    def register_jobs(self, jobs, kernel):
        async def note(k, **kwargs):
            self.ran.append((k, kwargs))
            self.done.set()

        jobs.task("jobplugin.note", note, owner=self.name)


async def test_plugin_job_runs_in_the_apps_own_worker(make_app):
    plugin = JobPlugin()
    # The embedded default: without Redis, the app consumes its queue itself.
    app = await make_app(plugins=[plugin], jobs_inprocess=True, redis_url="", jobs_poll_ms=50)
    assert app.kernel.state.get("consumer") is not None and app.kernel.jobs.consumer_running
    async with app.kernel.unit_of_work("default") as uow:
        await uow.enqueue("jobplugin.note", site_id="default", n=1)
    await asyncio.wait_for(plugin.done.wait(), 15)
    assert plugin.ran == [(app.kernel, {"site_id": "default", "n": 1})]
    listed = next(j for j in app.kernel.jobs.registered() if j["name"] == "jobplugin.note")
    assert {"name": "jobplugin.note", "kind": "task", "owner": "jobplugin"}.items() <= listed.items()


async def test_only_one_app_per_data_dir_consumes_on_sqlite(make_app, tmp_path):
    one = await make_app(data_dir=tmp_path / "shared", jobs_inprocess=True, redis_url="")
    two = await make_app(data_dir=tmp_path / "shared", jobs_inprocess=True, redis_url="")
    assert one.kernel.state.get("consumer") is not None
    assert two.kernel.state.get("consumer") is None


async def test_admin_jobs_shows_counts_and_failures_to_the_instance_admin_only(
        make_app, run_due_jobs, make_member, svc_app, site, site_b, admin_headers):
    app = svc_app
    app.kernel.jobs.task("jobplugin.broken", _broken, retries=0, owner="jobplugin")
    await app.kernel.jobs.enqueue("jobplugin.broken", site_id=site)
    await app.kernel.jobs.enqueue("jobplugin.broken", site_id=site_b, delay=3600)
    await run_due_jobs(app.kernel)

    resp = await app.client.get("/api/v1/admin/jobs", headers=admin_headers)
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    row = next(j for j in data["jobs"] if j["name"] == "jobplugin.broken")
    assert (row["pending"], row["due"], row["failed"], row["owner"]) == (1, 0, 1, "jobplugin")
    assert data["totals"]["failed"] >= 1
    [failure] = [f for f in data["recentFailures"] if f["name"] == "jobplugin.broken"]
    assert failure["siteId"] == site and failure["error"] == f"LookupError: nothing to do in {site}"

    # ?site= narrows every count and failure to that site.
    only_b = (await app.client.get(f"/api/v1/admin/jobs?site={site_b}", headers=admin_headers)).json()["data"]
    row_b = next(j for j in only_b["jobs"] if j["name"] == "jobplugin.broken")
    assert (row_b["pending"], row_b["failed"]) == (1, 0) and only_b["recentFailures"] == []

    site_admin = await make_member(site, "admin")
    resp = await app.client.get("/api/v1/admin/jobs", headers=site_admin.headers)
    assert resp.status_code == 403 and resp.json()["errors"][0]["code"] == "PERMISSION_DENIED"
    assert (await app.client.get("/api/v1/admin/jobs")).status_code == 401
    for bad in ("failures=abc", "failures=101", "site=Not%20A%20Site"):
        resp = await app.client.get(f"/api/v1/admin/jobs?{bad}", headers=admin_headers)
        assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "VALIDATION_FAILED", bad


async def _broken(kernel, site_id):
    raise LookupError(f"nothing to do in {site_id}")
