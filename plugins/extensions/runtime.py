"""The extensions loaded in this worker, kept in step with the database.

``Runtime.sync()`` reads the installed extensions and their per-site rows and makes this
worker match: an extension enabled in at least one site is verified (its signature, against
the publisher keys of now) and loaded; one enabled nowhere, uninstalled, or failing
verification is unloaded. The enable, disable, capabilities, uninstall and key routes call it
and then emit ``extensions.changed`` on the bus, which every other worker answers with its own
``sync()`` (Redis fan-out), so no worker restarts. Every start syncs too.

Loading registers, through the extension's pluggy hooks, each thing it asks for, and keeps
the function that undoes it: routes (mounted in the kernel's extension sink; checked but not
mounted in a process without an HTTP app, such as ``svc worker``), bus filters and
actions (``register_event_handlers``, through ``ScopedBus``), jobs (``register_jobs``,
through ``ScopedJobs``) and flow operations (``register_flow_operations``, through a proxy
plugin registered in the plugin manager, which the flows registry follows). Unloading calls
them all. Any other hook an extension implements refuses the load: it could not be undone
or scoped to a site.

The extension's code itself runs in a runner process of its own (``host.Host``, with
``SVC_EXT_ISOLATION=process``, the default): the runtime registers the stand-ins the host makes
from what the runner declared, so every check below applies to them unchanged.

Every call into extension code runs inside ``kernel.base.sandbox.running`` with the capabilities
the site granted, and only for a site where the extension is enabled. An exception is
logged and counted (``svc_extension_sites.failures``); it never reaches the built-in request
that triggered it (an ``ApiError`` raised by a filter is a deliberate veto and is kept), and
at ``SVC_EXT_MAX_FAILURES`` the extension is disabled in that site.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fnmatch
import inspect
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, update

from extensions_sdk import channel
from kernel import hookimpl
from kernel.base import sandbox
from kernel.base.errors import ApiError
from kernel.db.meta import now_utc
from kernel.http.routing import Route
from kernel.messaging.bus import EventContext
from plugins.extensions import keys as keyring
from plugins.extensions import loader
from plugins.extensions.host import Host, RunnerError
from plugins.extensions.tables import extension_sites, extensions

log = logging.getLogger("svc.extensions")

STATE_KEY = "extensions.runtime"
CHANGED = "extensions.changed"
SUPPORTED_HOOKS = {"register_routes": "routes", "register_event_handlers": "events", "register_jobs": "jobs",
                   "register_flow_operations": "flows"}


class LoadError(Exception):
    """The extension cannot be loaded (a hook it may not use, a bad registration, an import error)."""


def runtime(kernel: Any) -> Runtime:
    found = kernel.state.get(STATE_KEY)
    if found is None:
        found = kernel.state[STATE_KEY] = Runtime(kernel)
    return found


@dataclass
class Loaded:
    """One extension loaded in this worker."""

    id: str
    name: str
    sha256: str
    module_name: str
    requested: frozenset[str]
    sites: dict[str, frozenset[str]] = field(default_factory=dict)  # enabled site -> granted
    undo: list[Callable[[], None]] = field(default_factory=list)
    verified_with: str = ""  # the keys and policy its signature was last verified under
    host: Host | None = None  # its runner process (SVC_EXT_ISOLATION=process)

    def scope(self, site_id: str | None) -> sandbox.ExtensionScope | None:
        """The sandbox scope in ``site_id``, or None when not enabled there."""
        granted = self.sites.get(site_id or "")
        return None if granted is None else sandbox.ExtensionScope(self.name, site_id, granted)


def _event_allowed(scope: sandbox.ExtensionScope, event: str, payload: Any) -> bool:
    patterns = [c.split(":", 1)[1] for c in scope.capabilities if c.startswith("events:")]
    if not any(fnmatch.fnmatchcase(event, p) for p in patterns):
        return False
    # Item events carry whole items: the collection must be granted as well.
    collection = payload.get("collection") if isinstance(payload, dict) else None
    return not isinstance(collection, str) or scope.allows_collection(collection)


class ScopedBus:
    """What an extension's ``register_event_handlers`` gets as ``bus``: each handler runs only
    in sites where the extension is enabled with a matching ``events:`` grant, sandboxed."""

    def __init__(self, rt: Runtime, loaded: Loaded) -> None:
        self.rt, self.loaded, self._bus = rt, loaded, rt.kernel.bus

    def _check(self, event: str) -> None:
        patterns = [c.split(":", 1)[1] for c in self.loaded.requested if c.startswith("events:")]
        if not any(p == event or fnmatch.fnmatchcase(event, p) for p in patterns):
            raise LoadError(f"handler for {event!r} is not covered by an 'events:' capability of the manifest")

    def _wrap(self, handler: Callable[..., Any], veto: bool) -> Callable[..., Any]:
        loaded, rt = self.loaded, self.rt

        async def run(event: str, payload: Any, ctx: EventContext) -> Any:
            scope = loaded.scope(ctx.site_id)
            if scope is None or not _event_allowed(scope, event, payload):
                return None
            try:
                with sandbox.running(scope):
                    result = handler(event, payload, ctx)
                    if inspect.isawaitable(result):
                        result = await result
                return result
            except ApiError:
                # A filter's ApiError vetoes the write on purpose, unless it is the sandbox
                # refusing the extension something: that is the extension's failure.
                if veto and not scope.refusals:
                    raise
                rt.failed(loaded, ctx.site_id, f"handler {event}")
            except Exception:  # noqa: BLE001 - an extension never breaks the write that called it
                rt.failed(loaded, ctx.site_id, f"handler {event}")
            return None

        return run

    def on_filter(self, event: str, handler: Callable[..., Any], priority: int = 100) -> Callable[[], None]:
        self._check(event)
        undo = self._bus.on_filter(event, self._wrap(handler, veto=True), priority)
        self.loaded.undo.append(undo)
        return undo

    def on_action(self, event: str, handler: Callable[..., Any], priority: int = 100) -> Callable[[], None]:
        self._check(event)
        undo = self._bus.on_action(event, self._wrap(handler, veto=False), priority)
        self.loaded.undo.append(undo)
        return undo


class ScopedJobs:
    """What an extension's ``register_jobs`` gets as ``jobs``. Names start with ``ext.<name>.``.
    ``task(name, fn)``: ``fn(kernel, site_id, **args)``, enqueued with ``site_id``; it runs only
    where enabled with ``jobs``. ``periodic(name, fn, ...)``: ``fn(kernel, site_id)``, once per
    tick for each site where the extension is enabled with ``jobs``."""

    def __init__(self, rt: Runtime, loaded: Loaded) -> None:
        self.rt, self.loaded, self._jobs = rt, loaded, rt.kernel.jobs

    def _name(self, name: str) -> str:
        prefix = f"ext.{self.loaded.name}."
        if not isinstance(name, str) or not name.startswith(prefix):
            raise LoadError(f"job names of {self.loaded.name} start with {prefix!r}, got {name!r}")
        return name

    async def _run(self, site_id: Any, fn: Callable[..., Any], kernel: Any, args: dict[str, Any]) -> None:
        scope = self.loaded.scope(site_id if isinstance(site_id, str) else None)
        if scope is None or not scope.allows("jobs"):
            return
        try:
            with sandbox.running(scope):
                await fn(kernel, site_id=site_id, **args)
        except Exception:  # noqa: BLE001 - counted; the queue's retry would only fail again
            self.rt.failed(self.loaded, site_id, "job")

    def task(self, name: str, fn: Callable[..., Any], **options: Any) -> Callable[[], None]:
        async def job(kernel: Any, site_id: Any = None, **args: Any) -> None:
            await self._run(site_id, fn, kernel, args)

        undo = self._jobs.task(self._name(name), job, owner=f"ext:{self.loaded.name}", **options)
        self.loaded.undo.append(undo)
        return undo

    def periodic(self, name: str, fn: Callable[..., Any], **options: Any) -> Callable[[], None]:
        async def job(kernel: Any) -> None:
            for site_id in sorted(self.loaded.sites):
                await self._run(site_id, fn, kernel, {})

        undo = self._jobs.periodic(self._name(name), job, owner=f"ext:{self.loaded.name}", **options)
        self.loaded.undo.append(undo)
        return undo


class FlowOperations:
    """The proxy plugin registered in the plugin manager for an extension's flow operations:
    each operation's ``run`` checks the site and runs sandboxed."""

    def __init__(self, rt: Runtime, loaded: Loaded, operations: list[Any]) -> None:
        self.operations = [dataclasses.replace(op, run=self._wrap(rt, loaded, op.run)) for op in operations]

    @staticmethod
    def _wrap(rt: Runtime, loaded: Loaded, run: Callable[..., Any]) -> Callable[..., Any]:
        async def scoped(ctx: Any, options: Any) -> Any:
            scope = loaded.scope(getattr(ctx, "site_id", None))
            if scope is None or not scope.allows("flows"):
                raise ApiError(404, "NOT_FOUND", f"Extension '{loaded.name}' is not enabled for flows in this site")
            try:
                with sandbox.running(scope):
                    return await run(ctx, options)
            except ApiError:
                raise
            except RunnerError as exc:
                rt.failed(loaded, ctx.site_id, "flow operation")
                raise exc.api from None
            except Exception as exc:
                rt.failed(loaded, ctx.site_id, "flow operation")
                raise ApiError(500, "EXTENSION_FAILED", f"Extension '{loaded.name}' failed") from exc

        return scoped

    @hookimpl(optionalhook=True)
    def register_flow_operations(self, kernel: Any) -> list[Any]:
        return self.operations


