"""The ``svc`` command: serve, worker, jobs, migrate, sites, plugins (plus ``register_commands``).

``svc --help``, ``svc --version`` and the built-in commands' help answer without importing the
plugins or SQLAlchemy: the plugins are loaded only for a command one of them registers. Every
command that works on an instance says on its first line (on standard error, so that standard
output stays for what scripts read) which data dir it uses and whether it is new; the read-only
ones (``sites list``, ``jobs``) refuse to create an instance where there is none.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel.version import __version__

if TYPE_CHECKING:
    from sqlalchemy.exc import OperationalError

    from kernel.base.settings import Settings

BUILTIN = ("serve", "worker", "jobs", "migrate", "sites", "plugins")


class NoInstance(Exception):
    """A command that only reads found no instance where the settings point."""


def _settings() -> Settings:
    from kernel.base.settings import Settings

    return Settings.from_env()


def instance_exists(settings: Settings, data_dir: Path) -> bool:
    """Whether an instance's database is there, found without creating anything: the SQLite file,
    or (any other database) the migrations table with a revision in it."""
    from sqlalchemy.engine import make_url

    from kernel.app import database_url
    from kernel.db.engine import db_timeouts, default_sqlite_path
    from kernel.db.migrate import current_heads

    url = make_url(settings.database_url) if settings.database_url else None
    if url is None or url.get_backend_name() == "sqlite":
        path = Path(url.database) if url is not None and url.database else default_sqlite_path(data_dir)
        if not path.exists():
            return False
    return bool(current_heads(database_url(settings), [], **db_timeouts(settings)))


def open_instance(*, create: bool) -> Settings:
    """The settings of the instance a command works on, once its first line has named the data dir.
    ``create=False`` (a read-only command) raises ``NoInstance`` where there is none."""
    settings = _settings()
    data_dir = settings.data_dir_path
    new = not instance_exists(settings, data_dir)
    if new and not create:
        raise NoInstance(f"no svc instance in {data_dir} (SVC_DATA_DIR, default ./svc-data): run this where "
                         "the instance's data dir is, set SVC_DATA_DIR, or start one with `svc serve`")
    say(f"data dir {data_dir} ({'new' if new else 'existing'})")
    if create:
        os.umask(0o077)  # what the instance writes (files, locks, metric files) is its own alone
        if settings.generate_encryption_key():
            say(f"generated SVC_ENCRYPTION_KEY into {data_dir / 'encryption_key'} (0600): it opens the "
                "stored secrets (webhooks, store sync, git); back it up with the data dir")
    return settings


def say(line: str) -> None:
    """One line of the command's own on standard error (``kernel.base.logconfig.announce``)."""
    from kernel.base.logconfig import announce

    announce(line)


def migrate(settings: Settings) -> list[str]:
    """Upgrade every enabled plugin's migration branch; returns the heads now applied."""
    from kernel.app import database_url
    from kernel.db.engine import db_timeouts
    from kernel.db.migrate import current_heads, migration_paths, upgrade
    from kernel.hooks.plugins import make_plugin_manager

    pm, _ = make_plugin_manager(settings.plugins_disabled, None, settings.trace_hooks, extra=settings.plugins_extra)
    paths = migration_paths(pm)
    url = database_url(settings)
    before = current_heads(url, paths, **db_timeouts(settings))
    upgrade(url, paths, **db_timeouts(settings))  # bounded like the app's engine: a paused server fails it
    after = current_heads(url, paths, **db_timeouts(settings))
    if after != before:  # alembic's own lines are quiet (kernel.base.logconfig): say once what changed
        logging.getLogger("svc.migrate").info("migrated the database to %s", ", ".join(sorted(set(after) - set(before))))
    return after


