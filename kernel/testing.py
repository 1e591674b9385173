"""The svc pytest plugin (registered under ``pytest11``): fixtures for svc and its extensions.

- ``make_app(plugins=None, **settings)``: a started app on a fresh database; returns a ``TestApp``
  with ``.app``, ``.kernel`` and ``.client`` (an httpx client over ASGI).
- ``svc_app``, ``client``: the default app (every installed plugin) and its client.
- ``admin_token``: a login token of the instance admin; ``admin_headers`` adds it as Bearer.
- ``site``: a fresh site id (created through the API) with ``site_headers`` for it.
- ``temporary_plugin``: register a plugin object on a running app for one test.
- ``site_b``, ``site_b_headers``: a second fresh site, for cross-tenant tests.
- ``calls``, ``calls_b``, ``anon_calls``: ``Calls`` as the admin in ``site`` / ``site_b``, and with
  no credentials in ``site``.
- ``make_member``: ``await make_member(site, role)`` makes a user with a role there (a ``Member``).
- ``record_events``, ``recorder``: a ``Recorder`` of the bus's action events.
- ``run_due_jobs``: ``await run_due_jobs(kernel, now=...)`` runs the jobs due then, in the test.
- ``live_server``, ``live_app``: the app under a real uvicorn server, with WebSocket (httpx-ws)
  and SSE (httpx-sse) clients (``kernel/testing_live.py``).

The suite runs on SQLite by default; with ``SVC_TEST_DATABASE_URL`` (PostgreSQL) and
``SVC_TEST_REDIS_URL`` it runs on those. A migrated template is made once per session; each
app gets a copy (SQLite) or truncated tables (PostgreSQL).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
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
from kernel.plugins import call_first, make_plugin_manager
from kernel.settings import Settings

API = "/api/v1"
ADMIN_EMAIL = "admin@example.com"
ADMIN_PASSWORD = "admin-password-1"
MEMBER_PASSWORD = "member-password-1"
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
        _MIGRATED_INDEXES[url] = _index_names(url)
        return url
    path = tmp_path_factory.mktemp("svc-template") / "template.sqlite3"
    upgrade(f"sqlite:///{path}", paths)
    return str(path)


# The indexes the migrations made, per PostgreSQL test database: indexes made at run time (the
# items plugin's field indexes) are dropped between tests, or they pile up on the shared
# database and every TRUNCATE (one file per index) grows slower through the run.
_MIGRATED_INDEXES: dict[str, set[str]] = {}
_RUNTIME_INDEXES = ("SELECT indexname FROM pg_indexes i WHERE schemaname = current_schema() AND NOT EXISTS "
                    "(SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)")

_RUNTIME_STATISTICS = "SELECT stxname FROM pg_statistic_ext WHERE stxnamespace = current_schema()::regnamespace"


def _index_names(url: str) -> set[str]:
    engine = create_engine(sync_url(url))
    try:
        with engine.connect() as conn:
            return set(conn.execute(text(_RUNTIME_INDEXES)).scalars())
    finally:
        engine.dispose()


def _truncate_all(url: str) -> None:
    engine = create_engine(sync_url(url))
    try:
        with engine.begin() as conn:
            baseline = _MIGRATED_INDEXES.get(url)
            if baseline is not None:
                extra = set(conn.execute(text(_RUNTIME_INDEXES)).scalars()) - baseline
                if extra:
                    conn.execute(text("DROP INDEX " + ", ".join(f'"{n}"' for n in sorted(extra))))
            stats = list(conn.execute(text(_RUNTIME_STATISTICS)).scalars())
            if stats:  # the items plugin's expression statistics; migrations make none
                conn.execute(text("DROP STATISTICS " + ", ".join(f'"{n}"' for n in stats)))
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


@pytest_asyncio.fixture
async def site_b(svc_app: TestApp, admin_headers: dict[str, str]) -> str:
    """A second fresh site, for cross-tenant tests."""
    site_id = f"b-{uuid.uuid4().hex[:10]}"
    resp = await svc_app.client.post(f"{API}/sites", json={"id": site_id, "name": "Site B"}, headers=admin_headers)
    assert resp.status_code == 201, resp.text
    return site_id


@pytest.fixture
def site_b_headers(site_b: str, admin_headers: dict[str, str]) -> dict[str, str]:
    """The admin headers plus ``site_b``'s ``X-Svc-Site``."""
    return {**admin_headers, "X-Svc-Site": site_b}


