"""Statements per run of the maintenance jobs at N idle sites (issue 27, "scale").

For each ``--sites`` count: a fresh in-process app (``inprocess.py``; SQLite unless
``--database-url``, dropped and made again for each count), that many sites made through the kernel's ``create_site`` (every plugin's
``site_created`` runs, nothing else is written), then one run of each hourly and daily
maintenance job, counting the SQL statements it sends (a ``before_cursor_execute`` listener)
and timing it. A job whose statements grow with the idle sites visits every site.

    .venv/bin/python bench/maintenance_bench.py --sites 10 1000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from inprocess import in_process_app
from scale_sites import reset_postgres

from kernel.testing import add_idle_sites, counted_statements

JOBS = ("events.prune", "flows.retention", "cdc.upkeep", "files.upkeep", "ai.retention", "privacy.retention")


async def measure(database_url: str | None, count: int) -> dict[str, Any]:
    if database_url:
        reset_postgres(database_url)  # each count starts from an empty database
    async with in_process_app(database_url) as (app, _client):
        kernel = app.kernel
        started = time.perf_counter()
        await add_idle_sites(kernel, count, prefix="bench")
        made = time.perf_counter() - started
        out: dict[str, Any] = {"sites": count, "create_seconds": round(made, 1), "jobs": {}}
        for name in JOBS:
            job = kernel.jobs.job(name)
            if job is None:
                continue
            with counted_statements(kernel) as seen:
                started = time.perf_counter()
                await job.fn(kernel)
                took = time.perf_counter() - started
            out["jobs"][name] = {"statements": len(seen), "ms": round(took * 1000, 1)}
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sites", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--database-url", default=None, help="a svc_bench_* PostgreSQL database (default: SQLite)")
    args = parser.parse_args()
    for count in args.sites:
        print(json.dumps(asyncio.run(measure(args.database_url, count))), flush=True)


if __name__ == "__main__":
    main()