def cmd_migrate(args: argparse.Namespace) -> int:
    heads = migrate(open_instance(create=True))
    print("database at " + ", ".join(heads))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from kernel.sealed import check_at_start
    from kernel.workers.serve import (
        differences,
        reuseport_supported,
        serve_reuseport,
        start_broker,
        start_line,
    )

    if args.dev:  # before the settings are read: the workers read SVC_ENV from the environment too
        os.environ["SVC_ENV"] = "development"
    settings = open_instance(create=True)
    host = args.host or settings.host
    port = args.port or settings.port
    workers = args.workers or settings.workers
    migrate(settings)
    from kernel.app import build_kernel

    check_at_start(build_kernel(settings))  # what needs the plugins fails here, not in a worker
    # Workers re-read the environment; pass the chosen values on so they agree with this process.
    os.environ["SVC_HOST"], os.environ["SVC_PORT"] = host, str(port)
    metrics_dir = None
    if workers > 1:  # /metrics adds up every worker: prometheus_client's multiprocess mode
        from kernel.metrics.node import prepare_multiproc_dir

        metrics_dir = str(prepare_multiproc_dir(settings.data_path))
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    # No permessage-deflate on WebSockets: frames here are small signals, and each compressed
    # socket holds zlib state of tens of KB (docs/performance.md, realtime).
    # log_config=None: uvicorn's loggers keep no handler of their own, so its lines reach svc's
    # handler in svc's format (kernel/base/logconfig.py).
    options = {"lifespan": "on", "log_level": settings.log_level, "log_config": None, "proxy_headers": True,
               "access_log": False,
               "forwarded_allow_ips": ",".join(settings.trusted_proxies) or "127.0.0.1",
               "ws_per_message_deflate": False}
    broker = start_broker(settings, workers)
    for line in differences(settings, workers):
        say(line)
    say(start_line(settings, host, port))
    if settings.env == "development":
        say("SVC_ENV=development: GraphQL introspection and explorer on, CORS from http://localhost:*, "
            "outbound requests may reach loopback; not for production")
    try:
        if reuseport_supported(port, workers):  # each worker its own socket: connections spread (kernel/workers/serve.py)
            return serve_reuseport(host, port, workers, options, metrics_dir=metrics_dir)
        uvicorn.run("kernel.asgi:app", host=host, port=port, workers=workers, **options)
        return 0
    finally:
        if broker is not None:
            broker.stop()


def cmd_worker(args: argparse.Namespace) -> int:
    from kernel.app import build_kernel, shutdown_kernel, startup_kernel

    settings = open_instance(create=True)
    migrate(settings)

    settings.values["jobs_inprocess"] = False
    kernel = build_kernel(settings)
    from kernel.sealed import check_at_start

    check_at_start(kernel)
    metrics_port = settings.worker_metrics_port if args.metrics_port is None else args.metrics_port
    metrics: Any = None

    async def startup() -> Any:
        nonlocal metrics
        await startup_kernel(kernel)
        if metrics_port:
            from kernel.metrics.worker import WorkerMetrics

            metrics = WorkerMetrics(kernel)
            await metrics.start(settings.worker_metrics_host, metrics_port)
        return kernel

    async def shutdown(started: Any) -> None:
        if metrics is not None:
            await metrics.stop()
        await shutdown_kernel(started)

    kernel.jobs.run_worker(startup, shutdown, workers=args.workers)
    return 0


def cmd_jobs(args: argparse.Namespace) -> int:
    status = _run(_with_kernel(lambda k: k.jobs.status(site_id=args.site, failures=args.failures)))
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    print(format_job_status(status))
    return 0


def format_job_status(status: dict[str, Any]) -> str:
    """The text ``svc jobs`` prints: one line per job with its counts, then recent failures."""
    head = f"{'job':<32} {'kind':<9} {'schedule':<18} {'pending':>7} {'due':>5} {'running':>7} {'failed':>6}"
    lines = [head]
    for job in status["jobs"]:
        kind = job.get("kind") or "unknown"
        lines.append(f"{job['name']:<32} {kind:<9} {job.get('schedule') or '-':<18} {job['pending']:>7} "
                     f"{job['due']:>5} {job['running']:>7} {job['failed']:>6}")
    t = status["totals"]
    lines.append(f"{'total':<61} {t['pending']:>7} {t['due']:>5} {t['running']:>7} {t['failed']:>6}")
    failures = status["recentFailures"]
    lines.append("recent failures:" if failures else "recent failures: none")
    for f in failures:
        error = (f["error"] or "").splitlines()[-1] if f["error"] else ""
        lines.append(f"  {f['failedAt']}  {f['name']}  site={f['siteId'] or '-'}  attempts={f['attempts']}  "
                     f"id={f['id']}  {error}")
    return "\n".join(lines)


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _with_kernel(fn: Any, *, create: bool = False) -> Any:
    """``await fn(kernel)`` with a started kernel of the instance (the ``kernel_factory`` of
    ``register_commands``); ``create``: make the instance where there is none."""
    from kernel.app import build_kernel, shutdown_kernel, startup_kernel

    settings = open_instance(create=create)
    migrate(settings)
    settings.values["jobs_inprocess"] = False
    settings.values["events_dispatch"] = False  # a one-off command dispatches no events
    kernel = build_kernel(settings)
    await startup_kernel(kernel)
    try:
        return await fn(kernel)
    finally:
        await shutdown_kernel(kernel)


