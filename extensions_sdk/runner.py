"""An extension's runner: the separate process its Python code runs in (docs/extensions.md,
"Out of process"). The server starts it as ``python -I -m extensions_sdk.runner FD`` with a
scrubbed environment, in a folder of its own holding the unpacked bundle, and ``FD`` one end
of a Unix socket pair: the only way back to the server.

At start it confines itself (``extensions_sdk.confine``), then answers the server's calls:

- ``load``: import the entry package and call its hooks with recording stand-ins; answers what
  it declared (routes, bus handlers, jobs, flow operations) and the protections it lacks;
- ``route``, ``event``, ``job``, ``flow``, ``validate``: run one of them.

While a call runs, the extension reaches the kernel through the same channel: the SDK's
``items`` and ``outbound`` send ``items`` and ``outbound`` requests naming the call they belong
to, and the server checks each one against the grants of that call's site.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import importlib.util
import inspect
import json
import os
import socket
import sys
from dataclasses import asdict, is_dataclass
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs

from extensions_sdk import channel, confine
from kernel.base.errors import ApiError

CALL: contextvars.ContextVar[Any] = contextvars.ContextVar("svc_ext_call", default=None)
_PEER: channel.Peer | None = None
HOOKS = ("register_routes", "register_event_handlers", "register_jobs", "register_flow_operations")
METHODS = ("get", "post", "put", "patch", "delete", "head", "options")


async def _rpc(op: str, **args: Any) -> Any:
    if _PEER is None:
        raise RuntimeError("not in a runner")
    return await _PEER.call(op, call=CALL.get(), **args)


# ---------------------------------------------------------------------- what extension code gets


class RemoteContext:
    """The ``ctx`` the SDK's ``request_context(req)``, ``items.context(...)`` and bus handlers
    give: the site and the caller, without the kernel (it lives in the server)."""

    def __init__(self, site_id: str | None, principal: Any = None, request_id: str = "internal") -> None:
        self.site_id, self.principal, self.request_id = site_id, principal, request_id
        self.kernel = None
        self.uow = None
        self.remote = False


def _principal(summary: Any) -> Any:
    return SimpleNamespace(**summary) if isinstance(summary, dict) else None


class RemoteRequest:
    """What a route's responder gets as ``req``: the parts of Falcon's request an extension
    reads (no ``Authorization`` or ``Cookie``: the server authenticated the caller)."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.method: str = message["method"]
        self.path: str = message["path"]
        self.query_string: str = message.get("query") or ""
        self.headers: dict[str, str] = {k.upper(): v for k, v in (message.get("headers") or {}).items()}
        self.body = base64.b64decode(message.get("body") or "")
        self.params = {k: v[-1] for k, v in parse_qs(self.query_string, keep_blank_values=True).items()}
        self.content_type = self.headers.get("CONTENT-TYPE")
        ctx = RemoteContext(
            message.get("site"), _principal(message.get("principal")), message.get("requestId", "")
        )
        self.context = SimpleNamespace(svc=ctx)

    def get_param(self, name: str, default: Any = None, **_: Any) -> Any:
        return self.params.get(name, default)

    def get_header(self, name: str, default: Any = None, **_: Any) -> Any:
        return self.headers.get(name.upper(), default)

    async def get_media(self, default_when_empty: Any = None) -> Any:
        if not self.body.strip():
            return default_when_empty
        try:
            return json.loads(self.body)
        except ValueError:
            raise ApiError.validation("The body is not valid JSON", path=["body"]) from None


class RemoteResponse:
    """What a route's responder gets as ``resp``: status, ``media`` or ``data``/``text``, headers."""

    def __init__(self) -> None:
        self.status: Any = 200
        self.media: Any = None
        self.data: bytes | None = None
        self.text: str | None = None
        self.content_type: str | None = "application/json"
        self.headers: dict[str, str] = {}

    def set_header(self, name: str, value: str) -> None:
        self.headers[name] = str(value)

    def answer(self) -> dict[str, Any]:
        status = int(str(self.status).split()[0])
        body = self.data if self.data is not None else (self.text.encode() if self.text is not None else None)
        return {
            "status": status,
            "media": self.media,
            "contentType": self.content_type,
            "headers": self.headers,
            "body": base64.b64encode(body).decode() if body is not None else None,
        }


