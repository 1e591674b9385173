"""Falcon error handlers: every error, Falcon's own included, leaves as the one envelope."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import falcon

from kernel.base.errors import FALCON_STATUS_CODES, ApiError
from kernel.db.unavailable import RETRY_AFTER_SECONDS, unavailable_dependency
from kernel.hooks.plugins import call_first
from kernel.http.websocket import close_with_error
from kernel.storage.base import StorageFull

if TYPE_CHECKING:
    from kernel.core.context import Kernel

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


class _Throttle:
    """At most one log line per ``every`` seconds; counts the ones it held back."""

    def __init__(self, every: float = 5.0) -> None:
        self.every = every
        self.next_at = 0.0
        self.held = 0

    def take(self) -> int | None:
        """None to stay quiet, else how many lines were held back since the last one."""
        now = time.monotonic()
        if now < self.next_at:
            self.held += 1
            return None
        held, self.held, self.next_at = self.held, 0, now + self.every
        return held


_unavailable_log = _Throttle()


def _unavailable(req: Any, ex: BaseException, dependency: str) -> ApiError:
    # Every request fails alike during an outage: one WARNING line every few seconds, no trace.
    held = _unavailable_log.take()
    if held is not None:
        rid = getattr(getattr(req.context, "svc", None), "request_id", "-")
        log.warning("%s unavailable on %s %s (request %s): %s: %s%s", dependency, req.method, req.path, rid,
                    type(ex).__name__, str(ex).splitlines()[0] if str(ex) else "",
                    f" ({held} more such answers since the last line)" if held else "")
    return ApiError(503, "SERVICE_UNAVAILABLE", f"The {dependency} is not reachable right now; retry shortly",
                    extensions={"dependency": dependency},
                    headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


def default_exception_answer(req: Any, exc: BaseException) -> ApiError:
    """The kernel's default ``handle_exception``: 503 ``SERVICE_UNAVAILABLE`` with
    ``Retry-After`` when the database or Redis is unreachable (``kernel.db.unavailable``), 507
    ``INSUFFICIENT_STORAGE`` for a full storage (an operator's matter, logged as a warning
    without a trace), else log the trace and answer 500 ``INTERNAL``."""
    dependency = unavailable_dependency(exc)
    if dependency is not None:
        return _unavailable(req, exc, dependency)
    if isinstance(exc, StorageFull):
        rid = getattr(getattr(req.context, "svc", None), "request_id", "-")
        log.warning("storage full on %s %s (request %s): %s", req.method, req.path, rid, exc)
        return ApiError(507, "INSUFFICIENT_STORAGE", "The file storage is full: nothing was stored. "
                        "Try again once space is freed", extensions={"requestId": rid})
    return _internal(req, exc)
