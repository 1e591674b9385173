"""The svc pytest plugin (registered under ``pytest11``): fixtures for svc and its extensions.

- ``make_app(plugins=None, **settings)``: a started app on a fresh database; returns a ``TestApp``
  with ``.app``, ``.kernel`` and ``.client`` (an httpx client over ASGI).
- ``svc_app``, ``client``: the default app (every installed plugin) and its client.
- ``admin_token``: a login token of the instance admin; ``admin_headers`` adds it as Bearer.
- ``site``: a fresh site id (created through the API) with ``site_headers`` for it.
- ``temporary_plugin``: register a plugin object on a running app for one test.

The suite runs on SQLite by default; with ``SVC_TEST_DATABASE_URL`` (PostgreSQL) and
``SVC_TEST_REDIS_URL`` it runs on those. A migrated template is made once per session; each
app gets a copy (SQLite) or truncated tables (PostgreSQL).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from sqlalchemy import create_engine, inspect, text

from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.db.engine import default_sqlite_path, sync_url
from kernel.db.migrate import migration_paths, upgrade
from kernel.plugins import make_plugin_manager
from kernel.settings import Settings

ADMIN_EMAIL = "admin@example.com"
ADMIN_PASSWORD = "admin-password-1"
JWT_SECRET = "test-secret-0123456789-0123456789-0123456789"


def svc_test_database_url() -> str:
    return os.environ.get("SVC_TEST_DATABASE_URL", "")


def svc_test_redis_url() -> str:
    return os.environ.get("SVC_TEST_REDIS_URL", "")


@dataclass
class TestApp:
    """A started app, its kernel and an HTTP client for it."""

    __test__ = False  # not a test class, despite the name

    app: Any
    kernel: Any
    client: httpx.AsyncClient

    async def login(self, email: str = ADMIN_EMAIL, password: str = ADMIN_PASSWORD,
                    site: str | None = None) -> str:
        headers = {"X-Svc-Site": site} if site else {}
        resp = await self.client.post("/api/v1/auth/login", json={"email": email, "password": password},
                                      headers=headers)
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]["token"]


def _all_migration_paths() -> list[str]:
    pm, _ = make_plugin_manager()
    return migration_paths(pm)


@pytest.fixture(scope="session")
def svc_template_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database migrated with every installed plugin: a SQLite file, or the PostgreSQL URL."""
    url = svc_test_database_url()
    paths = _all_migration_paths()
    if url:
        upgrade(url, paths)
        return url
    path = tmp_path_factory.mktemp("svc-template") / "template.sqlite3"
    upgrade(f"sqlite:///{path}", paths)
    return str(path)


def _truncate_all(url: str) -> None:
    engine = create_engine(sync_url(url))
    try:
        with engine.begin() as conn:
            names = [t for t in inspect(conn).get_table_names() if t != "alembic_version"]
            if names:
                conn.execute(text("TRUNCATE " + ", ".join(f'"{n}"' for n in names) + " CASCADE"))
    finally:
        engine.dispose()


class AppFactory:
    """Builds started apps for one test and stops them all at its end."""

    def __init__(self, template: str, base_dir: Path, namespace: str) -> None:
        self.template = template
        self.base_dir = base_dir
        self.namespace = namespace
        self.apps: list[TestApp] = []
        self._prepared: set[Path] = set()

    def settings(self, data_dir: Path, **overrides: Any) -> Settings:
        env = {
            "SVC_DATA_DIR": str(data_dir),
            "SVC_ADMIN_EMAIL": ADMIN_EMAIL,
            "SVC_ADMIN_PASSWORD": ADMIN_PASSWORD,
            "JWT_SECRET": JWT_SECRET,
            "SVC_JOBS_INPROCESS": "false",
            "SVC_REDIS_NAMESPACE": self.namespace,
        }
        if svc_test_database_url():
            env["SVC_DATABASE_URL"] = svc_test_database_url()
        if svc_test_redis_url():
            env["SVC_REDIS_URL"] = svc_test_redis_url()
        env.update(overrides.pop("env", {}) or {})
        return Settings.from_env(environ=env, **overrides)

    def _prepare_database(self, data_dir: Path, settings: Settings) -> None:
        if data_dir in self._prepared:
            return
        self._prepared.add(data_dir)
        if settings.database_url:
            if len(self._prepared) == 1:  # first app of this test: start from empty tables
                _truncate_all(settings.database_url)
            return
        target = default_sqlite_path(data_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            shutil.copyfile(self.template, target)

    async def __call__(self, plugins: Iterable[Any] | None = None, *, data_dir: Path | None = None,
                       **overrides: Any) -> TestApp:
        data_dir = data_dir or self.base_dir / f"app{len(self.apps)}"
        settings = self.settings(data_dir, **overrides)
        self._prepare_database(data_dir, settings)
        app = create_app(settings, plugins)
        kernel = app.kernel
        await startup_kernel(kernel)
        transport = httpx.ASGITransport(app=app)
        client = httpx.AsyncClient(transport=transport, base_url="http://testserver")
        test_app = TestApp(app, kernel, client)
        self.apps.append(test_app)
        return test_app

    async def close(self) -> None:
        for test_app in reversed(self.apps):
            await test_app.client.aclose()
            await shutdown_kernel(test_app.kernel)


@pytest_asyncio.fixture
async def make_app(svc_template_db: str, tmp_path: Path) -> AsyncIterator[AppFactory]:
    factory = AppFactory(svc_template_db, tmp_path, f"svctest:{uuid.uuid4().hex[:12]}")
    try:
        yield factory
    finally:
        await factory.close()


@pytest_asyncio.fixture
async def svc_app(make_app: AppFactory) -> TestApp:
    """The default app: every installed plugin."""
    return await make_app()


@pytest.fixture
def client(svc_app: TestApp) -> httpx.AsyncClient:
    return svc_app.client


@pytest_asyncio.fixture
async def admin_token(svc_app: TestApp) -> str:
    return await svc_app.login()


@pytest.fixture
def admin_headers(admin_token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {admin_token}"}


@pytest_asyncio.fixture
async def site(svc_app: TestApp, admin_headers: dict[str, str]) -> str:
    """A fresh site, created through the API."""
    site_id = f"s-{uuid.uuid4().hex[:10]}"
    resp = await svc_app.client.post("/api/v1/sites", json={"id": site_id, "name": "Test site"},
                                     headers=admin_headers)
    assert resp.status_code == 201, resp.text
    return site_id


@pytest.fixture
def site_headers(site: str, admin_headers: dict[str, str]) -> dict[str, str]:
    return {**admin_headers, "X-Svc-Site": site}


@pytest.fixture
def temporary_plugin() -> Any:
    """``with temporary_plugin(kernel, obj):`` registers ``obj`` for the block, then removes it."""
    @contextlib.contextmanager
    def register(kernel: Any, plugin: Any, name: str | None = None) -> Any:
        kernel.pm.register(plugin, name=name)
        try:
            yield plugin
        finally:
            kernel.pm.unregister(plugin)

    return register
