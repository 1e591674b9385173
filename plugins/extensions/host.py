"""The server's side of an extension's runner process (docs/extensions.md, "Out of process").

One ``Host`` per loaded extension in each server process: it unpacks the bundle into a folder
of the runner's own (outside the data directory), starts ``python -I -m extensions_sdk.runner``
with a scrubbed environment and one end of a Unix socket pair, asks it to ``load``, and turns
what the runner declared into a stand-in module whose hooks the runtime registers exactly as it
registers an in-process extension's (so the same checks and site scoping apply): each route,
bus handler, job and flow operation forwards its call to the runner.

Calls from the runner (``items``, ``outbound``, ``log``) must name a call the server has in
flight to that runner, and the site it is for: anything else is refused (403
``EXTENSION_REFUSED``) and counted (``Host.refused``). An accepted call runs inside that call's
sandbox scope (the site's grants) as that call's principal, in its unit of work.

A runner that exits is started again with a growing backoff; meanwhile its calls answer 503
``EXTENSION_UNAVAILABLE``. A call that outlives ``SVC_EXT_CALL_SECONDS`` answers 504
``EXTENSION_TIMEOUT`` and the runner is killed (it may be looping). Both count as the
extension's failure in the site, as a crash does (500 ``EXTENSION_FAILED``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import extensions_sdk
from extensions_sdk import channel
from extensions_sdk.bundle import unpack
from kernel import hookimpl
from kernel.auth.principal import Principal
from kernel.base import outbound, sandbox
from kernel.base.errors import ApiError
from kernel.http.routing import Route
from plugins.files import api as files
from plugins.items import api as items
from plugins.settings import api as settings

log = logging.getLogger("svc.extensions")

ITEM_CALLS = {
    "read": items.read,
    "list_items": items.list_items,
    "create": items.create,
    "update": items.update,
    "delete": items.delete,
}
ITEM_OPTIONS = {"query", "draft", "locale", "cause"}
FILE_CALLS = {"get", "list", "read", "upload"}
# Calls that act on data of a site: they must name the site of the call in flight.
SITE_CALLS = {"items", "settings", "files"}
MAX_FILE_READ = 8 * 1024 * 1024  # what one channel frame carries, base64 and all
# Headers a route's runner never sees: the server authenticated the caller already.
HIDDEN_HEADERS = {"authorization", "cookie", "proxy-authorization"}
MAX_BACKOFF = 30.0
# A runner up this long since its last start has been healthy: its next crash waits the first
# backoff again instead of the doubled one.
HEALTHY_SECONDS = 60.0
LOAD_SECONDS = 60.0


class RunnerError(Exception):
    """A runner call that failed on the extension's side (crash, timeout, outage): counted as
    the extension's failure, answered with ``api``."""

    def __init__(self, api: ApiError, *, counted: bool = True) -> None:
        super().__init__(api.details[0].message)
        self.api = api
        self.counted = counted  # a call refused during a restart's backoff is not a new failure


@dataclass
class InFlight:
    site_id: str | None
    scope: sandbox.ExtensionScope | None
    ctx: Any  # the items API's ctx: the caller, or the event's, job's or run's principal
    uow: Any = None


def _readable() -> list[str]:
    """What a runner may read: Python, its packages, the SDK and the kernel (never the data dir)."""
    import kernel

    paths = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        str(Path(kernel.__file__).parent),
        str(Path(extensions_sdk.__file__).parent),
        str(Path(items.__file__).parent.parent),
        "/usr/lib",
        "/usr/local/lib",
        "/lib",
        "/lib64",
        "/usr/share/zoneinfo",
        "/etc/ssl",
        "/dev/null",
        "/dev/urandom",
    }
    return sorted(paths)