class Runtime:
    """This worker's loaded extensions (``kernel.state["extensions.runtime"]``)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.loaded: dict[str, Loaded] = {}
        self.lock = asyncio.Lock()
        self.pending: set[asyncio.Task[Any]] = set()
        self.poller: asyncio.Task[Any] | None = None

    # ------------------------------------------------------------------ syncing

    async def sync(self) -> dict[str, str]:
        """Make this worker match the database; returns {extension id: load error} for the
        extensions that should run and could not. A loaded extension is verified again when its
        bytes, the publisher keys or the policy changed (the bundle is read only then)."""
        async with self.lock:
            async with self.kernel.db.connect() as conn:
                columns = [c for c in extensions.c if c.name != "bundle"]
                rows = [dict(r) for r in (await conn.execute(select(*columns))).mappings()]
                enabled = (await conn.execute(select(extension_sites.c.extension_id, extension_sites.c.site_id,
                                                     extension_sites.c.granted)
                                              .where(extension_sites.c.enabled.is_(True)))).all()
                keys = await keyring.load_keys(self.kernel, conn)
            fingerprint = repr((sorted((p, sorted(k.items())) for p, k in keys.items()),
                                self.kernel.settings.get("ext_signature_policy")))
            sites: dict[str, dict[str, frozenset[str]]] = {}
            for ext_id, site_id, granted in enabled:
                sites.setdefault(ext_id, {})[site_id] = frozenset(granted or ())
            errors: dict[str, str] = {}
            for row in rows:
                wanted = sites.get(row["id"])
                current = self.loaded.get(row["id"])
                if not wanted or row["status"] != "installed":
                    self._unload(row["id"])
                    continue
                if current is not None and current.sha256 == row["sha256"] and current.verified_with == fingerprint:
                    current.sites = wanted
                    continue
                async with self.kernel.db.connect() as conn:
                    row["bundle"] = (await conn.execute(select(extensions.c.bundle)
                                                        .where(extensions.c.id == row["id"]))).scalar()
                if row["bundle"] is None:  # uninstalled meanwhile
                    self._unload(row["id"])
                    continue
                refusal = self.verify(row, keys)
                if refusal is not None:
                    self._unload(row["id"])
                    await self._block(row["id"], refusal)
                    errors[row["id"]] = refusal
                    continue
                if current is not None and current.sha256 != row["sha256"]:
                    self._unload(row["id"])
                    current = None
                if current is None:
                    try:
                        current = await self._load(row)
                    except Exception as exc:  # noqa: BLE001 - a broken bundle must not stop the worker
                        log.exception("extension %s could not be loaded", row["name"])
                        errors[row["id"]] = f"{type(exc).__name__}: {exc}"
                        continue
                current.verified_with = fingerprint
                current.sites = wanted
            for ext_id in set(self.loaded) - {r["id"] for r in rows}:
                self._unload(ext_id)
            return errors

    def verify(self, row: dict[str, Any], keys: dict[str, dict[str, str]]) -> str | None:
        """Why ``row`` may not load under today's keys and policy, or None."""
        found = keyring.verdict(keys, row["publisher"], row["bundle"], row["signature"])
        try:
            keyring.admit(row["manifest"], found, self.kernel.settings.get("ext_signature_policy"))
        except ApiError as exc:
            return exc.details[0].message
        return None

    async def _block(self, ext_id: str, reason: str) -> None:
        async with self.kernel.db.begin() as conn:
            await conn.execute(update(extensions).where(extensions.c.id == ext_id)
                               .values(status="blocked", status_reason=reason))
        log.warning("extension %s blocked at load: %s", ext_id, reason)

    # ------------------------------------------------------------------ loading

    async def _load(self, row: dict[str, Any]) -> Loaded:
        requested = frozenset(row["manifest"].get("capabilities") or ())
        if self.kernel.settings.get("ext_isolation") == "process":
            host = Host(self.kernel, row)
            loaded = Loaded(row["id"], row["name"], row["sha256"], "", requested, host=host)
            try:
                declared = await host.start()
            except channel.Crashed as exc:
                await host.stop()
                raise LoadError(str(exc)) from None
            except BaseException:
                await host.stop()
                raise
            module: Any = host.module(declared)
        else:
            log.warning("EXTENSION SANDBOX: %s runs inside the server process (SVC_EXT_ISOLATION=inline): "
                        "it can read the environment, the data directory and every site", row["name"])
            unique, module = loader.import_entry(self.kernel.settings.data_path, row)
            loaded = Loaded(row["id"], row["name"], row["sha256"], unique, requested)
        try:
            self._register(loaded, module)
        except BaseException:
            self._undo(loaded)
            self._release(loaded)
            raise
        self.loaded[row["id"]] = loaded
        log.info("extension %s %s loaded (%s)", row["name"], row["version"],
                 f"runner pid {loaded.host.pid}" if loaded.host else "in this process")
        return loaded

    def _release(self, loaded: Loaded) -> None:
        """Drop its module, or stop its runner (in a task of its own: unloading is synchronous)."""
        if loaded.host is None:
            loader.release(loaded.module_name)
            return
        task = asyncio.get_running_loop().create_task(loaded.host.stop())
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    def _register(self, loaded: Loaded, module: Any) -> None:
        kernel = self.kernel
        impls = {name: getattr(module, name) for name in dir(module)
                 if callable(getattr(module, name, None)) and hasattr(getattr(module, name), "svc_impl")}
        for name in sorted(impls):
            needs = SUPPORTED_HOOKS.get(name)
            if needs is None:
                raise LoadError(f"hook {name!r} is not available to uploaded extensions")
            if needs != "events" and needs not in loaded.requested:
                raise LoadError(f"hook {name!r} needs the '{needs}' capability in the manifest")
        if "register_routes" in impls:
            routes = impls["register_routes"](kernel=kernel) or []
            self._mount(loaded, routes)
        if "register_event_handlers" in impls:
            impls["register_event_handlers"](bus=ScopedBus(self, loaded), kernel=kernel)
        if "register_jobs" in impls:
            impls["register_jobs"](jobs=ScopedJobs(self, loaded), kernel=kernel)
        if "register_flow_operations" in impls:
            operations = list(impls["register_flow_operations"](kernel=kernel) or [])
            for op in operations:
                key = getattr(op, "key", None)
                if not isinstance(key, str) or not (key == loaded.name or key.startswith(loaded.name + "-")):
                    raise LoadError(f"flow operation keys of {loaded.name} start with '{loaded.name}-', got {key!r}")
            proxy = FlowOperations(self, loaded, operations)
            plugin_name = f"ext:{loaded.name}"
            kernel.pm.register(proxy, name=plugin_name)
            loaded.undo.append(lambda: kernel.pm.unregister(name=plugin_name))

    def _mount(self, loaded: Loaded, routes: list[Any]) -> None:
        prefix = f"/{loaded.name}"
        for route in routes:
            if not isinstance(route, Route):
                raise LoadError(f"register_routes of {loaded.name} must return Route objects")
            if not (route.path == prefix or route.path.startswith(prefix + "/")):
                raise LoadError(f"routes of {loaded.name} live under {prefix}, got {route.path!r}")
            buckets = route.rate_limit.values() if isinstance(route.rate_limit, dict) else [route.rate_limit]
            unknown = [b for b in buckets if b and b not in self.kernel.rate_buckets]
            if unknown:
                raise LoadError(f"route {route.path} names the undeclared rate limit bucket {unknown[0]!r}")
            if route.tickets or callable(getattr(route.resource, "on_websocket", None)):
                raise LoadError(f"route {route.path}: WebSocket and ticket routes are not available to extensions")
            route.site = "required"  # enablement is per site: the site decides who answers
        table = self.kernel.extension_routes
        if table is None:
            # A process without an HTTP app (svc worker, jobs, sites, plugins) serves no routes:
            # they were checked like everywhere, so a bundle loads or fails alike in every
            # process, and its jobs, handlers and flow operations run here all the same.
            log.debug("extension %s: %d route(s) not mounted (no HTTP app in this process)", loaded.name, len(routes))
            return
        rt = self

        async def invoke(responder: Any, req: Any, resp: Any, params: dict[str, Any]) -> None:
            site_id = req.context.svc.site_id
            scope = loaded.scope(site_id)
            if scope is None:  # disabled between the sink's check and now
                raise ApiError(404, "NOT_FOUND", f"No route {req.method} {req.path}")
            try:
                with sandbox.running(scope):
                    await responder(req, resp, **params)
            except ApiError:
                raise
            except RunnerError as exc:  # its runner crashed, timed out or is restarting
                rt.failed(loaded, site_id, "route")
                raise exc.api from None
            except Exception:
                rt.failed(loaded, site_id, "route")
                raise

        def admits(ctx: Any) -> bool:
            scope = loaded.scope(ctx.site_id)
            return scope is not None and scope.allows("routes")

        try:
            table.mount(loaded.name, list(routes), admits=admits, invoke=invoke)
        except ValueError as exc:
            raise LoadError(str(exc)) from exc
        loaded.undo.append(lambda: table.unmount(loaded.name))

    def _undo(self, loaded: Loaded) -> None:
        for undo in reversed(loaded.undo):
            try:
                undo()
            except Exception:  # noqa: BLE001 - undo the rest whatever one does
                log.exception("undoing a registration of %s failed", loaded.name)
        loaded.undo.clear()

    def _unload(self, ext_id: str) -> None:
        loaded = self.loaded.pop(ext_id, None)
        if loaded is None:
            return
        self._undo(loaded)
        self._release(loaded)
        log.info("extension %s unloaded", loaded.name)

    def unload_all(self) -> None:
        for ext_id in list(self.loaded):
            self._unload(ext_id)

    # ------------------------------------------------------------------ failures

    def failed(self, loaded: Loaded, site_id: str | None, where: str) -> None:
        """Log and count a crash of ``loaded`` (from its own task: the caller may hold a
        transaction). A call refused while its runner restarts is not counted again."""
        pending = sys.exc_info()[1]
        if isinstance(pending, RunnerError) and not pending.counted:
            return
        log.exception("extension %s failed in %s (site %s)", loaded.name, where, site_id)
        if not site_id:
            return
        task = asyncio.get_running_loop().create_task(self._count(loaded.id, site_id))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def _count(self, ext_id: str, site_id: str) -> None:
        limit = self.kernel.settings.get("ext_max_failures")
        async with self.kernel.db.begin() as conn:
            await conn.execute(update(extension_sites)
                               .where(extension_sites.c.site_id == site_id, extension_sites.c.extension_id == ext_id)
                               .values(failures=extension_sites.c.failures + 1))
            failures = (await conn.execute(select(extension_sites.c.failures).where(
                extension_sites.c.site_id == site_id, extension_sites.c.extension_id == ext_id))).scalar()
            disable = failures is not None and failures >= limit
            if disable:
                await conn.execute(update(extension_sites)
                                   .where(extension_sites.c.site_id == site_id,
                                          extension_sites.c.extension_id == ext_id,
                                          extension_sites.c.enabled.is_(True))
                                   .values(enabled=False, updated_at=now_utc(),
                                           disabled_reason=f"disabled after {failures} failures"))
        if disable:
            log.warning("extension %s disabled in site %s after %s failures", ext_id, site_id, failures)
            await self.sync()
            await announce(self.kernel, ext_id)

    def start_polling(self, every: float) -> None:
        """Without Redis there is no fan-out: sync every ``every`` seconds instead (several
        processes on SQLite), so they follow within that delay."""
        async def poll() -> None:
            while True:
                await asyncio.sleep(every)
                try:
                    await self.sync()
                except Exception:  # noqa: BLE001 - keep polling whatever one sync met
                    log.exception("extensions sync failed")

        self.poller = asyncio.get_running_loop().create_task(poll())

    async def stop_polling(self) -> None:
        task, self.poller = self.poller, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def drain(self) -> None:
        """Wait for the failure counts in flight (tests, shutdown)."""
        while self.pending:
            await asyncio.gather(*list(self.pending), return_exceptions=True)


async def announce(kernel: Any, ext_id: str) -> None:
    """Tell the other workers to sync (this one already did)."""
    await kernel.bus.action(CHANGED, {"id": ext_id}, EventContext(site_id=None, kernel=kernel))