class Calls:
    """HTTP calls under ``/api/v1`` with fixed headers (a call's own ``headers=`` are merged in).

    ``await calls.ok("post", "/collections", status=201, json=...)`` asserts the status and returns
    the answer's ``data`` (the whole body with ``full=True``, None for 204); ``await calls.err(method,
    path, 404, "RECORD_NOT_FOUND")`` asserts an error answer and returns its first error entry.
    """

    def __init__(self, client: httpx.AsyncClient, headers: dict[str, str]) -> None:
        self.client = client
        self.headers = headers

    async def call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        """The raw answer to ``method`` on ``/api/v1`` + ``path``."""
        headers = {**self.headers, **kw.pop("headers", {})}
        return await self.client.request(method.upper(), API + path, headers=headers, **kw)

    async def ok(self, method: str, path: str, status: int = 200, full: bool = False, **kw: Any) -> Any:
        """The call must answer ``status``; returns ``data`` (or the body with ``full=True``)."""
        resp = await self.call(method, path, **kw)
        assert resp.status_code == status, f"{method} {path}: {resp.status_code} {resp.text}"
        if status == 204:
            assert resp.content == b""
            assert "content-type" not in resp.headers
            return None
        return resp.json() if full else resp.json()["data"]

    async def err(self, method: str, path: str, status: int, code: str | None = None,
                  path_is: list[str] | None = None, **kw: Any) -> dict[str, Any]:
        """The call must fail with ``status`` (and ``code``, and error ``path``); returns the error."""
        resp = await self.call(method, path, **kw)
        assert resp.status_code == status, f"{method} {path}: {resp.status_code} {resp.text}"
        error = resp.json()["errors"][0]
        if code is not None:
            assert error["code"] == code, error
        if path_is is not None:
            assert error.get("path") == path_is, error
        return error

    async def collection(self, name: str, fields: dict[str, Any] | None = None, **body: Any) -> dict[str, Any]:
        """Create a collection, then its ``fields`` (``name: type`` or ``name: {type, ...}``)."""
        created = await self.ok("post", "/collections", status=201, json={"name": name, **body})
        for field, spec in (fields or {}).items():
            spec = {"type": spec} if isinstance(spec, str) else spec
            await self.ok("post", f"/fields/{name}", status=201, json={"field": field, **spec})
        return created

    async def field(self, collection: str, field: str, type_: str, **body: Any) -> dict[str, Any]:
        """Create one field of ``collection``."""
        return await self.ok("post", f"/fields/{collection}", status=201, json={"field": field, "type": type_, **body})

    async def relation(self, **body: Any) -> dict[str, Any]:
        """Create a relation from the body's keys."""
        return await self.ok("post", "/relations", status=201, json=body)

    async def create(self, collection: str, body: Any, status: int = 201) -> Any:
        """Create an item (or a list of items) of ``collection``."""
        return await self.ok("post", f"/items/{collection}", status=status, json=body)

    async def get(self, collection: str, item_id: str, **kw: Any) -> Any:
        """One item of ``collection``."""
        return await self.ok("get", f"/items/{collection}/{item_id}", **kw)

    async def list(self, collection: str, **params: Any) -> Any:
        """The whole answer (``data`` and ``meta``) of listing ``collection`` with query ``params``."""
        return await self.ok("get", f"/items/{collection}", full=True, params=params)


@pytest.fixture
def calls(svc_app: TestApp, site_headers: dict[str, str]) -> Calls:
    """Calls as the instance admin in ``site``."""
    return Calls(svc_app.client, site_headers)


@pytest.fixture
def calls_b(svc_app: TestApp, site_b_headers: dict[str, str]) -> Calls:
    """Calls as the instance admin in ``site_b``."""
    return Calls(svc_app.client, site_b_headers)


@pytest.fixture
def anon_calls(svc_app: TestApp, site: str) -> Calls:
    """Calls with no credentials in ``site`` (its public role)."""
    return Calls(svc_app.client, {"X-Svc-Site": site})