def scrubbed_env(config: dict[str, Any]) -> dict[str, str]:
    """The runner's whole environment: nothing of the server's (no database or Redis URL, no
    secret, no storage credentials)."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": config["workdir"],
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "SVC_EXT_RUNNER": json.dumps(config),
    }


async def spawn(config: dict[str, Any], **options: Any) -> tuple[asyncio.subprocess.Process, socket.socket]:
    """Start ``python -I -m extensions_sdk.runner`` in ``config["workdir"]``, with the scrubbed
    environment and one end of a new socket pair; the process and the server's end of the pair.
    ``options`` go to the subprocess (a test's ``preexec_fn``)."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-m",
            "extensions_sdk.runner",
            str(child.fileno()),
            pass_fds=(child.fileno(),),
            env=scrubbed_env(config),
            cwd=config["workdir"],
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,
            **options,
        )
    except BaseException:
        parent.close()
        raise
    finally:
        child.close()
    return proc, parent


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


class Host:
    """One extension's runner, as seen from this server process."""

    def __init__(self, kernel: Any, row: dict[str, Any]) -> None:
        self.kernel = kernel
        self.name: str = row["name"]
        self.row = {k: row[k] for k in ("name", "version", "sha256", "bundle", "manifest")}
        self.workdir = Path(tempfile.mkdtemp(prefix=f"svc-ext-{self.name}-"))
        self.proc: asyncio.subprocess.Process | None = None
        self.peer: channel.Peer | None = None
        self.up = asyncio.Event()
        self.calls: dict[str, InFlight] = {}
        self.refused = 0
        self.settings_declared = frozenset(row["manifest"].get("settings") or ())
        self.crashes = 0  # every crash since the host was made
        self.streak = 0  # crashes since the runner last ran HEALTHY_SECONDS: the backoff's exponent
        self.backoff = 0.0  # the wait before the last restart, in seconds
        self.starts = 0
        self.started_at = 0.0
        # The clock the backoff reads (monotonic seconds); a test moves one of its own.
        self.clock: Callable[[], float] = time.monotonic
        self.missing: list[str] = []
        self.stopping = False
        self._watcher: asyncio.Task[Any] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.returncode is None else None

    # ------------------------------------------------------------------ the process

    def _config(self) -> dict[str, Any]:
        s = self.kernel.settings
        return {
            "name": self.name,
            "entry": self.row["manifest"]["entry"],
            "workdir": str(self.workdir),
            "readable": _readable(),
            # Covered by an empty folder in the runner's mount namespace (Landlock refuses it too).
            "hidden": [str(s.data_path)],
            "limits": {
                "memory_bytes": s.get("ext_memory_mb") * 1024 * 1024,
                "cpu_seconds": s.get("ext_cpu_seconds"),
                "open_files": 64,
                "processes": 64,
                "file_bytes": 16 * 1024 * 1024,
            },
        }

    async def start(self) -> dict[str, Any]:
        """Start the runner and load the extension; what it declared."""
        data = self.kernel.settings.data_path
        if self.starts == 0 and any(data.is_relative_to(p) for p in _readable()):
            log.warning("EXTENSION SANDBOX: the data directory %s lies under a folder runners may read", data)
        bundle_dir = self.workdir / "bundle"
        if not bundle_dir.exists():
            unpack(self.row["bundle"], bundle_dir)
        config = self._config()
        config["workdir"] = str(bundle_dir)
        if os.geteuid() == 0:
            for path in [self.workdir, *self.workdir.rglob("*")]:
                os.chown(path, 65534, 65534)
        self.proc, parent = await spawn(config)
        self.starts += 1
        self.peer = await channel.open_peer(parent, self._handle)
        try:
            # Python's start and imports come first: a load gets at least LOAD_SECONDS.
            limit = max(self.kernel.settings.get("ext_call_seconds"), LOAD_SECONDS)
            declared = await asyncio.wait_for(self.peer.call("load"), limit)
        except BaseException:
            self._kill()
            raise
        self.started_at = self.clock()
        self.missing = list(declared.get("missing") or [])
        if self.starts == 1:
            for what in self.missing:
                log.warning("EXTENSION SANDBOX: %s runs without %s", self.name, what)
        self.up.set()
        self._watcher = asyncio.get_running_loop().create_task(self._watch(self.proc))
        return declared

    async def _watch(self, proc: asyncio.subprocess.Process) -> None:
        code = await proc.wait()
        self.up.clear()
        if self.peer is not None:
            self.peer.close()
        if self.stopping:
            return
        self.crashes += 1
        delay = self._next_backoff()
        log.error(
            "extension %s: its runner (pid %s) exited with %s; starting it again in %.1f s",
            self.name,
            proc.pid,
            code,
            delay,
        )
        while not self.stopping:
            await asyncio.sleep(delay)
            if self.stopping:
                return
            try:
                await self.start()
                return
            except Exception:  # noqa: BLE001 - keep trying with a longer wait
                log.exception("extension %s: its runner did not start again", self.name)
                delay = min(delay * 2, MAX_BACKOFF)

    def _next_backoff(self) -> float:
        """The wait before starting a crashed runner: ``SVC_EXT_RESTART_MS`` doubled with each
        crash in a row, at most ``MAX_BACKOFF``; a runner that had run ``HEALTHY_SECONDS``
        since its last start begins the row again."""
        if self.clock() - self.started_at >= HEALTHY_SECONDS:
            self.streak = 0
        self.streak += 1
        base = self.kernel.settings.get("ext_restart_ms") / 1000
        self.backoff = max(min(base * 2 ** min(self.streak - 1, 10), MAX_BACKOFF), base)
        return self.backoff

    def _kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        if self.peer is not None:
            self.peer.close()
        self.up.clear()

    async def stop(self) -> None:
        self.stopping = True
        self._kill()
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watcher
        if self.proc is not None:
            with contextlib.suppress(Exception):
                await self.proc.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def grant_context(self, site_id: str | None) -> Any:
        """The items API's ctx of a bus handler or job: the grant's own principal, an admin of
        the site bounded by the collections granted (the items API refuses the others whoever
        the principal is)."""
        principal = Principal(kind="extension", site_id=site_id, is_instance_admin=True, admin_access=True)
        return items.context(self.kernel, site_id or "", principal, request_id=f"ext:{self.name}")

    # ------------------------------------------------------------------ calls into the runner

    async def invoke(self, op: str, site_id: str | None, ctx: Any, *, uow: Any = None, **args: Any) -> Any:
        """Run ``op`` in the runner for ``site_id`` (the caller's sandbox scope is the current one)."""
        if not self.up.is_set() or self.peer is None:
            raise RunnerError(
                ApiError(
                    503, "EXTENSION_UNAVAILABLE", f"Extension '{self.name}' is restarting; try again shortly"
                ),
                counted=False,
            )
        call = uuid.uuid4().hex
        self.calls[call] = InFlight(site_id, sandbox.current(), ctx, uow)
        principal = getattr(ctx, "principal", None)
        summary = getattr(principal, "summary", None)
        try:
            # ``asyncio.timeout`` rather than ``wait_for``: no task of its own per call, so one
            # hop of the event loop less on every route, handler, job and operation.
            async with asyncio.timeout(self.kernel.settings.get("ext_call_seconds")):
                return await self.peer.call(
                    op, call=call, site=site_id, principal=summary() if callable(summary) else None, **args
                )
        except TimeoutError:
            log.error(
                "extension %s: a %s call in site %s timed out; its runner is killed", self.name, op, site_id
            )
            self._kill()
            raise RunnerError(
                ApiError(504, "EXTENSION_TIMEOUT", f"Extension '{self.name}' did not answer in time")
            ) from None
        except channel.Closed:
            self.up.clear()
            raise RunnerError(
                ApiError(503, "EXTENSION_UNAVAILABLE", f"Extension '{self.name}' stopped while answering")
            ) from None
        except channel.Crashed as exc:
            log.error("extension %s failed in %s (site %s): %s", self.name, op, site_id, exc)
            raise RunnerError(ApiError(500, "EXTENSION_FAILED", f"Extension '{self.name}' failed")) from None
        finally:
            self.calls.pop(call, None)

    # ------------------------------------------------------------------ calls from the runner

    def _refuse(self, why: str) -> ApiError:
        self.refused += 1
        log.warning("extension %s: refused a call from its runner: %s", self.name, why)
        return ApiError(403, "EXTENSION_REFUSED", f"Extension '{self.name}': {why}")

    def _grant(self, call: InFlight, capability: str, what: str) -> sandbox.ExtensionScope:
        """The call's scope when the site granted ``capability``; else 403 ``PERMISSION_DENIED``,
        counted with the refused calls."""
        if call.scope is None:
            raise self._refuse("no site scope")
        if not call.scope.allows(capability):
            with sandbox.running(call.scope):
                sandbox.require(capability, what)
        return call.scope

    async def _handle(self, message: dict[str, Any]) -> Any:
        call = self.calls.get(str(message.get("call")))
        if call is None:
            raise self._refuse("a call that is not in flight")
        op = message.get("op")
        if op in SITE_CALLS and message.get("site") != call.site_id:
            raise self._refuse(f"a call for site {message.get('site')!r} during a call for {call.site_id!r}")
        # A call beyond the site's grants (a collection, network, settings, files) is refused
        # where the grant is checked; the sandbox scope notes it, and it is counted here.
        seen = len(call.scope.refusals) if call.scope is not None else 0
        try:
            return await self._dispatch(call, op, message)
        finally:
            beyond = call.scope.refusals[seen:] if call.scope is not None else []
            if beyond:
                self.refused += len(beyond)
                log.warning("extension %s: refused %s without the grant", self.name, ", ".join(beyond))

    async def _dispatch(self, call: InFlight, op: Any, message: dict[str, Any]) -> Any:
        if op == "items":
            return await self._items(call, message)
        if op == "settings":
            return await self._settings(call, message)
        if op == "files":
            return await self._files(call, message)
        if op == "outbound":
            return await self._outbound(call, message)
        if op == "log":
            level = {"info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}.get(
                str(message.get("level")), logging.INFO
            )
            text = str(message.get("message"))[:2000].replace("\n", " ")
            logging.getLogger(f"svc.ext.{self.name}").log(level, "[site %s] %s", call.site_id, text)
            return None
        raise self._refuse(f"unknown call {op!r}")

    def _no_write_in_filter(self, call: InFlight, what: str) -> None:
        """A filter runs inside the writer's transaction, which the items API joins; a settings or
        files write would open a second one and wait on the first (SQLite's one writer). Refused,
        and noted like a refusal of the sandbox: the write goes on, the extension's failure is
        counted."""
        if call.uow is not None and call.scope is not None:
            call.scope.refusals.append(f"{what} in a filter")
            raise ApiError(403, "EXTENSION_REFUSED", f"Extension '{self.name}': {what} is not offered in a filter")

    async def _settings(self, call: InFlight, message: dict[str, Any]) -> Any:
        """``get`` or ``set`` one setting the manifest declares, stored as the site setting
        ``ext.<name>.<key>``: never another extension's, nor a built-in setting."""
        key, fn = message.get("key"), message.get("fn")
        if not isinstance(key, str) or key not in self.settings_declared:
            raise self._refuse(f"setting {key!r} is not one its manifest declares")
        scope = self._grant(call, "settings", f"setting {key}")
        full = f"ext.{self.name}.{key}"
        if fn == "get":
            return await settings.get_setting(self.kernel, str(call.site_id), full, message.get("default"))
        if fn == "set":
            self._no_write_in_filter(call, "settings.set")
            with sandbox.running(scope):
                return await settings.put_setting(call.ctx, full, message.get("value"))
        raise self._refuse(f"settings.{fn} is not offered")

    async def _files(self, call: InFlight, message: dict[str, Any]) -> Any:
        """The site's files as the call's principal: ``get``, ``list``, ``read`` (the bytes) and
        ``upload`` (through the upload guard; a name is only a label, never a path)."""
        fn = message.get("fn")
        if fn not in FILE_CALLS:
            raise self._refuse(f"files.{fn} is not offered")
        scope = self._grant(call, "files", f"files.{fn}")
        with sandbox.running(scope):
            if fn == "get":
                return await files.get_file(call.ctx, str(message.get("file")))
            if fn == "list":
                records, meta = await files.list_files(
                    call.ctx, limit=message.get("limit", 100), offset=message.get("offset", 0)
                )
                return {"items": records, "meta": meta}
            if fn == "read":
                record, content = await files.read_file(call.ctx, str(message.get("file")), MAX_FILE_READ)
                return {"file": record, "body": base64.b64encode(content).decode()}
            self._no_write_in_filter(call, "files.upload")
            try:
                content = base64.b64decode(str(message.get("body") or ""), validate=True)
            except ValueError:
                raise ApiError.validation("The file's body is not base64", path=["body"]) from None
            record, created = await files.upload_file(
                call.ctx, message.get("filename"), content, message.get("contentType")
            )
            return {"file": record, "created": created}

    async def _items(self, call: InFlight, message: dict[str, Any]) -> Any:
        fn = ITEM_CALLS.get(str(message.get("fn")))
        if fn is None:
            raise self._refuse(f"items.{message.get('fn')} is not offered")
        args = list(message.get("args") or [])
        kwargs = dict(message.get("kwargs") or {})
        unknown = set(kwargs) - ITEM_OPTIONS
        if unknown:
            raise ApiError.validation(f"Unknown option '{sorted(unknown)[0]}'", path=[sorted(unknown)[0]])
        if fn is items.list_items and len(args) > 1:
            kwargs["query"] = args.pop(1)
        if isinstance(kwargs.get("query"), dict):
            kwargs["query"] = items.query(**(kwargs["query"].get("__query__") or {}))
        elif kwargs.get("query") is None:
            kwargs.pop("query", None)
        if call.uow is not None:
            kwargs["uow"] = call.uow
        if call.scope is None:
            raise self._refuse("no site scope")
        with sandbox.running(call.scope):
            return _plain(await fn(call.ctx, *args, **kwargs))

    async def _outbound(self, call: InFlight, message: dict[str, Any]) -> Any:
        import httpx

        if call.scope is None:
            raise self._refuse("no site scope")
        with sandbox.running(call.scope):
            client = outbound.client(self.kernel, "runner", timeout=httpx.Timeout(10.0))
            try:
                answer = await client.request(
                    str(message.get("method") or "GET"),
                    str(message.get("url")),
                    headers=dict(message.get("headers") or {}),
                    content=base64.b64decode(message.get("body") or ""),
                )
            except outbound.OutboundRefused as exc:
                raise ApiError.forbidden(
                    f"Outbound request refused: {exc}", reason="outbound_refused"
                ) from None
            except httpx.HTTPError as exc:
                raise ApiError(
                    502, "EXTENSION_OUTBOUND_FAILED", f"Outbound request failed: {type(exc).__name__}"
                ) from None
        return {
            "status": answer.status_code,
            "headers": dict(answer.headers),
            "body": base64.b64encode(answer.content[: 8 * 1024 * 1024]).decode(),
        }

    # ------------------------------------------------------------------ the stand-in module

    def module(self, declared: dict[str, Any]) -> Any:
        """An object whose hooks register what the runner declared, forwarding every call."""
        host = self
        stand_in = type(f"Runner_{self.name}", (), {})()
        hooks = set(declared.get("hooks") or ())
        for name in hooks - {
            "register_routes",
            "register_event_handlers",
            "register_jobs",
            "register_flow_operations",
        }:
            setattr(stand_in, name, hookimpl(specname=name)(lambda *a, **k: None))

        if "register_routes" in hooks:

            @hookimpl
            def register_routes(kernel: Any) -> list[Route]:
                return [host._route(r) for r in declared.get("routes") or []]

            stand_in.register_routes = register_routes
        if "register_event_handlers" in hooks:

            @hookimpl
            def register_event_handlers(bus: Any, kernel: Any) -> None:
                for h in declared.get("handlers") or []:
                    add = bus.on_filter if h["kind"] == "filter" else bus.on_action
                    add(h["event"], host._handler(h["handle"]), h.get("priority", 100))

            stand_in.register_event_handlers = register_event_handlers
        if "register_jobs" in hooks:

            @hookimpl
            def register_jobs(jobs: Any, kernel: Any) -> None:
                for j in declared.get("jobs") or []:
                    add = jobs.task if j["kind"] == "task" else jobs.periodic
                    add(j["name"], host._job(j["handle"]), **(j.get("options") or {}))

            stand_in.register_jobs = register_jobs
        if "register_flow_operations" in hooks:

            @hookimpl
            def register_flow_operations(kernel: Any) -> list[Any]:
                return [host._operation(o) for o in declared.get("operations") or []]

            stand_in.register_flow_operations = register_flow_operations
        return stand_in

    def _route(self, declared: dict[str, Any]) -> Route:
        host, handle = self, declared["handle"]

        async def forward(req: Any, resp: Any, **params: Any) -> None:
            ctx = req.context.svc
            body = await req.stream.read() if req.content_length else b""
            headers = {k: v for k, v in req.headers.items() if k.lower() not in HIDDEN_HEADERS}
            answer = await host.invoke(
                "route",
                ctx.site_id,
                ctx,
                handle=handle,
                method=req.method,
                path=req.path,
                query=req.query_string,
                headers=headers,
                params=params,
                requestId=ctx.request_id,
                body=base64.b64encode(body).decode(),
            )
            resp.status = answer["status"]
            for name, value in (answer.get("headers") or {}).items():
                resp.set_header(name, value)
            if answer.get("body") is not None:
                resp.data = base64.b64decode(answer["body"])
                resp.content_type = answer.get("contentType")
            elif answer.get("media") is not None:
                resp.media = answer["media"]
            elif answer["status"] == 204:
                resp.content_type = None

        resource = type("RunnerRoute", (), {})()
        suffix = declared.get("suffix")
        for method in declared.get("methods") or []:
            setattr(resource, f"on_{method.lower()}{'_' + suffix if suffix else ''}", forward)
        if declared.get("websocket"):
            resource.on_websocket = forward
        path = declared.get("path")
        return Route(
            path if isinstance(path, str) else "",
            resource,
            auth=declared.get("auth") or "bearer",
            rate_limit=declared.get("rate_limit"),
            suffix=suffix,
            tickets=bool(declared.get("tickets")),
            permission=declared.get("permission"),
            authenticate=bool(declared.get("authenticate", True)),
        )

    def _handler(self, handle: int) -> Callable[..., Any]:
        async def forward(event: str, payload: Any, ctx: Any) -> Any:
            result = await self.invoke(
                "event",
                ctx.site_id,
                self.grant_context(ctx.site_id),
                uow=getattr(ctx, "uow", None),
                handle=handle,
                event=event,
                payload=payload,
            )
            if isinstance(payload, dict) and isinstance(result, dict):
                _merge(payload, result)
                return payload
            return result

        return forward

    def _job(self, handle: int) -> Callable[..., Any]:
        async def forward(kernel: Any, site_id: Any = None, **args: Any) -> None:
            await self.invoke("job", site_id, self.grant_context(site_id), handle=handle, args=args)

        return forward

    def _operation(self, declared: dict[str, Any]) -> Any:
        key = declared["key"]

        async def run(ctx: Any, options: dict[str, Any]) -> Any:
            if declared.get("validate"):
                wrong = await self.invoke(
                    "validate", ctx.site_id, ctx.items_context(), key=key, options=options
                )
                if wrong:
                    raise ApiError.validation(
                        str(wrong.get("message")), path=["options", str(wrong.get("field"))]
                    )
            return await self.invoke(
                "flow",
                ctx.site_id,
                ctx.items_context(),
                key=key,
                options=options,
                flow_id=ctx.flow_id,
                run_id=ctx.run_id,
                node_id=ctx.node_id,
                data=ctx.data,
                cause=ctx.cause,
            )

        return extensions_sdk.Operation(
            key,
            run,
            options=declared.get("options") or {},
            validate=None,
            raw=tuple(declared.get("raw") or ()),
            retry_safe=bool(declared.get("retry_safe")),
            description=declared.get("description") or "",
        )


def _merge(target: dict[str, Any], changed: dict[str, Any], plain: dict[str, Any] | None = None) -> None:
    """Apply a filter's answer to the payload in place (the writer may hold its inner dicts).
    ``plain`` is the payload as JSON gave it to the runner (made once, not once per key)."""
    plain = _json(target) if plain is None else plain
    for key, value in changed.items():
        inner = target.get(key)
        if isinstance(inner, dict) and isinstance(value, dict):
            _merge(inner, value, plain.get(key) if isinstance(plain.get(key), dict) else _json(inner))
        elif key not in target or plain.get(key) != value:
            target[key] = value
    for key in [k for k in target if k not in changed]:
        del target[key]


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
