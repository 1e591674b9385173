"""A real ``svc`` process (``svc serve`` with in-process jobs on SQLite, ``svc worker`` with
PostgreSQL and Redis) publishes a scheduled release that fell due while no worker ran."""

from __future__ import annotations

import asyncio
import datetime as dt

from sqlalchemy import select

from kernel.db.meta import now_utc
from kernel.testing import Calls, start_dispatching_process, stop_process
from plugin_tests.releases.conftest import draft_posts, release
from plugins.releases.tables import releases


async def test_a_worker_started_after_the_due_time_publishes_the_release(make_app, tmp_path):
    data = tmp_path / "data"
    app = await make_app(data_dir=data)
    calls = Calls(app.client, {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"})
    ids = await draft_posts(calls, "a", "b")
    rel = await release(calls, ids, publishAt=(now_utc() + dt.timedelta(seconds=1)).isoformat())
    status: list[str] = []

    async def settled() -> bool:
        async with app.kernel.db.connect() as conn:
            status.append((await conn.execute(select(releases.c.status).where(releases.c.id == rel["id"]))).scalar())
        return status[-1] != "scheduled"

    proc = start_dispatching_process(data, env={"SVC_JOBS_INPROCESS": "true", "SVC_JOBS_POLL_MS": "100"})
    try:
        for _ in range(1800):  # 90 s: a cold interpreter start on a busy machine
            if await settled():
                break
            assert proc.poll() is None, (data / "svc.log").read_text()[-3000:]
            await asyncio.sleep(0.05)
    finally:
        stop_process(proc)
    assert status[-1] == "published", (data / "svc.log").read_text()[-3000:]
    assert [(await calls.get("posts", i))["status"] for i in ids] == ["published", "published"]
