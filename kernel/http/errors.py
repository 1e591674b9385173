"""Falcon error handlers: every error, Falcon's own included, leaves as the one envelope."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import falcon

from kernel.errors import FALCON_STATUS_CODES, ApiError
from kernel.http.websocket import close_with_error
from kernel.plugins import call_first
from kernel.storage.base import StorageFull

if TYPE_CHECKING:
    from kernel.context import Kernel

log = logging.getLogger("svc.http")


def _write(resp: falcon.asgi.Response, err: ApiError) -> None:
    resp.status = err.status
    resp.media = err.body()
    resp.content_type = falcon.MEDIA_JSON
    for name, value in err.headers.items():
        resp.set_header(name, value)


def install_error_handlers(app: falcon.asgi.App, kernel: Kernel) -> None:
    """Register the handlers for ``ApiError``, Falcon's ``HTTPError`` and anything else."""

    # On a WebSocket, Falcon passes ``resp=None`` and the socket as ``ws``: the same error
    # closes it with 4000 + status (kernel/http/websocket.py) instead of writing a body.
    async def on_api_error(req: Any, resp: Any, ex: ApiError, params: Any, ws: Any = None) -> None:
        if ws is not None:
            await close_with_error(req, ws, ex)
            return
        _write(resp, ex)

    async def on_http_error(req: Any, resp: Any, ex: falcon.HTTPError, params: Any, ws: Any = None) -> None:
        status = ex.status_code
        code = FALCON_STATUS_CODES.get(status, "INTERNAL" if status >= 500 else "VALIDATION_FAILED")
        if isinstance(ex, falcon.MediaMalformedError):
            message = "The body is not valid JSON"
        elif status == 404:
            message = f"No route {req.method} {req.path}"
        elif status == 405:
            message = f"{req.method} is not allowed on {req.path}"
        else:
            message = ex.description or ex.title or "Request failed"
        if ws is not None and status == 404:
            message = f"No WebSocket route {req.path}"
        err = ApiError(status, code, message, headers=dict(ex.headers or {}))
        if ws is not None:
            await close_with_error(req, ws, err)
            return
        _write(resp, err)

    async def on_exception(req: Any, resp: Any, ex: Exception, params: Any, ws: Any = None) -> None:
        result = await call_first(kernel.pm.hook.handle_exception, request=req, exc=ex, kernel=kernel)
        err = result if isinstance(result, ApiError) else _internal(req, ex)
        if ws is not None:
            await close_with_error(req, ws, err)
            return
        _write(resp, err)

    app.add_error_handler(Exception, on_exception)
    app.add_error_handler(falcon.HTTPError, on_http_error)
    app.add_error_handler(ApiError, on_api_error)


def _internal(req: Any, ex: BaseException) -> ApiError:
    rid = getattr(getattr(req.context, "svc", None), "request_id", "-")
    method = "WEBSOCKET" if req.scheme in ("ws", "wss") else req.method
    log.error("unhandled error on %s %s (request %s)", method, req.path, rid, exc_info=ex)
    return ApiError(500, "INTERNAL", f"Internal error (request id {rid})", extensions={"requestId": rid})


def default_exception_answer(req: Any, exc: BaseException) -> ApiError:
    """The kernel's default ``handle_exception``: 507 ``INSUFFICIENT_STORAGE`` for a full
    storage (an operator's matter, logged as a warning without a trace); otherwise log the
    trace and answer 500 INTERNAL."""
    if isinstance(exc, StorageFull):
        rid = getattr(getattr(req.context, "svc", None), "request_id", "-")
        log.warning("storage full on %s %s (request %s): %s", req.method, req.path, rid, exc)
        return ApiError(507, "INSUFFICIENT_STORAGE", "The file storage is full: nothing was stored. "
                        "Try again once space is freed", extensions={"requestId": rid})
    return _internal(req, exc)
