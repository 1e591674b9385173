"""What a test's own app costs, piece by piece (issue 39 point 8): about 2,600 tests per pass
start an app of their own through the harness (``make_app``, ``svc_app``, ``calls``).

The script does what those fixtures do, ``--apps`` times in one process after a warm-up, with
the harness's settings (cheap password hashing, the shared compiled-statement cache, the heap
frozen as after collection): the database's preparation (the SQLite template's copy, or
PostgreSQL's emptying and first-start rows), building the app (``create_app``), its start
(``startup_kernel``), the instance admin's login, a site created through the API, one ``GET``,
and the stop. Each piece's figure is the process's CPU (``time.process_time``), the mean over
the apps in milliseconds. On PostgreSQL the server's CPU for the backends of the test database is
added (``/proc`` of each backend, read before the app stops: the emptier's long-lived backend by
its difference), so the server's share of a test is seen too.

    python bench/app_cost_bench.py [--apps 40]          # SQLite
    SVC_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/svc_bench python bench/app_cost_bench.py

Run the same command on two checkouts in turn (each with its own ``.venv``) to compare them.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from loadclient import cpu_seconds  # noqa: E402

PIECES = ("prepare", "build", "start", "login", "site", "get", "close")


def _backends(url: str, monitor_pid: int) -> list[int]:
    """The server processes serving the test database (but the monitoring connection)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return [pid for (pid,) in rows if pid != monitor_pid]


async def run(apps: int, warmup: int) -> dict[str, list[float]]:
    from importlib.metadata import entry_points

    import httpx

    import kernel.testing as harness
    from kernel.auth import passwords
    from kernel.db import compiled
    from kernel.db.migrate import upgrade
    from kernel.testing import (
        _MIGRATED_INDEXES,
        ADMIN_EMAIL,
        AppFactory,
        _all_migration_paths,
        _first_start,
        _index_names,
        svc_test_database_url,
    )

    for point in entry_points(group="pytest11"):  # the plugins' harness helpers (app.login, ...)
        point.load()
    passwords.use_parameters(passwords.CHEAP_PARAMETERS)
    compiled.share()
    base = Path(tempfile.mkdtemp(prefix="svc-app-cost-"))
    url = svc_test_database_url()
    if url:
        upgrade(url, _all_migration_paths())
        _MIGRATED_INDEXES[url] = _index_names(url)
        template = url
    else:
        path = base / "template" / "template.sqlite3"
        path.parent.mkdir()
        upgrade(f"sqlite:///{path}", _all_migration_paths())
        _first_start(path)
        template = str(path)
    gc.collect()
    gc.freeze()
    gc.set_threshold(5000, 10, 10)
    cost: dict[str, list[float]] = {piece: [] for piece in (*PIECES, "server")}
    seen: dict[int, float] = {}
    for n in range(warmup + apps):
        factory = AppFactory(template, base / f"t{n}", f"svcbench:{n}")
        data_dir = factory.base_dir / "app0"
        marks = [time.process_time()]
        settings = factory.settings(data_dir)
        await factory._prepare_database(data_dir, settings, False, default=True)
        marks.append(time.process_time())
        app = harness.create_app(settings)
        marks.append(time.process_time())
        await harness.startup_kernel(app.kernel)
        marks.append(time.process_time())
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
        test_app = harness.TestApp(app, app.kernel, client)
        factory.apps.append(test_app)
        token = await test_app.login(ADMIN_EMAIL)
        marks.append(time.process_time())
        admin = {"Authorization": f"Bearer {token}"}
        site = await test_app.create_site(admin)
        marks.append(time.process_time())
        resp = await client.get("/api/v1/collections", headers={**admin, "X-Svc-Site": site})
        assert resp.status_code == 200, resp.text
        marks.append(time.process_time())
        server = 0.0
        if url:
            pids = _backends(url, 0)
            for pid in pids:
                now = cpu_seconds([pid])
                server += now - seen.get(pid, 0.0)
                seen[pid] = now
        await factory.close()
        marks.append(time.process_time())
        if n >= warmup:
            for piece, (a, b) in zip(PIECES, zip(marks, marks[1:], strict=False), strict=True):
                cost[piece].append((b - a) * 1000)
            cost["server"].append(server * 1000)
    return cost


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--apps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    cost = asyncio.run(run(args.apps, args.warmup))
    backend = "PostgreSQL" if os.environ.get("SVC_TEST_DATABASE_URL") else "SQLite"
    total = sum(statistics.fmean(cost[p]) for p in PIECES)
    print(
        f"{backend}, {args.apps} apps, mean ms of CPU: "
        + ", ".join(f"{p} {statistics.fmean(cost[p]):.1f}" for p in PIECES)
        + f"; process {total:.1f}"
        + (f"; server {statistics.fmean(cost['server']):.1f}" if backend == "PostgreSQL" else "")
    )


if __name__ == "__main__":
    main()
