"""The svc pytest plugin (registered under ``pytest11``): fixtures for svc and its extensions.

- ``make_app(plugins=None, **settings)``: a started app on a fresh database; returns a ``TestApp``
  with ``.app``, ``.kernel`` and ``.client`` (an httpx client over ASGI).
- ``svc_app``, ``client``: the default app (every installed plugin) and its client.
- ``admin_token``: a login token of the instance admin; ``admin_headers`` adds it as Bearer.
- ``METRICS_HEADERS``: the scrape token of every app the harness makes (``SVC_METRICS_TOKEN`` is
  ``METRICS_TOKEN``), for ``GET /metrics``.
- ``site``: a fresh site id (created through the API) with ``site_headers`` for it.
- ``disabled_with_dependents(*names)``: the ``SVC_PLUGINS_DISABLED`` value that turns off
  ``names`` and the installed plugins requiring them (for a plugin's disabled test).
- ``temporary_plugin``: register a plugin object on a running app for one test.
- ``site_b``, ``site_b_headers``: a second fresh site, for cross-tenant tests.
- ``shared_site``: one app and site per module for refused-input cases; ``shared_site_with(...)``
  builds one with settings of its own in a module fixture.
- ``calls``, ``calls_b``, ``anon_calls``: ``Calls`` as the admin in ``site`` / ``site_b``, and with
  no credentials in ``site``.
- ``make_member``: ``await make_member(site, role)`` makes a user with a role there (a ``Member``).
- ``record_events``, ``recorder``: a ``Recorder`` of the bus's action events.
- ``run_due_jobs``: ``await run_due_jobs(kernel, now=...)`` runs the jobs due then, in the test.
- ``upload_extension``: ``await upload_extension(app, headers, folder, private_key)`` builds an
  extension folder with the SDK, signs it and posts it to ``/extensions/upload``.
- ``live_server``, ``live_app``: the app under a real uvicorn server, with WebSocket (httpx-ws)
  and SSE (httpx-sse) clients (``kernel/testing/live.py``).

- ``s3_endpoint``: a moto S3 server (server mode, real HTTP) for the session, with dummy
  credentials and the bucket ``S3_TEST_BUCKET``; the URL of its endpoint.
- ``redis_url``: a Redis that answers (skips without one; fails under ``CI=true``).
- ``mailbox``: a local SMTP server keeping messages; ``http_receiver``: a local HTTP server
  (webhooks, JWKS, outside APIs) serving documents and keeping requests; ``HttpReceiver(tls=...)``
  speaks HTTPS.
- ``tls_ca``: a local certificate authority (trustme) for the session, ``tls_ca_file`` its PEM
  file; ``tls_server_context(cert)`` a server's TLS context holding one of its certificates.
- ``production_password_hashing``: production argon2 parameters for one test.
- ``examples(n)``: a hypothesis ``max_examples`` scaled by ``SVC_HYPOTHESIS_PROFILE``.

The suite runs on SQLite by default; with ``SVC_TEST_DATABASE_URL`` (PostgreSQL) and
``SVC_TEST_REDIS_URL`` it runs on those. A migrated template is made and started once per session;
each app gets a copy (SQLite) or emptied tables holding the first start's rows again (PostgreSQL). Passwords are hashed with argon2's
cheapest parameters. ``--svc-services-only`` keeps the tests that touch a database, cache or queue;
under pytest-xdist each worker gets its own PostgreSQL and Redis database.

Keep tests cheap (docs/testing.md): use these fixtures, not apps, servers or password hashes of
your own; test pure functions without an app; hypothesis counts as ``examples(n)``; one
schemathesis run (tests/test_openapi.py); exact statuses; no wall-clock bounds. An outside
repository sets ``asyncio_mode = "auto"`` and installs svc-cms with its ``test`` extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import types
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, event, text

try:
    import pytest_asyncio
except ImportError:  # svc-cms installed without its test extra (this module is a pytest11 plugin):
    # pytest in an unrelated project must still start. The async fixtures are declared as plain
    # ones and only a test that asks for them fails, telling to install svc-cms[test].
    def _plain_fixture(*args: Any, loop_scope: str | None = None, **kwargs: Any) -> Any:
        return pytest.fixture(*args, **kwargs)

    pytest_asyncio = types.SimpleNamespace(fixture=_plain_fixture)

from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.auth import passwords
from kernel.base.settings import Settings
from kernel.db import compiled
from kernel.db.engine import default_sqlite_path, sync_url
from kernel.db.migrate import migration_paths, upgrade
from kernel.hooks.plugins import available_plugins, call_first, make_plugin_manager

API = "/api/v1"
ADMIN_EMAIL = "admin@example.com"
ADMIN_PASSWORD = "admin-password-1"
MEMBER_PASSWORD = "member-password-1"
JWT_SECRET = "test-secret-0123456789-0123456789-0123456789"
# The harness's apps are scraped as production's are: with a token (docs/operations.md, "Who may
# scrape /metrics"). A test of the other modes sets SVC_METRICS_TOKEN="" (unset) itself.
METRICS_TOKEN = "test-metrics-token-0123456789"
METRICS_HEADERS = {"Authorization": f"Bearer {METRICS_TOKEN}"}


def svc_test_database_url() -> str:
    return os.environ.get("SVC_TEST_DATABASE_URL", "")


def svc_test_redis_url() -> str:
    return os.environ.get("SVC_TEST_REDIS_URL", "")


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now (for a server a test starts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_answering(proc: subprocess.Popen[Any], url: str, timeout: float = 60) -> httpx.Response:
    """The first answer of ``url`` from the server process ``proc`` started (a `svc serve` in a
    subprocess); AssertionError when it exits or does not answer within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return httpx.get(url, timeout=2)
        except httpx.HTTPError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise AssertionError(f"{' '.join(map(str, proc.args))} did not start") from None
            time.sleep(0.2)