def cmd_sites(args: argparse.Namespace) -> int:
    from kernel.base.errors import ApiError
    from kernel.tenancy import service

    if args.sites_cmd == "create":
        try:
            site = _run(_with_kernel(lambda k: service.create_site(k, args.site_id, args.name), create=True))
        except ApiError as exc:
            print(f"svc sites create: {exc.message}", file=sys.stderr)
            return 1
        print(json.dumps(site))
        return 0
    sites, _ = _run(_with_kernel(lambda k: service.list_sites(k, 10_000, 0)))
    for site in sites:
        print(f"{site['id']}\t{site['name']}\t{site['createdAt']}")
    return 0


def plugin_rows(settings: Settings) -> list[dict[str, Any]]:
    """What ``svc plugins list`` prints: each plugin, enabled or not, and what it registers."""
    from kernel.app import _collect_routes, build_kernel

    kernel = build_kernel(settings)
    routes: dict[str, list[str]] = {}
    for route in _collect_routes(kernel):
        routes.setdefault(route.plugin, []).append(route.template)
    jobs: dict[str, list[str]] = {}
    for job in kernel.jobs.registered():
        jobs.setdefault(job.get("owner") or "", []).append(job["name"])
    tables = _tables_by_plugin(kernel)
    rows = []
    for info in kernel.plugins:
        rows.append({
            "name": info.name, "enabled": info.enabled, "essential": info.essential,
            "requires": list(info.requires), "description": info.description,
            "routes": routes.get(info.name, []), "tables": tables.get(info.name, []),
            "jobs": jobs.get(info.name, []),
        })
    return with_requirement_graph(rows)


