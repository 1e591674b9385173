"""GraphQL errors in the spec's shape: HTTP 200 with ``{ data, errors: [{ message, extensions:
{ code, status? } }] }`` and the codes VALIDATION, PERMISSION_DENIED, NOT_FOUND,
UNAUTHENTICATED, INVALID_FILTER, INTERNAL.

An ``ApiError`` from the items API keeps its message and HTTP status (``extensions.status``)
and its code is mapped onto that list (a filter problem is INVALID_FILTER; a 409 or 429 keeps
its status under VALIDATION, with the REST code in ``extensions.reason``). Anything else a
resolver raises is INTERNAL, logged with its trace and the request id, never shown.
"""

from __future__ import annotations

import logging
from typing import Any

from graphql import ExecutionResult, GraphQLError

from kernel.base.errors import ApiError

log = logging.getLogger("svc.graphql")

CODES = ("VALIDATION", "PERMISSION_DENIED", "NOT_FOUND", "UNAUTHENTICATED", "INVALID_FILTER", "INTERNAL")
BY_REST_CODE = {"VALIDATION_FAILED": "VALIDATION", "VALIDATION": "VALIDATION", "PERMISSION_DENIED": "PERMISSION_DENIED",
                "RECORD_NOT_FOUND": "NOT_FOUND", "NOT_FOUND": "NOT_FOUND", "UNAUTHENTICATED": "UNAUTHENTICATED",
                "TOKEN_EXPIRED": "UNAUTHENTICATED"}
BY_STATUS = {400: "VALIDATION", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}
INTERNAL_MESSAGE = "An unexpected error occurred"


def _from_api_error(exc: ApiError) -> dict[str, Any]:
    detail = exc.details[0]
    path = [str(p) for p in detail.path or ()]
    if path[:2] == ["query", "filter"]:
        code = "INVALID_FILTER"
    else:
        code = BY_REST_CODE.get(exc.code) or BY_STATUS.get(exc.status) or "VALIDATION"
    ext: dict[str, Any] = {"code": code, "status": exc.status}
    if code != exc.code and exc.code not in BY_REST_CODE:
        ext["reason"] = exc.code
    if path:
        ext["path"] = path
    for key in ("reason", "field", "fields", "etag"):  # etag: a stale ifMatch's current tag
        value = (detail.extensions or {}).get(key)
        if value is not None and key not in ext:
            ext[key] = value
    return ext


def format_error(error: GraphQLError, request_id: str) -> dict[str, Any]:
    """One error of a result as the client sees it."""
    original = error.original_error
    out: dict[str, Any] = {"message": error.message}
    if error.locations:
        out["locations"] = [{"line": loc.line, "column": loc.column} for loc in error.locations]
    if error.path:
        out["path"] = list(error.path)
    if isinstance(original, ApiError):
        out["message"] = original.message
        out["extensions"] = _from_api_error(original)
    elif isinstance(original, GraphQLError):
        return format_error(original, request_id) | {k: v for k, v in out.items() if k != "message"}
    elif original is not None:
        log.error("GraphQL resolver fault (request %s)", request_id, exc_info=original)
        out["message"] = INTERNAL_MESSAGE
        out["extensions"] = {"code": "INTERNAL", "status": 500, "requestId": request_id}
    else:
        code = (error.extensions or {}).get("code")
        out["extensions"] = {"code": code if code in CODES else "VALIDATION"}
    return out


def error_body(message: str, code: str = "VALIDATION", **ext: Any) -> dict[str, Any]:
    """A result with one request-level error and no data (a malformed request)."""
    return {"data": None, "errors": [{"message": message, "extensions": {"code": code, **ext}}]}


def format_result(result: ExecutionResult, request_id: str) -> dict[str, Any]:
    out: dict[str, Any] = {"data": result.data}
    if result.errors:
        out["errors"] = [format_error(e, request_id) for e in result.errors]
    return out