# The test run is the operator: its local servers (http_receiver...) are on loopback, so its apps
# open loopback (SVC_OUTBOUND_ALLOW_NETWORKS); tests/test_ssrf_sweep.py empties it.
LOOPBACK_ALLOWED = "127.0.0.0/8,::1/128"


def start_dispatching_process(data_dir: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """A real ``svc`` process on ``data_dir``'s database (or the test PostgreSQL and Redis) whose
    event dispatcher runs: ``svc serve`` on SQLite (the embedded deployment dispatches in its
    worker), ``svc worker`` with Redis. Its output goes to ``data_dir / "svc.log"``. For tests
    that kill it mid-dispatch; ``env`` adds settings (``SVC_PLUGINS_EXTRA``, timings)."""
    root = Path(__file__).resolve().parents[2]
    full = {
        "PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(root), "HOME": os.environ.get("HOME", "/tmp"),
        "SVC_DATA_DIR": str(data_dir), "SVC_ADMIN_EMAIL": ADMIN_EMAIL, "SVC_ADMIN_PASSWORD": ADMIN_PASSWORD,
        "JWT_SECRET": JWT_SECRET, "SVC_JOBS_INPROCESS": "false", "SVC_LOG_LEVEL": "warning",
        "SVC_REDIS_NAMESPACE": f"svckill{uuid.uuid4().hex[:8]}", "SVC_OUTBOUND_ALLOW_NETWORKS": LOOPBACK_ALLOWED,
        **(env or {}),
    }
    if svc_test_database_url():
        full["SVC_DATABASE_URL"] = svc_test_database_url()
    if svc_test_redis_url():
        full["SVC_REDIS_URL"] = svc_test_redis_url()
        command = ["worker", "--workers", "1"]
    else:
        command = ["serve", "--port", str(free_port())]
    log = open(data_dir / "svc.log", "ab")  # noqa: SIM115 - the child writes it
    return subprocess.Popen([sys.executable, "-m", "kernel.cli", *command], env=full, cwd=str(root),
                            stdout=log, stderr=subprocess.STDOUT)


def serve_process(data_dir: Path, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """A fresh ``svc serve`` on a free port of 127.0.0.1 over ``data_dir`` (embedded SQLite, no
    Redis, the test admin's password), answering; returns (process, its ``/api/v1`` URL). Its
    output goes to ``data_dir / "svc.log"``. End it with ``stop_process``."""
    root = Path(__file__).resolve().parents[2]
    port = free_port()
    full = {
        "PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(root), "HOME": os.environ.get("HOME", "/tmp"),
        "SVC_DATA_DIR": str(data_dir), "SVC_ADMIN_EMAIL": ADMIN_EMAIL, "SVC_ADMIN_PASSWORD": ADMIN_PASSWORD,
        "JWT_SECRET": JWT_SECRET, "SVC_LOG_LEVEL": "warning", **(env or {}),
    }
    data_dir.mkdir(parents=True, exist_ok=True)
    log = open(data_dir / "svc.log", "ab")  # noqa: SIM115 - the child writes it
    proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", "serve", "--port", str(port)], env=full,
                            cwd=str(data_dir), stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        wait_until_answering(proc, f"{base}/sites")  # the kernel's own route (401 without a token)
    except AssertionError:
        stop_process(proc)
        raise AssertionError(f"svc serve did not start: {(data_dir / 'svc.log').read_text()[-2000:]}") from None
    return proc, base


def stop_process(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, timeout: float = 30) -> int:
    """Send ``sig`` (SIGTERM) to ``proc`` and wait up to ``timeout`` seconds for it to exit (killed
    past that: the test then fails on the exit code); returns its exit code."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return int(proc.returncode)


async def until_in_process(check: Callable[[], Any], proc: subprocess.Popen[bytes], data_dir: Path,
                           limit: float = 90) -> None:
    """Wait until ``check()`` holds while the process of ``start_dispatching_process`` runs;
    AssertionError with the end of its log when it exits or ``limit`` seconds pass."""
    import asyncio

    for _ in range(int(limit / 0.05)):
        if check():
            return
        assert proc.poll() is None, (data_dir / "svc.log").read_text()[-3000:]
        await asyncio.sleep(0.05)
    raise AssertionError("the process did not get there: " + (data_dir / "svc.log").read_text()[-3000:])


def harness_helper(owner: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add the decorated function to ``owner`` (``TestApp`` or ``Calls``) as a method of that name.

    The kernel's harness knows no plugin's routes: a plugin gives it the helpers of its own
    routes from its pytest plugin (``plugins/<name>/testing.py``, a ``pytest11`` entry point),
    so ``app.login()`` comes from accounts and ``calls.collection(...)`` from schema. A name
    already taken by another module is ``ValueError``."""

    def add(function: Callable[..., Any]) -> Callable[..., Any]:
        taken = owner.__dict__.get(function.__name__)
        if taken is not None and getattr(taken, "__module__", None) != function.__module__:
            raise ValueError(f"{owner.__name__}.{function.__name__} is already defined by {taken.__module__}")
        setattr(owner, function.__name__, function)
        return function

    return add


@dataclass(repr=False)
class TestApp:
    """A started app, its kernel and an HTTP client for it."""

    __test__ = False  # not a test class, despite the name

    app: Any
    kernel: Any
    client: httpx.AsyncClient

    def __repr__(self) -> str:
        # Short: asyncio formats a finished fixture task's result (this) each time pytest-asyncio's
        # runner gives SIGINT back, and the dataclass repr of the whole kernel cost ~3% of the suite.
        return f"<TestApp {self.kernel.settings.values.get('data_dir')}>"

    async def create_site(self, headers: dict[str, str], *, prefix: str = "s", name: str = "Test site") -> str:
        """A fresh site ``<prefix>-<random>``, created through the API with ``headers`` (an
        instance admin's); returns its id."""
        site_id = f"{prefix}-{uuid.uuid4().hex[:10]}"
        resp = await self.client.post(f"{API}/sites", json={"id": site_id, "name": name}, headers=headers)
        assert resp.status_code == 201, resp.text
        return site_id


def _all_migration_paths() -> list[str]:
    pm, _ = make_plugin_manager()
    return migration_paths(pm)


def disabled_with_dependents(*names: str) -> str:
    """``SVC_PLUGINS_DISABLED`` that turns off ``names`` and every installed plugin requiring one
    of them, however indirectly (a plugin's disabled test names only itself; the deployment
    would refuse to start with a dependent left on)."""
    installed = available_plugins()
    requires = {name: set(getattr(point.load(), "requires", ()) or ()) for name, point in installed.items()}
    off = set(names)
    while True:
        more = {name for name, needs in requires.items() if needs & off} - off
        if not more:
            return ",".join(sorted(off))
        off |= more


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
    _first_start(path)
    return str(path)


def _bare(template: str) -> Path:
    """The SQLite template as the migrations left it, before any app's first start."""
    return Path(template).with_name("bare.sqlite3")


def _first_start(path: Path) -> None:
    """Start and stop one default app on the SQLite template, so that each plugin's first-start
    work (the instance admin, hashed once) is in every copy instead of being redone per test.
    A copy of the untouched file is kept for ``make_app(bare=True)``."""
    shutil.copyfile(path, _bare(str(path)))
    data_dir = path.parent / "first-start"
    target = default_sqlite_path(data_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, target)

    async def start_stop() -> None:
        env = {"SVC_DATA_DIR": str(data_dir), "SVC_ADMIN_EMAIL": ADMIN_EMAIL,
               "SVC_ADMIN_PASSWORD": ADMIN_PASSWORD, "JWT_SECRET": JWT_SECRET, "SVC_JOBS_INPROCESS": "false"}
        kernel = create_app(Settings.from_env(environ=env)).kernel
        await startup_kernel(kernel)
        await shutdown_kernel(kernel)

    # In a thread of its own: the fixture may be set up while an event loop runs in this one.
    failure: list[BaseException] = []
    thread = threading.Thread(target=lambda: _run_catching(start_stop, failure))
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    engine = create_engine(f"sqlite:///{target}")
    try:
        with engine.connect() as conn:  # fold the WAL back into the file before copying it
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        engine.dispose()
    shutil.copyfile(target, path)


def _run_catching(make: Callable[[], Awaitable[None]], failure: list[BaseException]) -> None:
    import asyncio

    try:
        asyncio.run(make())
    except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
        failure.append(exc)


# The indexes the migrations made, per PostgreSQL test database: indexes made at run time (the
# items plugin's field indexes) are dropped between tests, or they pile up on the shared
# database and every TRUNCATE (one file per index) grows slower through the run.
_MIGRATED_INDEXES: dict[str, set[str]] = {}
_RUNTIME_INDEXES = ("SELECT indexname FROM pg_indexes i WHERE schemaname = current_schema() AND NOT EXISTS "
                    "(SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)")

_TRIGGERED = ("SELECT DISTINCT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
              "WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace")

_RUNTIME_STATISTICS = "SELECT stxname FROM pg_statistic_ext WHERE stxnamespace = current_schema()::regnamespace"


def _index_names(url: str) -> set[str]:
    engine = create_engine(sync_url(url))
    try:
        with engine.connect() as conn:
            return set(conn.execute(text(_RUNTIME_INDEXES)).scalars())
    finally:
        engine.dispose()


class _Emptier:
    """Resets one PostgreSQL test database between tests, cheaply: one query finds the tables
    that hold rows (and the indexes and statistics tests made at run time), and those tables
    are emptied with DELETE, children before parents (TRUNCATE costs file operations on every
    table it names, and CASCADE names nearly all: ~150 ms a test). With ``first_start`` rows (a
    snapshot of what a default app's first start writes, ``_first_start_rows``), those are put
    back in the same transaction, as the SQLite template's copy holds them."""

    def __init__(self, url: str) -> None:
        from sqlalchemy import MetaData

        self.engine = create_engine(sync_url(url))
        self.meta = MetaData()
        self.meta.reflect(self.engine)
        self.parents_first = [t for t in self.meta.sorted_tables if t.name != "alembic_version"]
        self.children_first = [t.name for t in reversed(self.parents_first)]
        # One round trip: the tables holding rows, then the run-time indexes and statistics.
        self.probe = text(" UNION ALL ".join(
            [f"SELECT 'table' AS kind, '{t.name}' AS name WHERE EXISTS (SELECT 1 FROM \"{t.name}\")"
             for t in self.parents_first]
            + [f"SELECT 'index', indexname::text FROM ({_RUNTIME_INDEXES}) i",
               f"SELECT 'statistics', stxname::text FROM ({_RUNTIME_STATISTICS}) s",
               f"SELECT 'trigger', relname::text FROM ({_TRIGGERED}) t"]))
        self.first_start: dict[str, list[dict[str, Any]]] | None = None

    def _found(self, conn: Any) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {"table": set(), "index": set(), "statistics": set(), "trigger": set()}
        for kind, name in conn.execute(self.probe):
            found[kind].add(name)
        return found

    def empty(self, baseline: set[str] | None, first_start: dict[str, list[dict[str, Any]]] | None = None) -> None:
        with self.engine.begin() as conn:
            found = self._found(conn)
            extra = found["index"] - baseline if baseline is not None else set()
            if extra:
                conn.execute(text("DROP INDEX " + ", ".join(f'"{n}"' for n in sorted(extra))))
            if found["statistics"]:  # the items plugin's expression statistics; migrations make none
                conn.execute(text("DROP STATISTICS " + ", ".join(f'"{n}"' for n in sorted(found["statistics"]))))
            # A DELETE fires the tables' triggers (the items plugin keeps counts by trigger), so
            # probe again until nothing holds rows; only after emptying a table that has one (a
            # foreign key's cascade only removes rows or nulls columns of a child, and children
            # are emptied first), so most tests' reset is one probe, not two.
            holding, triggered = found["table"], found["trigger"]
            for _ in range(5):
                if not holding:
                    break
                for name in self.children_first:
                    if name in holding:
                        conn.execute(text(f'DELETE FROM "{name}"'))
                holding = self._found(conn)["table"] if holding & triggered else set()
            else:
                raise RuntimeError(f"the test database still holds rows in {sorted(holding)}")
            for table in self.parents_first:
                rows = (first_start or {}).get(table.name)
                if rows:
                    conn.execute(table.insert(), rows)

    def read_rows(self) -> dict[str, list[dict[str, Any]]]:
        """Every row of every table holding any (but Alembic's), by table name."""
        with self.engine.connect() as conn:
            holding = self._found(conn)["table"]
            return {t.name: [dict(row._mapping) for row in conn.execute(t.select())]
                    for t in self.parents_first if t.name in holding}


_EMPTIERS: dict[str, _Emptier] = {}


def _emptier(url: str) -> _Emptier:
    emptier = _EMPTIERS.get(url)
    if emptier is None:
        emptier = _EMPTIERS[url] = _Emptier(url)
    return emptier


def _truncate_all(url: str, first_start: dict[str, list[dict[str, Any]]] | None = None) -> None:
    """Empty every table of the PostgreSQL test database ``url`` and drop what tests made at
    run time (indexes, statistics); then write ``first_start``'s rows back, if given."""
    _emptier(url).empty(_MIGRATED_INDEXES.get(url), first_start)


async def _first_start_rows(factory: AppFactory, url: str) -> dict[str, list[dict[str, Any]]]:
    """What a default app's first start writes to the PostgreSQL database ``url`` (the instance
    admin, the default site and its roles), read once per process: each test's first default
    app gets these rows back instead of emptied tables and the first start redone (~10 ms of
    CPU and ~5 ms of the server's a test), like the SQLite template's copy. Made as the SQLite
    template's are: every installed plugin, the harness's settings, no Redis."""
    emptier = _emptier(url)
    if emptier.first_start is None:
        _truncate_all(url)
        data_dir = Path(tempfile.mkdtemp(prefix="svc-first-start-"))
        try:
            settings = factory.settings(data_dir, env={"SVC_REDIS_URL": ""})
            kernel = create_app(settings).kernel
            await startup_kernel(kernel)
            await shutdown_kernel(kernel)
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)
        emptier.first_start = emptier.read_rows()
    return emptier.first_start


class AppFactory:
    """Builds started apps for one test and stops them all at its end."""

    def __init__(self, template: str, base_dir: Path, namespace: str, database_url: str | None = None) -> None:
        self.template = template
        self.base_dir = base_dir
        self.namespace = namespace
        # PostgreSQL: the database its apps use (the run's, unless a shared app has its own).
        self.database_url = svc_test_database_url() if database_url is None else database_url
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
            "SVC_OUTBOUND_ALLOW_NETWORKS": LOOPBACK_ALLOWED,
            "SVC_METRICS_TOKEN": METRICS_TOKEN,
        }
        if self.database_url:
            env["SVC_DATABASE_URL"] = self.database_url
        if svc_test_redis_url():
            env["SVC_REDIS_URL"] = svc_test_redis_url()
        env.update(overrides.pop("env", {}) or {})
        return Settings.from_env(environ=env, **overrides)

    async def _prepare_database(self, data_dir: Path, settings: Settings, bare: bool = False,
                                default: bool = False) -> None:
        if data_dir in self._prepared:
            return
        self._prepared.add(data_dir)
        if settings.database_url:
            if len(self._prepared) == 1:  # first app of this test: start from empty tables
                # A default app (every installed plugin, the harness's settings) gets the first
                # start's rows back; any other starts from empty tables and runs its own first
                # start, with its own plugins and settings.
                rows = await _first_start_rows(self, settings.database_url) if default and not bare else None
                _truncate_all(settings.database_url, rows)
            return
        target = default_sqlite_path(data_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            shutil.copyfile(_bare(self.template) if bare else self.template, target)

    async def __call__(self, plugins: Iterable[Any] | None = None, *, data_dir: Path | None = None,
                       bare: bool = False, **overrides: Any) -> TestApp:
        """``bare=True``: the database as the migrations leave it, before any first start (no
        instance admin yet); by default the SQLite copy already holds the first start's rows."""
        data_dir = data_dir or self.base_dir / f"app{len(self.apps)}"
        settings = self.settings(data_dir, **overrides)
        await self._prepare_database(data_dir, settings, bare, default=plugins is None and not overrides)
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


@dataclass(repr=False)
class SharedSite:
    """One started app with a site, shared by the tests of a module (the ``shared_site`` fixture)."""

    app: TestApp
    site: str
    admin_headers: dict[str, str]
    site_headers: dict[str, str]
    calls: Calls

    def __repr__(self) -> str:
        return f"<SharedSite {self.site} of {self.app!r}>"

    async def member(self, rules: list[dict[str, Any]] | None = None, role: str | None = "subscriber") -> Calls:
        """Calls as a new member of the site with ``role`` and, if given, a policy of its own
        holding ``rules`` (permission bodies)."""
        made = await new_member(self.app, self.site, role)
        if rules is not None:
            await self.calls.grant(rules, {"userId": made.id})
            self.app.kernel.access.invalidate(self.site)
        return Calls(self.app.client, made.headers)

    async def new_site(self, prefix: str = "s") -> Calls:
        """Calls as the instance admin in a new site of the shared app (``.headers``' ``X-Svc-Site``
        names it): for a test that writes only in a site of its own (its collections, items,
        issuers), at the cost of a site instead of an app. Such a test asserts nothing about
        the app's other sites or instance-wide state."""
        site_id = await self.app.create_site(self.admin_headers, prefix=prefix)
        return Calls(self.app.client, {**self.admin_headers, "X-Svc-Site": site_id})


@pytest.fixture(scope="session")
def svc_shared_db(svc_template_db: str) -> str:
    """The database of the module-shared apps: on SQLite the template (each gets a copy); on
    PostgreSQL a database of its own (``<name>_shared``, migrated once), because every
    function-scoped app truncates the run's database while a module's shared app still lives."""
    url = svc_test_database_url()
    if not url:
        return svc_template_db
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    name = f"{parsed.database}_shared"
    _recreate_database(url, name)
    shared = parsed.set(database=name).render_as_string(hide_password=False)
    upgrade(shared, _all_migration_paths())
    _MIGRATED_INDEXES[shared] = _index_names(shared)
    return shared


@contextlib.asynccontextmanager
async def shared_site_with(svc_shared_db: str, svc_template_db: str, tmp_path_factory: pytest.TempPathFactory,
                           **overrides: Any) -> AsyncIterator[SharedSite]:
    """A ``SharedSite`` on an app started with ``overrides`` (``make_app``'s settings), for a
    module fixture whose cases need a setting of their own (a rate limit off, a key set); the
    module marks its tests ``pytest.mark.asyncio(loop_scope="module")``."""
    url = svc_test_database_url() and svc_shared_db
    factory = AppFactory(svc_template_db, tmp_path_factory.mktemp("shared"),
                         f"svctest:{uuid.uuid4().hex[:12]}", database_url=url)
    try:
        app = await factory(**overrides)
        admin = {"Authorization": f"Bearer {await app.login()}"}
        site_id = await app.create_site(admin)
        headers = {**admin, "X-Svc-Site": site_id}
        yield SharedSite(app, site_id, admin, headers, Calls(app.client, headers))
    finally:
        await factory.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_site(svc_shared_db: str, svc_template_db: str,
                      tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SharedSite]:
    """One app, instance admin and site for every test of a module that asks for it: for the
    many cases of a check that changes nothing (bad bodies, hostile query strings, refused
    ids), which would otherwise start an app each. A test using it runs on the module's event
    loop (this plugin marks it so) and must use no function-scoped async fixture; a module
    seeds what its cases read with a module-scoped fixture on ``shared_site``. Its writes are
    seen by the module's next tests: a test that changes state uses ``make_app``/``calls``."""
    async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory) as shared:
        yield shared


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
    return await svc_app.create_site(admin_headers)


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
    return await svc_app.create_site(admin_headers, prefix="b", name="Site B")


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
    user, member of ``site`` with ``role`` (a built-in key or a role id), logged in to that site
    (``new_member`` on the test's app)."""
    async def make(site: str | list[str] | None, role: str | None = "subscriber", **options: Any) -> Member:
        return await new_member(svc_app, site, role, **options)

    return make


async def new_member(test_app: TestApp, site: str | list[str] | None, role: str | None = "subscriber", *,
                     email: str | None = None, password: str = MEMBER_PASSWORD, login: bool = True) -> Member:
    """A new user of ``test_app``, member of ``site`` with ``role`` (a built-in key or a role id),
    logged in to that site.

    ``site`` may be a list of sites (logged in to the first) or None (no membership, logged in
    without a site); ``role=None`` makes no membership either. ``login=False`` opens no session.
    The user and its memberships are written to the database, not made through ``/users``, so
    they leave no audit record and no event.
    """
    kernel = test_app.kernel
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
    token = await test_app.login(email, password, site=first) if login else None
    return Member(user_id, email, password, first, token)


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


# --- The harness's own settings: cheap hashing, per-worker services, hypothesis profiles ---------

SERVICES_MARKER = "svc_services"
# A test that reaches the database only through an app but proves nothing that depends on which
# database it is (the OpenAPI document, built from the routes): the second pass leaves it out.
FIRST_PASS_MARKER = "svc_first_pass_only"
# The fixtures through which a test reaches the database, cache or queue the run was pointed at.
SERVICE_FIXTURES = frozenset({"svc_template_db", "redis_url"})
# Tests on a module-scoped app run on the module's event loop, where that app lives: shared_site,
# and any module fixture that builds one with shared_site_with (it takes svc_shared_db for that).
MODULE_LOOP_FIXTURES = frozenset({"shared_site", "svc_shared_db"})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--svc-services-only", action="store_true", default=False,
                     help="svc: run only the tests that touch a database, cache or queue (those using "
                          "make_app/svc_app or redis_url, or marked svc_services; not those marked "
                          "svc_first_pass_only); the others "
                          "(parsers, compilers, pure hypothesis tests) ran in the first pass.")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{SERVICES_MARKER}: the test reaches PostgreSQL or Redis by itself "
                                       "(kept by --svc-services-only)")
    config.addinivalue_line("markers", f"{FIRST_PASS_MARKER}(reason): the test uses an app but nothing it proves "
                                       "depends on the database or cache (left out by --svc-services-only)")
    if os.environ.get("SVC_TEST_PRODUCTION_ARGON2", "") != "1":
        passwords.use_parameters(passwords.CHEAP_PARAMETERS)
    compiled.share()  # every test's app compiles the same statements (kernel/db/compiled.py)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw"):
        _services_per_worker(int(worker[2:]))
    _register_hypothesis_profiles()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Take what collection built (modules, test items: ~200,000 objects) out of the cyclic
    garbage collector's view, and collect the young generations less often. Each app a test
    starts leaves ~17,000 objects in reference cycles; the full collections that follow walked
    the whole heap every few tests (on plugin_tests/cdc GC took 21 % of the tests' CPU, 13 % with
    this)."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(5000, 10, 10)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    import inspect

    for item in items:
        if MODULE_LOOP_FIXTURES & set(getattr(item, "fixturenames", ())) and \
                inspect.iscoroutinefunction(getattr(item, "function", None)):
            item.add_marker(pytest.mark.asyncio(loop_scope="module"), append=False)
    if not config.getoption("--svc-services-only"):
        return
    keep, drop = [], []
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        touches = bool(names & SERVICE_FIXTURES) or item.get_closest_marker(SERVICES_MARKER) is not None
        first_only = item.get_closest_marker(FIRST_PASS_MARKER)
        if first_only is not None:
            if not (first_only.args and str(first_only.args[0]).strip()):
                raise pytest.UsageError(f"{item.nodeid}: {FIRST_PASS_MARKER} needs a reason (why no database matters)")
            touches = False
        (keep if touches else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _services_per_worker(index: int) -> None:
    """Under pytest-xdist, worker ``gwN`` gets its own PostgreSQL database (``<name>_gwN``, made
    afresh) and Redis database (the configured number + N): tests truncate tables and flush keys."""
    from sqlalchemy.engine import make_url

    url = svc_test_database_url()
    if url:
        parsed = make_url(url)
        name = f"{parsed.database}_gw{index}"
        _recreate_database(url, name)
        os.environ["SVC_TEST_DATABASE_URL"] = parsed.set(database=name).render_as_string(hide_password=False)
    redis_url = svc_test_redis_url()
    if redis_url:
        head, _, db = redis_url.rpartition("/")
        if db.isdigit() and head.count("/") >= 2:
            os.environ["SVC_TEST_REDIS_URL"] = f"{head}/{(int(db) + index) % 16}"


def fresh_test_database(suffix: str) -> str:
    """The URL of ``<the test database>_<suffix>`` on the server of ``SVC_TEST_DATABASE_URL``,
    dropped and made afresh: a database of its own for a test whose processes share one (two
    `svc serve` nodes). Empty when no test database is configured."""
    from sqlalchemy.engine import make_url

    url = svc_test_database_url()
    if not url:
        return ""
    parsed = make_url(url)
    name = f"{parsed.database}_{suffix}"
    _recreate_database(url, name)
    return parsed.set(database=name).render_as_string(hide_password=False)


def _recreate_database(url: str, name: str) -> None:
    from sqlalchemy.engine import make_url

    engine = create_engine(make_url(sync_url(url)).set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(text(f'CREATE DATABASE "{name}"'))
            # A test database need not survive a crash of the server: its commits do not wait for
            # the WAL to reach the disk (8 to 10 ms a commit here, 0.7 to 1.8 without the wait;
            # the PostgreSQL pass commits tens of thousands of times). Visibility and locking are
            # unchanged: only durability after a server crash is given up.
            conn.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
    finally:
        engine.dispose()


HYPOTHESIS_PROFILES = {
    # CI and everyday runs: a quarter of each test's count, from a fresh seed each run
    # (scripts/test draws it, prints it and passes --hypothesis-seed; SVC_HYPOTHESIS_SEED=N replays
    # it). No example database: a CI machine starts clean, and a replay needs only the seed.
    "ci": {"database": None, "deadline": None, "print_blob": True},
    # Nightly: four times each test's count, random, with the example database so that a
    # failure found once is tried first next time (SVC_HYPOTHESIS_PROFILE=thorough).
    "thorough": {"deadline": None, "print_blob": True},
}
_EXAMPLE_SCALE = {"ci": 0.25, "thorough": 4.0}


def _register_hypothesis_profiles() -> None:
    try:
        from hypothesis import settings as hypothesis_settings
    except ImportError:
        return
    for name, options in HYPOTHESIS_PROFILES.items():
        hypothesis_settings.register_profile(name, **options)
    profile = os.environ.get("SVC_HYPOTHESIS_PROFILE", "")
    if profile:
        hypothesis_settings.load_profile(profile)


def examples(count: int) -> int:
    """A hypothesis test's ``max_examples``: ``count`` scaled by the profile in
    ``SVC_HYPOTHESIS_PROFILE`` (``ci``: a quarter, at least 10; ``thorough``: four times)."""
    scale = _EXAMPLE_SCALE.get(os.environ.get("SVC_HYPOTHESIS_PROFILE", ""), 1.0)
    return max(10, int(count * scale)) if scale < 1 else int(count * scale)


# --- Outside services for tests: Redis, an SMTP mailbox, an HTTP receiver -------------------------

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"


def in_ci() -> bool:
    """True under ``CI=true``: a service a test needs that does not answer fails the run."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def skip_or_fail(reason: str) -> None:
    """Skip the test, or fail it under ``CI=true``: nothing skips silently in CI."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: a service the suite needs must answer)", pytrace=False)
    pytest.skip(reason)


CHROMIUM = "/usr/bin/chromium"


def chromium_path() -> str:
    """``CHROMIUM`` when it and Playwright are installed; else skips (fails under ``CI=true``).
    For a module-scoped browser, which cannot take the function-scoped ``chromium`` fixture."""
    import importlib.util

    if not os.access(CHROMIUM, os.X_OK):
        skip_or_fail(f"{CHROMIUM} is not installed (apt-get install chromium)")
    if importlib.util.find_spec("playwright") is None:
        skip_or_fail("playwright is not installed (pip install -e '.[test]')")
    return CHROMIUM


@pytest.fixture
def chromium() -> str:
    """The path of Debian's Chromium for a browser test driven by Playwright
    (``executable_path=chromium``). Skips where the package is missing, except under ``CI=true``
    (fails): ``scripts/test`` installs it there, or fails the run saying it could not."""
    return chromium_path()


S3_TEST_BUCKET = "svc-contract"


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A moto S3 server for the session (its endpoint URL), with dummy credentials in the
    environment and one bucket, ``S3_TEST_BUCKET``."""
    import boto3
    from moto.server import ThreadedMotoServer

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_ACCESS_KEY_ID", "testing")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE"):
            mp.delenv(name, raising=False)
        # Keep any real AWS configuration on this machine out of the tests.
        mp.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
        port = free_port()
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        server.start()
        endpoint = f"http://127.0.0.1:{port}"
        try:
            boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=S3_TEST_BUCKET)
            yield endpoint
        finally:
            server.stop()


@pytest.fixture(scope="session")
def redis_url() -> str:
    """A Redis that answers, for contract tests of the Redis backends: ``SVC_TEST_REDIS_URL``, else
    ``redis://127.0.0.1:6379/15``. Skips when nothing answers, except under ``CI=true`` (fails).
    Keep keys under a unique prefix and delete them at the end of the test."""
    import redis

    url = svc_test_redis_url() or DEFAULT_REDIS_URL
    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        skip_or_fail(f"Redis at {url} does not answer: {exc}")
    finally:
        client.close()
    return url


class Mailbox:
    """An aiosmtpd handler keeping every message: a real SMTP peer for tests that send email."""

    def __init__(self) -> None:
        self.envelopes: list[Any] = []
        self.port = 0

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd's name
        self.envelopes.append(envelope)
        return "250 Message accepted for delivery"

    def messages(self, to: str | None = None) -> list[Any]:
        """The parsed messages received so far (optionally only those to ``to``)."""
        import email
        import email.policy

        parsed = [email.message_from_bytes(e.content, policy=email.policy.default) for e in self.envelopes]
        return [m for m in parsed if to is None or to in m["To"]]

    async def wait_for(self, count: int = 1, to: str | None = None, timeout: float = 10.0) -> list[Any]:
        """Poll until ``count`` messages (to ``to``) arrived; mail is sent after the response.
        ``timeout`` only bounds the wait for a message that never comes."""
        import asyncio
        import time

        deadline = time.monotonic() + timeout
        while len(self.messages(to)) < count:
            assert time.monotonic() < deadline, f"expected {count} email(s), got {len(self.messages(to))}"
            await asyncio.sleep(0.02)
        return self.messages(to)

    @staticmethod
    def token(message: Any) -> str:
        """The ``token`` of the link in a message's text body."""
        import re

        found = re.search(r"[?&]token=([A-Za-z0-9_-]+)", message.get_content())
        assert found, message.get_content()
        return found.group(1)


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    """A local SMTP server (aiosmtpd on a free port) keeping what it receives; configure apps with
    ``make_app(smtp_host="127.0.0.1", smtp_port=mailbox.port)``."""
    with running_mailbox() as box:
        yield box


@contextlib.contextmanager
def running_mailbox() -> Iterator[Mailbox]:
    """The ``mailbox`` fixture's server, for a fixture of a wider scope (a module's shared app)."""
    import socket

    from aiosmtpd.controller import Controller

    box = Mailbox()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        box.port = sock.getsockname()[1]
    controller = Controller(box, hostname="127.0.0.1", port=box.port)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()


@dataclass(frozen=True)
class ReceivedRequest:
    """One request an ``HttpReceiver`` got."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        import json

        return json.loads(self.body)


class HttpReceiver:
    """A real HTTP server on a free local port, in a thread: the outside end of webhooks, JWKS and
    discovery documents, and outside APIs. ``serve(path, document)`` answers JSON on any method;
    ``respond(path, fn)`` answers what ``fn(request)`` returns, ``(status, body, headers)``, computed
    per request (in the server's thread; it may sleep to play a slow endpoint); a ``path`` ending
    in ``*`` answers every path it begins (an exact path wins). Every request is
    kept in ``requests`` and counted in ``hits[path]`` (the path with its query). Given a server
    ``tls`` context (``tls_ca.issue_cert(...)`` configured on it) it speaks HTTPS; a client that
    refuses the certificate ends its connection in the handshake, which reaches no handler.

    A responder that raises (an ``assert`` on what the app sent) does not drop the connection:
    the request and the error are kept in ``broken``, the app gets a 500 naming them, and
    ``check()`` (which the ``http_receiver`` fixture calls at the test's end) fails the test in
    its own thread with the request it saw."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        import collections
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.documents: dict[str, tuple[int, bytes, str]] = {}
        self.responders: dict[str, Callable[[ReceivedRequest], tuple[int, bytes, dict[str, str]]]] = {}
        self.requests: list[ReceivedRequest] = []
        self.hits: collections.Counter[str] = collections.Counter()
        self.broken: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if len(body) < length:  # the client went away mid-body (killed): no request arrived
                    self.close_connection = True
                    return
                request = ReceivedRequest(self.command, self.path, dict(self.headers), body)
                receiver.hits[self.path] += 1
                receiver.requests.append(request)
                responder = receiver.responders.get(self.path) or next(
                    (fn for path, fn in receiver.responders.items()
                     if path.endswith("*") and self.path.startswith(path[:-1])), None)
                headers: dict[str, str] = {}
                if responder is not None:
                    try:
                        status, payload, headers = responder(request)
                    except Exception as exc:  # noqa: BLE001 - reported in the test's thread by check()
                        status, payload, headers = 500, receiver.report_broken(request, exc), {}
                    ctype = headers.pop("Content-Type", "application/json")
                else:
                    status, payload, ctype = receiver.documents.get(
                        self.path, (404, b'{"error": "not found"}', "application/json"))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer  # noqa: N815 - the stdlib's names

            def log_message(self, *args: Any) -> None:
                return None

        class QuietServer(ThreadingHTTPServer):
            """A client that hung up (a timeout under test) is not a traceback on stderr."""

            def handle_error(self, request: Any, client_address: Any) -> None:
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        if tls is not None:  # the handshake runs in accept(); a refused one is an OSError it drops
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        self.running = True

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def serve(self, path: str, document: Any, status: int = 200) -> str:
        """Answer ``document`` as JSON at ``path``; returns its URL."""
        import json

        return self.serve_raw(path, json.dumps(document).encode(), status)

    def serve_raw(self, path: str, body: bytes, status: int = 200,
                  content_type: str = "application/json") -> str:
        self.documents[path] = (status, body, content_type)
        return self.url(path)

    def respond(self, path: str, fn: Callable[[ReceivedRequest], tuple[int, bytes, dict[str, str]]]) -> str:
        """Answer each request to ``path`` (every path it begins, if it ends in ``*``) with
        ``fn(request)``; returns its URL."""
        self.responders[path] = fn
        return self.url(path)

    def report_broken(self, request: ReceivedRequest, exc: BaseException) -> bytes:
        """Keep ``request`` and what its responder raised; the JSON body of the 500 it gets."""
        import json

        said = f"{request.method} {request.path}: {type(exc).__name__}: {exc}"
        self.broken.append(f"{said}\n  headers: {request.headers}\n  body: {request.body[:500]!r}")
        return json.dumps({"error": "the fake server refused this request", "detail": said}).encode()

    def reset(self) -> None:
        """As new, on the same server: no document, responder, request, hit or broken contract
        (a module's receiver, shared by its tests, between two of them)."""
        self.documents.clear()
        self.responders.clear()
        self.requests.clear()
        self.hits.clear()
        self.broken.clear()

    def check(self) -> None:
        """Fail the calling test when a responder refused a request (a broken contract)."""
        if self.broken:
            pytest.fail("the fake server saw requests that broke its contract:\n" + "\n".join(self.broken),
                        pytrace=False)

    def received(self, path: str | None = None) -> list[ReceivedRequest]:
        """The requests received so far (optionally only those to ``path``)."""
        return [r for r in self.requests if path is None or r.path == path]

    def stop(self) -> None:
        if self.running:
            self.running = False
            self.httpd.shutdown()
            self.httpd.server_close()


@pytest.fixture
def http_receiver() -> Iterator[HttpReceiver]:
    """An ``HttpReceiver`` for the test, stopped at its end."""
    receiver = HttpReceiver()
    try:
        yield receiver
    finally:
        receiver.stop()
    receiver.check()


@pytest.fixture(scope="session")
def tls_ca() -> Any:
    """A local certificate authority (``trustme.CA``): ``tls_ca.issue_cert("localhost")`` gives a
    server certificate, ``tls_ca.cert_pem.tempfile()`` the CA file a client trusts
    (``SVC_SMTP_CA_FILE``, ``SVC_OUTBOUND_CA_FILE``)."""
    import trustme

    return trustme.CA()


@pytest.fixture
def tls_ca_file(tls_ca: Any, tmp_path: Path) -> str:
    """The path of a PEM file holding ``tls_ca``'s certificate: what ``SVC_SMTP_CA_FILE`` and
    ``SVC_OUTBOUND_CA_FILE`` name."""
    path = tmp_path / "tls-ca.pem"
    tls_ca.cert_pem.write_to_path(str(path))
    return str(path)


def tls_server_context(cert: Any) -> ssl.SSLContext:
    """A server-side TLS context holding ``cert`` (a ``tls_ca.issue_cert(...)``)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    return context


@pytest.fixture
def production_password_hashing() -> Iterator[None]:
    """The production argon2 parameters for one test (the harness hashes cheaply otherwise)."""
    cheap = passwords.current_parameters()
    passwords.use_parameters(passwords.PARAMETERS)
    try:
        yield
    finally:
        passwords.use_parameters(cheap)


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


# -- Statements and idle sites -------------------------------------------------------------------
# A maintenance job must cost a bounded number of statements, whatever the number of sites that
# have nothing for it (issue 27, "scale"): a test pins it by counting the job's statements with
# a few idle sites and with many more.


@contextlib.contextmanager
def counted_statements(kernel_or_app: Any) -> Iterator[list[str]]:
    """The SQL statements the app's engine sends inside the block from the calling task, in
    order (a SQLAlchemy ``before_cursor_execute`` listener). Only the calling task's: the app's
    background tasks (the event dispatcher waking for a new site) share the engine."""
    kernel = getattr(kernel_or_app, "kernel", kernel_or_app)
    engine = kernel.db.engine.sync_engine
    task = asyncio.current_task()
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if asyncio.current_task() is task:
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


async def add_idle_sites(kernel_or_app: Any, count: int, prefix: str = "idle") -> list[str]:
    """Create ``count`` sites through the kernel's ``create_site`` (every plugin's
    ``site_created`` runs, as for a real site) that hold nothing else; returns their ids."""
    from kernel.tenancy.service import create_site

    kernel = getattr(kernel_or_app, "kernel", kernel_or_app)
    ids = [f"{prefix}-{uuid.uuid4().hex[:8]}-{n}" for n in range(count)]
    for site_id in ids:
        await create_site(kernel, site_id)
    return ids


# ---------------------------------------------------------------------------- live server
# WebSocket, SSE and CORS tests need a real server; the fixtures live in their own module.

from kernel.testing.live import LiveServer, live_app, live_server  # noqa: E402, F401
