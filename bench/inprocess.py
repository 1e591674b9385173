"""An app of its own for an in-process benchmark: a temporary data folder, SQLite there or the
given database (a ``svc_bench_*`` PostgreSQL database is created when missing), migrated and
started, rate limits off, and an httpx client over ASGI. The instance admin is
``admin@example.com`` with ``PASSWORD``."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from items_query_bench import ensure_pg_database, is_pg

from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.base.settings import Settings
from kernel.db.engine import default_sqlite_path
from kernel.db.migrate import migration_paths, upgrade

PASSWORD = "bench-password-1"
ADMIN_EMAIL = "admin@example.com"


@contextlib.asynccontextmanager
async def in_process_app(database_url: str | None,
                         extra_env: dict[str, str] | None = None) -> AsyncIterator[tuple[Any, httpx.AsyncClient]]:
    """``(app, client)`` for the length of the ``async with`` (``extra_env``: more settings)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"SVC_DATA_DIR": tmp, "SVC_ADMIN_EMAIL": ADMIN_EMAIL, "SVC_ADMIN_PASSWORD": PASSWORD,
               "JWT_SECRET": "bench-secret-0123456789-0123456789-0123", "SVC_JOBS_INPROCESS": "false",
               "SVC_RATE_LIMIT_ITEMS_READ": "0", "SVC_RATE_LIMIT_ITEMS_WRITE": "0", "SVC_RATE_LIMIT_AUTH": "0",
               **(extra_env or {})}
        url = database_url or f"sqlite:///{default_sqlite_path(Path(tmp))}"
        if database_url:
            env["SVC_DATABASE_URL"] = url
            if is_pg(url):
                ensure_pg_database(url)
        app = create_app(Settings.from_env(environ=env))
        upgrade(url, migration_paths(app.kernel.pm))
        await startup_kernel(app.kernel)
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench", timeout=600)
        try:
            yield app, client
        finally:
            await client.aclose()
            await shutdown_kernel(app.kernel)