def with_requirement_graph(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with the requirement graph: ``needs`` (every plugin a row requires, however
    indirectly), ``requiredBy`` (the plugins that require it directly) and ``floor`` (0 for a plugin
    that requires none, else one above the highest floor it requires)."""
    requires = {row["name"]: list(row["requires"]) for row in rows}
    needs: dict[str, set[str]] = {}

    def closure(name: str, path: tuple[str, ...] = ()) -> set[str]:
        if name not in needs:
            found: set[str] = set()
            for other in requires.get(name, []):
                if other not in path:  # a circle is the plugin manager's to refuse, not ours to loop on
                    found |= {other} | closure(other, (*path, name))
            needs[name] = found
        return needs[name]

    floors: dict[str, int] = {}

    def floor(name: str, path: tuple[str, ...] = ()) -> int:
        if name not in floors:
            below = [floor(o, (*path, name)) for o in requires.get(name, []) if o in requires and o not in path]
            floors[name] = 1 + max(below) if below else 0
        return floors[name]

    return [{**row, "needs": sorted(closure(row["name"])), "floor": floor(row["name"]),
             "requiredBy": sorted(n for n, r in requires.items() if row["name"] in r)} for row in rows]


def format_requirement_graph(rows: list[dict[str, Any]], *, width: int) -> str:
    """What ``svc plugins list --graph`` prints: the plugins floor by floor (a plugin stands above
    every plugin it requires), each with what it requires and, where more, all that it needs."""
    width = max(width, 60)
    lines = ["Requirement graph: a plugin requires only plugins on lower floors."]
    for level in sorted({row["floor"] for row in rows}):
        lines.append(f"floor {level}")
        for row in sorted((r for r in rows if r["floor"] == level), key=lambda r: r["name"]):
            parts = ["requires " + ", ".join(sorted(row["requires"]))] if row["requires"] else []
            if len(row["needs"]) > len(row["requires"]):
                parts.append("needs in all " + ", ".join(row["needs"]))
            if row["requiredBy"]:
                parts.append("required by " + ", ".join(row["requiredBy"]))
            state = "" if row["enabled"] else " (disabled)"
            text = f"{row['name'] + state:<14} " + ("; ".join(parts) or "requires nothing")
            lines.extend(textwrap.wrap(text, width, initial_indent="  ", subsequent_indent=" " * 6))
    return "\n".join(lines)


def _tables_by_plugin(kernel: Any) -> dict[str, list[str]]:
    import importlib

    out: dict[str, list[str]] = {}
    for info in kernel.plugins:
        if not info.enabled or not hasattr(info.module, "__name__"):
            continue
        package = info.module.__name__.rsplit(".", 1)[0]
        try:
            tables_mod = importlib.import_module(package + ".tables")
        except ImportError:
            continue
        from sqlalchemy import Table

        out[info.name] = sorted(v.name for v in vars(tables_mod).values() if isinstance(v, Table))
    return out


def cmd_plugins(args: argparse.Namespace) -> int:
    settings = _settings()
    data_dir = settings.data_dir_path
    say(f"data dir {data_dir} (plugins list reads no instance)")
    rows = plugin_rows(settings)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if args.graph:
        print(format_requirement_graph(rows, width=shutil.get_terminal_size().columns))
        return 0
    print(format_plugin_rows(rows, routes=args.routes, width=shutil.get_terminal_size().columns))
    return 0


def format_plugin_rows(rows: list[dict[str, Any]], *, routes: bool, width: int) -> str:
    """What ``svc plugins list`` prints: a plugin's name, state and description wrapped to ``width``,
    then what it registers as counts; ``routes`` lists the routes, tables and jobs one a line."""
    width = max(width, 60)
    lines = []
    for row in rows:
        state = "enabled" if row["enabled"] else "disabled"
        if row["essential"]:
            state += " (essential)"
        lines.extend(textwrap.wrap(f"{row['name']:<14} {state:<19} {row['description']}", width,
                                   subsequent_indent=" " * 4))
        counts = [f"{len(row[kind])} {kind}" for kind in ("routes", "tables", "jobs") if row[kind]]
        if row["requires"]:
            counts.append("requires " + ", ".join(row["requires"]))
        if counts:
            lines.extend(textwrap.wrap("; ".join(counts), width, initial_indent=" " * 4, subsequent_indent=" " * 4))
        if routes:
            lines.extend(f"    {kind[:-1]} {name}" for kind in ("routes", "tables", "jobs") for name in row[kind])
    return "\n".join(lines)


def build_parser() -> tuple[argparse.ArgumentParser, Any]:
    """The parser of the built-in commands; the plugins' commands are added to ``sub`` by
    ``register_commands`` when one of them is asked for."""
    parser = argparse.ArgumentParser(
        prog="svc", description="svc: multi-tenant headless CMS",
        epilog="Enabled plugins add commands of their own (svc users, svc push, ...): `svc plugins list "
               "--routes` names them, and `svc COMMAND --help` explains one.")
    parser.add_argument("--version", action="version", version=f"svc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="migrate, then serve the API with uvicorn")
    serve.add_argument("--host", default=None, help="address to listen on (SVC_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port to listen on (SVC_PORT, default 8000)")
    serve.add_argument("--workers", type=int, default=None,
                       help="worker processes (SVC_WORKERS, default 1); docs/operations.md says what differs")
    serve.add_argument("--dev", action="store_true",
                       help="development defaults (SVC_ENV=development): GraphQL introspection and explorer, "
                            "CORS from http://localhost:*, outbound requests may reach loopback")
    serve.set_defaults(func=cmd_serve)

    worker = sub.add_parser("worker", help="run the job queue consumer")
    worker.add_argument("--workers", type=int, default=None,
                        help="jobs run at once (default SVC_JOBS_CONCURRENCY)")
    worker.add_argument("--metrics-port", type=int, default=None,
                        help="serve Prometheus metrics on this port (SVC_WORKER_METRICS_HOST, 127.0.0.1 by default)")
    worker.set_defaults(func=cmd_worker)

    jobs = sub.add_parser("jobs", help="job queue status: registered jobs, counts, recent failures")
    jobs.add_argument("--site", default=None, help="only this site's jobs")
    jobs.add_argument("--failures", type=int, default=10, help="how many recent failures to show")
    jobs.add_argument("--json", action="store_true", help="print the status as JSON")
    jobs.set_defaults(func=cmd_jobs)

    sub.add_parser("migrate", help="create or upgrade the database schema").set_defaults(func=cmd_migrate)

    sites = sub.add_parser("sites", help="manage sites")
    sites_sub = sites.add_subparsers(dest="sites_cmd", required=True)
    create = sites_sub.add_parser("create", help="create a site")
    create.add_argument("site_id", help="the site's id: lowercase letters, digits, '-' and '_'")
    create.add_argument("--name", default=None, help="the site's display name (default: its id)")
    sites_sub.add_parser("list", help="list sites")
    sites.set_defaults(func=cmd_sites)

    plugins = sub.add_parser("plugins", help="list plugins")
    plugins_sub = plugins.add_subparsers(dest="plugins_cmd", required=True)
    listing = plugins_sub.add_parser("list", help="every plugin, enabled or not, and what it registers")
    listing.add_argument("--json", action="store_true", help="print every plugin's registrations as JSON")
    listing.add_argument("--routes", action="store_true", help="list each plugin's routes, tables and jobs")
    listing.add_argument("--graph", action="store_true",
                         help="the requirement graph: plugins by floor, what each requires and what requires it")
    plugins.set_defaults(func=cmd_plugins)
    return parser, sub


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names (its first word that is not an option), if any."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    from kernel.workers.serve import return_large_blocks

    argv = list(sys.argv[1:] if argv is None else argv)
    return_large_blocks()  # svc serve with one worker, svc worker: see its text
    try:
        parser, sub = build_parser()
        settings = None
        if command_of(argv) not in (*BUILTIN, None):  # a plugin's command: load the plugins for it
            from kernel.hooks.plugins import make_plugin_manager

            settings = _settings()
            pm, _ = make_plugin_manager(settings.plugins_disabled, None, False, extra=settings.plugins_extra)
            pm.hook.register_commands(subparsers=sub, kernel_factory=_with_kernel)
        args = parser.parse_args(argv)  # --help and --version end here
        from kernel.base.logconfig import configure_logging

        settings = settings or _settings()
        configure_logging(settings.log_level, settings.log_format)
        return int(args.func(args) or 0)
    except Exception as exc:  # noqa: BLE001 - the operator's errors get one line; anything else raises
        said = operator_error(exc)
        if said is None:
            raise
        message, status = said
        print(message, file=sys.stderr)
        return status


def operator_error(exc: Exception) -> tuple[str, int] | None:
    """The line and exit status of an error the operator can fix, or None for a bug."""
    from sqlalchemy.exc import OperationalError

    from kernel.base.errors import SettingsError
    from kernel.hooks.plugins import PluginError

    if isinstance(exc, (SettingsError, PluginError)):
        return f"svc: {exc}", 2
    if isinstance(exc, NoInstance):
        return f"svc: {exc}", 1
    if isinstance(exc, ValueError):  # a backend refusing its URL (database, storage) at boot
        return f"svc: configuration error: {exc}", 2
    if isinstance(exc, OperationalError):  # refused, or no answer within SVC_DB_CONNECT/COMMAND_TIMEOUT
        return f"svc: the database is not reachable: {database_error(exc)}", 1
    return None


def database_error(exc: OperationalError) -> str:
    """The driver's own message (the last line says why: refused, timed out, the setting that
    bounded it), without SQLAlchemy's statement and background link."""
    lines = [line.strip() for line in str(exc.orig or exc).splitlines() if line.strip()]
    message = lines[-1] if lines else type(exc.orig or exc).__name__
    if message.endswith("connection timeout expired"):  # libpq's words for its connect_timeout
        message += " (SVC_DB_CONNECT_TIMEOUT, or connect_timeout in SVC_DATABASE_URL)"
    return message


if __name__ == "__main__":
    sys.exit(main())
