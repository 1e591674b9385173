"""``POST /mcp``: the MCP server (Streamable HTTP, JSON-RPC 2.0) on the official ``mcp`` SDK.

The SDK's low-level ``Server`` answers ``tools/list`` with the skills the caller may use and
``tools/call`` by passing the call through ``gate.admit`` as the caller, exactly like the
copilot: a dangerous skill answers a pending approval's id instead of acting. The SDK's
``StreamableHTTPSessionManager`` runs stateless with JSON answers, inside our route, so the
kernel's site resolution, authentication and rate limit apply first.

Sessions are ours, not the SDK's (its sessions live in one process; ours are rows, so any
worker serves them): a successful ``initialize`` opens a session (``svc_ai_mcp_sessions``)
bound to the site and the principal that opened it, answered in ``Mcp-Session-Id``; every
later request must carry it, and with another principal's token (or in another site) the
session does not exist (404). ``DELETE /mcp`` ends it. Only the handshake era of the protocol
(``initialize``, versions up to 2025-11-25) is spoken: a request of the session-less 2026 era
is refused with a JSON-RPC error, and clients fall back to ``initialize``.

The Origin rule (docs/mcp.md; the same as the WebSocket handshake's, docs/architecture.md): a request with
an ``Origin`` outside the site's allowed origins is
refused (403); without ``Origin`` (a server-side client) it is allowed.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import mcp_types as types
import orjson
import pydantic_core
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from kernel.base.errors import ApiError
from kernel.base.jsoncodec import nul_path
from kernel.db.meta import now_utc
from kernel.http.media import read_body
from kernel.http.origins import origin_allowed
from kernel.version import __version__
from plugins.ai import gate
from plugins.ai.chat import approvals
from plugins.ai.mcp.sessions import SESSION_IDLE
from plugins.ai.routes import member_context
from plugins.ai.skill import SkillContext
from plugins.ai.tables import mcp_sessions

STATE_KEY = "ai.mcp"  # plugins.ai.plugin.MCP_STATE
CALLER = "svc.caller"
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"


# ---------------------------------------------------------------------- the MCP server

def _caller(ctx: Any) -> SkillContext:
    request = getattr(ctx, "request", None)
    caller = request.scope.get(CALLER) if request is not None else None
    if not isinstance(caller, SkillContext):  # only our route reaches the manager; this is a guard
        raise RuntimeError("MCP request without a svc caller")
    return caller


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    caller = _caller(ctx)
    tools = [types.Tool(name=s.name, description=s.description + (" Dangerous: answers an approval id; a human "
                                                                    "approves before anything changes."
                                                                    if s.dangerous else ""),
                        input_schema=s.parameters,
                        annotations=types.ToolAnnotations(read_only_hint=not s.dangerous,
                                                          destructive_hint=s.dangerous))
             for s in await gate.offered(caller)]
    return types.ListToolsResult(tools=tools)


def _text(value: Any, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=orjson.dumps(value, default=str).decode())],
                                is_error=error)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    caller = _caller(ctx)
    try:
        skill, args = await gate.admit(caller, params.name, params.arguments or {}, ["arguments"])
        if skill.needs_approval(args):
            approval = await approvals.request(caller, skill, args, None)
            return _text({"status": "pending_approval", "code": "HITL_REQUIRED", "approvalId": approval["id"],
                          "message": f"Waiting for approval: {approval['message']}"})
        return _text({"status": "executed", "data": await gate.run(skill, caller, args)})
    except ApiError as exc:
        return _text({"error": {"code": exc.code, "message": exc.message, "status": exc.status}}, error=True)


def make_server() -> Server[Any]:
    return Server("svc", version=__version__, instructions=(
        "Tools act as the signed-in user. Dangerous tools answer an approval id: a human approves with "
        "POST /api/v1/ai/approvals/:id/decide before anything changes."),
        on_list_tools=list_tools, on_call_tool=call_tool)


class Runtime:
    """The SDK's session manager, running in a task of its own for the app's life (its
    ``run()`` must enter and exit in one task)."""

    def __init__(self) -> None:
        self.manager = StreamableHTTPSessionManager(
            make_server(), stateless=True, json_response=True,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        self.ready = asyncio.Event()
        self.stopping = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        async with self.manager.run():
            self.ready.set()
            await self.stopping.wait()

    async def started(self) -> StreamableHTTPSessionManager:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._run(), name="svc-mcp")
        await self.ready.wait()
        return self.manager


async def stop(kernel: Any) -> None:
    runtime: Runtime | None = kernel.state.pop(STATE_KEY, None)
    if runtime is not None and runtime.task is not None:
        runtime.stopping.set()
        await runtime.task


# ---------------------------------------------------------------------- sessions

async def _open_session(caller: SkillContext) -> str:
    session_id = secrets.token_hex(32)
    now = now_utc()
    async with caller.kernel.unit_of_work(caller.site_id) as uow:
        await uow.db.insert(mcp_sessions, {"id": session_id, "owner": gate.owner_of(caller.principal),
                                           "created_at": now, "last_used_at": now})
    return session_id


async def _session_usable(caller: SkillContext, session_id: str) -> bool:
    """The session exists in this site, belongs to this principal and has not idled out."""
    if len(session_id) != 64:
        return False
    now = now_utc()
    async with caller.kernel.unit_of_work(caller.site_id) as uow:
        found = await uow.db.execute(uow.db.update(mcp_sessions).where(
            mcp_sessions.c.id == session_id, mcp_sessions.c.owner == gate.owner_of(caller.principal),
            mcp_sessions.c.last_used_at > now - SESSION_IDLE).values(last_used_at=now))
    return found.rowcount == 1


async def _end_session(caller: SkillContext, session_id: str) -> bool:
    async with caller.kernel.unit_of_work(caller.site_id) as uow:
        gone = await uow.db.execute(uow.db.delete(mcp_sessions).where(
            mcp_sessions.c.id == session_id, mcp_sessions.c.owner == gate.owner_of(caller.principal)))
    return gone.rowcount == 1


# ---------------------------------------------------------------------- the route

def _rpc_error(resp: Any, status: int, code: int, message: str, request_id: Any = None) -> None:
    resp.status = status
    resp.content_type = "application/json"
    resp.data = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def _nul_in(body: bytes) -> list[str | int] | None:
    """The path of a NUL (``\\u0000``) in a JSON-RPC message, which PostgreSQL stores in neither
    text nor JSONB; ``None`` when there is none or the body is no JSON (the SDK answers that)."""
    if b"\\u0000" not in body:  # in valid JSON a NUL is only ever an escape
        return None
    try:
        return nul_path(pydantic_core.from_json(body))
    except ValueError:
        return None


def _method_of(body: bytes) -> tuple[Any, Any]:
    """``(method, id)`` of a single JSON-RPC message, ``(None, None)`` otherwise (the SDK answers
    the framing error). Parsed with the SDK's own parser (``pydantic_core.from_json``): a stricter
    one (orjson refuses ``NaN``) would let a body through as "no method", hence without a session,
    that the SDK then reads as a ``tools/call``."""
    try:
        message = pydantic_core.from_json(body)
    except ValueError:
        return None, None
    if isinstance(message, dict):
        return message.get("method"), message.get("id")
    return None, None


async def _collect(manager: StreamableHTTPSessionManager, scope: dict[str, Any], body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Run one request through the SDK's ASGI handler and gather its (JSON) answer."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays connected while the SDK answers
        return {"type": "http.disconnect"}

    status = 500
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = list(message.get("headers") or [])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body") or b"")

    await manager.handle_request(scope, receive, send)
    return status, headers, b"".join(chunks)


class McpResource:
    """``POST`` and ``DELETE /mcp``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def _caller(self, req: Any) -> SkillContext:
        caller = await member_context(req)
        origin = req.get_header("Origin")
        if origin is not None and not await origin_allowed(caller.kernel, caller.site_id, origin):
            raise ApiError.forbidden("The Origin of this request is not an allowed origin of the site")
        return caller

    async def on_post(self, req: Any, resp: Any) -> None:
        caller = await self._caller(req)
        version = req.get_header("MCP-Protocol-Version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            _rpc_error(resp, 400, -32600, "Unsupported protocol version: this server speaks "
                       f"{', '.join(HANDSHAKE_PROTOCOL_VERSIONS)} (initialize, then a session)")
            return
        body = await read_body(req, self.kernel.settings.max_body_bytes)
        method, request_id = _method_of(body)
        where = _nul_in(body)
        if where is not None:  # as read_json refuses it for REST: no tool, no approval keeps it
            _rpc_error(resp, 400, -32602, "Invalid params: a string holds a NUL character (\\u0000) at "
                       + (".".join(str(p) for p in where) or "the message"), request_id)
            return
        session_id = req.get_header("Mcp-Session-Id")
        if session_id is not None:
            if not await _session_usable(caller, session_id):
                _rpc_error(resp, 404, -32600, "Session not found", request_id)
                return
        elif method != "initialize" and method is not None:
            _rpc_error(resp, 400, -32600, "Bad Request: Missing session ID (initialize first)", request_id)
            return
        runtime = self.kernel.state.get(STATE_KEY)
        if runtime is None:
            runtime = self.kernel.state[STATE_KEY] = Runtime()
        manager = await runtime.started()
        scope = dict(req.scope)
        scope["headers"] = [(k, v) for k, v in req.scope["headers"] if k.lower() != SESSION_HEADER.encode()]
        scope[CALLER] = caller
        status, headers, payload = await _collect(manager, scope, body)
        resp.status = status
        for name, value in headers:
            if name.lower() not in (b"content-length", SESSION_HEADER.encode()):
                resp.set_header(name.decode("latin-1"), value.decode("latin-1"))
        if method == "initialize" and session_id is None and status == 200:
            resp.set_header("Mcp-Session-Id", await _open_session(caller))
        resp.data = payload

    async def on_delete(self, req: Any, resp: Any) -> None:
        caller = await self._caller(req)
        session_id = req.get_header("Mcp-Session-Id")
        if not session_id or not await _end_session(caller, session_id):
            raise ApiError.not_found("Session not found")
        resp.status = 204
