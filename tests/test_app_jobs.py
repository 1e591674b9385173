"""Jobs registered by a plugin run inside the app: the in-process consumer of the embedded default."""

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


async def test_plugin_job_runs_in_process(make_app):
    plugin = JobPlugin()
    app = await make_app(plugins=[plugin], jobs_inprocess=True)
    redis = app.kernel.jobs.backend == "redis"
    if redis:  # with Redis, `svc worker` consumes; stand in for it here
        app.kernel.jobs.start_consumer()
    else:
        assert app.kernel.state.get("consumer") is not None  # this app won the consumer lock
    try:
        await app.kernel.jobs.enqueue("jobplugin.note", siteId="default", n=1)
        await asyncio.wait_for(plugin.done.wait(), 15)
    finally:
        if redis:
            await app.kernel.jobs.stop_consumer()
    assert plugin.ran == [(app.kernel, {"siteId": "default", "n": 1})]
    assert {"name": "jobplugin.note", "kind": "task", "owner": "jobplugin"}.items() <= \
        next(j for j in app.kernel.jobs.registered() if j["name"] == "jobplugin.note").items()


async def test_only_one_app_per_data_dir_consumes(make_app, tmp_path):
    one = await make_app(data_dir=tmp_path / "shared", jobs_inprocess=True)
    two = await make_app(data_dir=tmp_path / "shared", jobs_inprocess=True)
    if one.kernel.jobs.backend == "sqlite":
        assert one.kernel.state.get("consumer") is not None
        assert two.kernel.state.get("consumer") is None