@dataclass(frozen=True)
class Member:
    """A user made by ``make_member``; ``site`` and ``token`` are set when it logged in to a site."""

    id: str
    email: str
    password: str = MEMBER_PASSWORD
    site: str | None = None
    token: str | None = None

    @property
    def headers(self) -> dict[str, str]:
        """Its bearer token and ``X-Svc-Site``, for calls as this member."""
        assert self.token, "make_member(..., login=False) made this member; it has no token"
        return {"Authorization": f"Bearer {self.token}", **({"X-Svc-Site": self.site} if self.site else {})}


@pytest.fixture
def make_member(svc_app: TestApp) -> Callable[..., Awaitable[Member]]:
    """``await make_member(site, role="subscriber", *, email=None, password=..., login=True)``: a new
    user, member of ``site`` with ``role`` (a built-in key or a role id), logged in to that site.

    ``site`` may be a list of sites (logged in to the first) or None (no membership, logged in
    without a site); ``role=None`` makes no membership either. ``login=False`` opens no session.
    The user and its memberships are written to the database, not made through ``/users``, so
    they leave no audit record and no event.
    """
    async def make(site: str | list[str] | None, role: str | None = "subscriber", *, email: str | None = None,
                   password: str = MEMBER_PASSWORD, login: bool = True) -> Member:
        kernel = svc_app.kernel
        sites = [] if site is None else [site] if isinstance(site, str) else list(site)
        email = email or f"u-{uuid.uuid4().hex[:12]}@example.com"
        # Through a hook (accounts implements it): the kernel, this harness included, imports no plugin.
        roles = {one: role for one in sites} if role is not None else {}
        async with kernel.db.begin() as conn:
            user_id = await call_first(kernel.pm.hook.provision_user, kernel=kernel, conn=conn, email=email,
                                       password=password, roles=roles)
            assert user_id, "no plugin implements provision_user (the accounts plugin does)"
        for one in sites:  # memberships written behind the API's back must drop cached decisions
            kernel.access.invalidate(one)
        first = sites[0] if sites else None
        token = await svc_app.login(email, password, site=first) if login else None
        return Member(user_id, email, password, first, token)

    return make


class Recorder:
    """Collects bus events: ``recorder.events`` is a list of ``(event, payload, ctx)``."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any, Any]] = []

    def __call__(self, event: str, payload: Any, ctx: Any) -> None:
        self.events.append((event, payload, ctx))

    def named(self, event: str) -> list[Any]:
        """The payloads of the events called ``event``, in order."""
        return [p for e, p, _ in self.events if e == event]


@pytest.fixture
def record_events(svc_app: TestApp) -> Iterator[Callable[[str], Recorder]]:
    """``record_events(pattern="*")``: a ``Recorder`` of the app's action events matching
    ``pattern`` (``"*items.*"``), until the end of the test."""
    handles: list[Any] = []

    def record(pattern: str = "*") -> Recorder:
        rec = Recorder()
        handles.append(svc_app.kernel.bus.on_action(pattern, rec))
        return rec

    yield record
    for off in handles:
        off()


@pytest.fixture
def recorder(record_events: Callable[[str], Recorder]) -> Recorder:
    """Every action event of the default app, recorded for the test."""
    return record_events("*")


# -- Jobs ----------------------------------------------------------------------------------------
# Apps in tests start with SVC_JOBS_INPROCESS=false: no background worker runs, and a test runs
# the jobs it enqueued when it chooses, at the time it chooses.


async def run_due_jobs(kernel_or_app: Any, now: Any = None, *, periodic: bool = True) -> list[Any]:
    """Run every job due at ``now`` (an aware datetime; default: the current time) in this task,
    and then the jobs those enqueue that are due by then; returns the ``JobRun`` outcomes.

    Failed runs are retried at ``now`` plus their backoff, so pass a later ``now`` to run the
    retry. With ``periodic``, the periodic ticks due at ``now`` run too.
    """
    kernel = getattr(kernel_or_app, "kernel", kernel_or_app)
    return await kernel.jobs.run_due(now, periodic=periodic)


@pytest.fixture(name="run_due_jobs")
def run_due_jobs_fixture() -> Callable[..., Awaitable[list[Any]]]:
    """``await run_due_jobs(kernel_or_app, now=None)``: see ``kernel.testing.run_due_jobs``."""
    return run_due_jobs

# ---------------------------------------------------------------------------- live server
# WebSocket, SSE and CORS tests need a real server; the fixtures live in their own module.

from kernel.testing_live import LiveServer, live_app, live_server  # noqa: E402, F401