class Page(SimpleNamespace):
    """``items.list_items``' answer: ``items``, ``total``, ``limit``, ``offset``."""


class Items:
    """The items API as an extension sees it in its runner: each call goes to the server, which
    runs it as the call's principal, in the call's site, under that site's grants."""

    @staticmethod
    def context(
        kernel: Any, site_id: str, principal: Any = None, request_id: str = "internal"
    ) -> RemoteContext:
        return RemoteContext(site_id, principal, request_id)

    @staticmethod
    def query(**params: Any) -> dict[str, Any]:
        return {"__query__": params}

    async def _call(self, fn: str, ctx: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.pop("uow", None)  # the server joins the call's own transaction, if it has one
        return await _rpc("items", fn=fn, site=getattr(ctx, "site_id", None), args=list(args), kwargs=kwargs)

    async def read(self, ctx: Any, collection: str, item_id: str, **kw: Any) -> Any:
        return await self._call("read", ctx, collection, item_id, **kw)

    async def list_items(self, ctx: Any, collection: str, query: Any = None, **kw: Any) -> Page:
        return Page(**await self._call("list_items", ctx, collection, query, **kw))

    async def create(self, ctx: Any, collection: str, data: Any, **kw: Any) -> Any:
        return await self._call("create", ctx, collection, data, **kw)

    async def update(self, ctx: Any, collection: str, item_id: str, data: Any, **kw: Any) -> Any:
        return await self._call("update", ctx, collection, item_id, data, **kw)

    async def delete(self, ctx: Any, collection: str, item_id: str, **kw: Any) -> None:
        await self._call("delete", ctx, collection, item_id, **kw)


class Fetched:
    """An answer of ``outbound``: ``status_code``, ``headers``, ``content``, ``text``, ``json()``."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.status_code: int = answer["status"]
        self.headers: dict[str, str] = answer.get("headers") or {}
        self.content = base64.b64decode(answer.get("body") or "")
        self.text = self.content.decode(errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


class Outbound:
    """Outbound HTTP through the server's ``kernel.base.outbound`` (needs ``network``; public
    addresses only, as the SSRF rules say)."""

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        content: bytes | str | None = None,
        json_body: Any = None,
    ) -> Fetched:
        if json_body is not None:
            content = json.dumps(json_body)
            headers = {"Content-Type": "application/json", **(headers or {})}
        raw = content.encode() if isinstance(content, str) else (content or b"")
        return Fetched(
            await _rpc(
                "outbound",
                method=method.upper(),
                url=url,
                headers=headers or {},
                body=base64.b64encode(raw).decode(),
            )
        )

    async def get(self, url: str, **kw: Any) -> Fetched:
        return await self.request("GET", url, **kw)

    async def post(self, url: str, **kw: Any) -> Fetched:
        return await self.request("POST", url, **kw)


class Settings:
    """The site settings the manifest declares (``"settings": ["greeting"]``), as an extension
    sees them: ``await settings.get(ctx, "greeting", default)``, ``await settings.set(ctx,
    "greeting", value)`` (``None`` unsets). Needs ``settings``; stored as ``ext.<name>.<key>``."""

    async def get(self, ctx: Any, key: str, default: Any = None) -> Any:
        return await _rpc("settings", fn="get", site=getattr(ctx, "site_id", None), key=key, default=default)

    async def set(self, ctx: Any, key: str, value: Any) -> Any:
        return await _rpc("settings", fn="set", site=getattr(ctx, "site_id", None), key=key, value=value)


class Files:
    """The site's files as the call's principal (needs ``files``): ``get(ctx, id)``,
    ``list(ctx, limit=, offset=)`` (``Page`` of records), ``read(ctx, id)`` (the bytes),
    ``upload(ctx, filename, content, content_type)`` (the record, through the upload guard)."""

    async def _call(self, fn: str, ctx: Any, **args: Any) -> Any:
        return await _rpc("files", fn=fn, site=getattr(ctx, "site_id", None), **args)

    async def get(self, ctx: Any, file_id: str) -> Any:
        return await self._call("get", ctx, file=file_id)

    async def list(self, ctx: Any, limit: int = 100, offset: int = 0) -> Page:
        answer = await self._call("list", ctx, limit=limit, offset=offset)
        return Page(items=answer["items"], **answer["meta"])

    async def read(self, ctx: Any, file_id: str) -> bytes:
        return base64.b64decode((await self._call("read", ctx, file=file_id))["body"])

    async def upload(self, ctx: Any, filename: str, content: bytes, content_type: str) -> Any:
        body = base64.b64encode(content).decode()
        answer = await self._call("upload", ctx, filename=filename, body=body, contentType=content_type)
        return answer["file"]


class Log:
    """``log.info(message)``, ``log.warning``, ``log.error``: a line in the server's log, under
    ``svc.ext.<name>`` with the site of the call (outside a call, the runner's own stderr)."""

    async def _send(self, level: str, message: str) -> None:
        if CALL.get() is None:
            print(f"{level}: {message}", file=sys.stderr, flush=True)
            return
        await _rpc("log", level=level, message=str(message))

    async def info(self, message: str) -> None:
        await self._send("info", message)

    async def warning(self, message: str) -> None:
        await self._send("warning", message)

    async def error(self, message: str) -> None:
        await self._send("error", message)


class _Kernel:
    """The ``kernel`` an extension's hooks get in its runner: its name, nothing of the server's."""

    def __init__(self, name: str) -> None:
        self.extension = name
        self.settings = SimpleNamespace(get=lambda key, default=None: default)


class _Bus:
    def __init__(self, handlers: list[Any], declared: list[dict[str, Any]]) -> None:
        self.handlers, self.declared = handlers, declared

    def _add(self, kind: str, event: str, handler: Any, priority: int) -> Any:
        self.declared.append(
            {"handle": len(self.handlers), "kind": kind, "event": event, "priority": priority}
        )
        self.handlers.append(handler)
        return lambda: None

    def on_filter(self, event: str, handler: Any, priority: int = 100) -> Any:
        return self._add("filter", event, handler, priority)

    def on_action(self, event: str, handler: Any, priority: int = 100) -> Any:
        return self._add("action", event, handler, priority)


class _Jobs:
    def __init__(self, jobs: list[Any], declared: list[dict[str, Any]]) -> None:
        self.jobs, self.declared = jobs, declared

    def _add(self, kind: str, name: str, fn: Any, options: dict[str, Any]) -> Any:
        self.declared.append({"handle": len(self.jobs), "kind": kind, "name": name, "options": options})
        self.jobs.append(fn)
        return lambda: None

    def task(self, name: str, fn: Any, **options: Any) -> Any:
        return self._add("task", name, fn, options)

    def periodic(self, name: str, fn: Any, **options: Any) -> Any:
        return self._add("periodic", name, fn, options)


class FlowContext(RemoteContext):
    """A flow operation's ``ctx`` in the runner: the site, the run, ``data``, ``cause``."""

    def __init__(self, message: dict[str, Any]) -> None:
        super().__init__(message.get("site"), _principal(message.get("principal")))
        for key in ("flow_id", "run_id", "node_id", "cause"):
            setattr(self, key, message.get(key, ""))
        self.data = message.get("data") or {}

    def items_context(self) -> RemoteContext:
        return RemoteContext(self.site_id, self.principal)


# ---------------------------------------------------------------------- the runner


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return value


class Runner:
    def __init__(self, config: dict[str, Any], missing: list[str]) -> None:
        self.config, self.missing = config, missing
        self.routes: list[Any] = []
        self.handlers: list[Any] = []
        self.jobs: list[Any] = []
        self.operations: dict[str, Any] = {}

    def _import(self) -> Any:
        entry = self.config["entry"]
        package, _, rest = entry.partition(".")
        unique = f"svc_ext_{self.config['name'].replace('-', '_')}"
        init = os.path.join(package, "__init__.py")
        if os.path.isfile(init):
            spec = importlib.util.spec_from_file_location(
                unique, os.path.abspath(init), submodule_search_locations=[os.path.abspath(package)]
            )
        else:
            spec = importlib.util.spec_from_file_location(unique, os.path.abspath(f"{package}.py"))
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import the entry package {package!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[unique] = module
        spec.loader.exec_module(module)
        return importlib.import_module(f"{unique}.{rest}") if rest else module

    def load(self) -> dict[str, Any]:
        module = self._import()
        kernel = _Kernel(self.config["name"])
        hooks = sorted(
            n
            for n in dir(module)
            if callable(getattr(module, n, None)) and hasattr(getattr(module, n), "svc_impl")
        )
        out: dict[str, Any] = {
            "hooks": hooks,
            "routes": [],
            "handlers": [],
            "jobs": [],
            "operations": [],
            "missing": self.missing,
            "pid": os.getpid(),
        }
        if "register_routes" in hooks:
            for route in module.register_routes(kernel=kernel) or []:
                resource = getattr(route, "resource", None)
                suffix = getattr(route, "suffix", None) or ""
                methods = [
                    m.upper()
                    for m in METHODS
                    if callable(getattr(resource, f"on_{m}{'_' + suffix if suffix else ''}", None))
                ]
                out["routes"].append(
                    {
                        "handle": len(self.routes),
                        "path": getattr(route, "path", None),
                        "methods": methods,
                        "auth": getattr(route, "auth", "bearer"),
                        "rate_limit": getattr(route, "rate_limit", None),
                        "tickets": bool(getattr(route, "tickets", False)),
                        "permission": getattr(route, "permission", None),
                        "authenticate": bool(getattr(route, "authenticate", True)),
                        "websocket": callable(getattr(resource, "on_websocket", None)),
                        "suffix": suffix or None,
                    }
                )
                self.routes.append(route)
        if "register_event_handlers" in hooks:
            module.register_event_handlers(bus=_Bus(self.handlers, out["handlers"]), kernel=kernel)
        if "register_jobs" in hooks:
            module.register_jobs(jobs=_Jobs(self.jobs, out["jobs"]), kernel=kernel)
        if "register_flow_operations" in hooks:
            for op in module.register_flow_operations(kernel=kernel) or []:
                key = getattr(op, "key", None)
                out["operations"].append(
                    {
                        "key": key,
                        "options": {
                            name: option.describe() if hasattr(option, "describe") else option
                            for name, option in dict(getattr(op, "options", {}) or {}).items()
                        },
                        "validate": getattr(op, "validate", None) is not None,
                        "raw": list(getattr(op, "raw", ()) or ()),
                        "retry_safe": bool(getattr(op, "retry_safe", False)),
                        "description": getattr(op, "description", ""),
                    }
                )
                if isinstance(key, str):
                    self.operations[key] = op
        return out

    async def handle(self, message: dict[str, Any]) -> Any:
        CALL.set(message.get("call"))
        op = message["op"]
        if op == "load":
            return self.load()
        if op == "route":
            route = self.routes[message["handle"]]
            suffix = f"_{route.suffix}" if getattr(route, "suffix", None) else ""
            responder = getattr(route.resource, f"on_{message['method'].lower()}{suffix}")
            req, resp = RemoteRequest(message), RemoteResponse()
            await responder(req, resp, **(message.get("params") or {}))
            return resp.answer()
        if op == "event":
            ctx = RemoteContext(message.get("site"), _principal(message.get("principal")))
            result = self.handlers[message["handle"]](message["event"], message.get("payload"), ctx)
            return await result if inspect.isawaitable(result) else result
        if op == "job":
            await self.jobs[message["handle"]](
                _Kernel(self.config["name"]), site_id=message.get("site"), **(message.get("args") or {})
            )
            return None
        if op == "flow":
            found = self.operations[message["key"]]
            return _plain(await found.run(FlowContext(message), message.get("options") or {}))
        if op == "validate":
            check = self.operations[message["key"]].validate
            try:
                check(message.get("options") or {})
            except Exception as exc:  # noqa: BLE001 - the server raises the operation's OptionError
                return {"field": getattr(exc, "field", None), "message": str(exc)}
            return None
        raise ApiError(400, "VALIDATION_FAILED", f"unknown runner call {op!r}")


async def _serve(fd: int, runner: Runner) -> None:
    global _PEER
    sock = socket.socket(fileno=fd)
    _PEER = await channel.open_peer(sock, runner.handle)
    await _PEER.closed.wait()


def main() -> None:
    config = json.loads(os.environ.pop("SVC_EXT_RUNNER", "{}"))
    missing = confine.apply(config)
    os.chdir(config["workdir"])
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != os.path.abspath(config["workdir"])]
    import extensions_sdk

    extensions_sdk.enter_runner(Items(), Outbound(), Log(), Settings(), Files())
    asyncio.run(_serve(int(sys.argv[1]), Runner(config, missing)))


if __name__ == "__main__":
    # Run the importable module, not this ``__main__`` copy: the SDK's names refer to that one.
    from extensions_sdk.runner import main as run

    run()
