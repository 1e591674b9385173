"""A start costs the same whatever the number of sites (issue 27): no startup hook, background
task or first scan of the event dispatcher walks every site. At 10,000 sites such a walk cost
every worker some 150,000 queries (docs/performance.md, "Scale: 10,000 sites")."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import event

from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.testing import Calls
from plugins.items.upkeep import pg_statistics, search_backfill

SITES = 4


async def _settle(kernel: Any) -> None:
    """Wait for what a start runs in the background: the search backfill, the expression
    statistics (PostgreSQL) and the dispatcher's first scan with what it marked."""
    for key in (search_backfill.TASK, pg_statistics.TASK):
        task = kernel.state.get(key)
        if task is not None:
            await task
    dispatcher = kernel.events.dispatcher
    assert dispatcher is not None  # the default plugins register consumers
    for _ in range(500):  # a deadline, not a speed bound
        if dispatcher._scanned is not None:
            break
        await asyncio.sleep(0.01)
    assert dispatcher._scanned is not None
    await dispatcher.idle()


async def test_a_start_touches_no_site_of_a_settled_deployment(make_app: Any, svc_app: Any,
                                                              admin_headers: dict[str, str], tmp_path: Any):
    site_ids = []
    for _ in range(SITES):  # sites with a schema, items (so events) and search rows
        site_id = await svc_app.create_site(admin_headers)
        calls = Calls(svc_app.client, {**admin_headers, "X-Svc-Site": site_id})
        await calls.collection("posts", {"title": "string", "n": "integer"})
        await calls.create("posts", [{"title": "Heron"}, {"title": "Egret", "n": 2}])
        site_ids.append(site_id)
    await _settle(svc_app.kernel)

    app = create_app(make_app.settings(tmp_path / "app0"))  # the next start, on svc_app's data
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        statements.append(f"{statement} {parameters!r}")

    event.listen(app.kernel.db.engine.sync_engine, "before_cursor_execute", record)
    await startup_kernel(app.kernel)
    try:
        await _settle(app.kernel)
    finally:
        await shutdown_kernel(app.kernel)
    touched = sorted(s for s in site_ids if any(s in statement for statement in statements))
    assert touched == []
    assert len(statements) > 5  # the listener saw the start's own queries
