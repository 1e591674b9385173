"""Request bodies and response envelopes."""

from __future__ import annotations

import json
from typing import Any

import falcon

from kernel.errors import ApiError


async def read_body(req: falcon.asgi.Request, max_bytes: int) -> bytes:
    """The raw body, refusing more than ``max_bytes`` even without a Content-Length (413)."""
    chunks: list[bytes] = []
    total = 0
    async for chunk in req.stream:
        total += len(chunk)
        if total > max_bytes:
            raise ApiError(413, "PAYLOAD_TOO_LARGE", f"The request body is larger than {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(req: falcon.asgi.Request, *, expect: type | tuple[type, ...] = dict,
                    required: bool = True) -> Any:
    """The JSON body, checked to be of the ``expect`` type (400 ``VALIDATION_FAILED`` otherwise).

    An empty body gives ``{}`` when not ``required``.
    """
    max_bytes = req.context.svc.kernel.settings.max_body_bytes
    raw = await read_body(req, max_bytes)
    if not raw.strip():
        if required:
            raise ApiError.validation("A JSON body is required", path=["body"])
        return {}
    try:
        value = json.loads(raw)
    except RecursionError as exc:  # a hostile [[[[...]]]] body: a client error, not a crash
        raise ApiError.validation("The body is nested too deeply", path=["body"]) from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError.validation(f"The body is not valid JSON: {exc}", path=["body"]) from exc
    if not isinstance(value, expect):
        names = " or ".join(t.__name__ for t in (expect if isinstance(expect, tuple) else (expect,)))
        kind = {"dict": "a JSON object", "list": "a JSON array"}
        raise ApiError.validation(
            "The body must be " + " or ".join(kind.get(n, n) for n in names.split(" or ")), path=["body"]
        )
    return value


def send_data(resp: falcon.asgi.Response, data: Any, *, status: int = 200,
              meta: dict[str, Any] | None = None) -> None:
    """Answer ``{ data, meta? }``."""
    body: dict[str, Any] = {"data": data}
    if meta is not None:
        body["meta"] = meta
    resp.status = status
    resp.media = body


def send_no_content(resp: falcon.asgi.Response) -> None:
    """204 with no body and no Content-Type (Directus clients expect exactly that)."""
    resp.status = 204
    resp.content_type = None
    resp.data = None


def body_field(body: dict[str, Any], name: str, kind: type | tuple[type, ...], *, required: bool = True,
               default: Any = None, max_length: int | None = None) -> Any:
    """One field of a JSON body, type-checked, with a ``path`` in the error."""
    if name not in body or body[name] is None:
        if required:
            raise ApiError.validation(f"'{name}' is required", path=[name])
        return default
    value = body[name]
    if kind is not bool and isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise ApiError.validation(f"'{name}' has the wrong type", path=[name])
    if not isinstance(value, kind):
        raise ApiError.validation(f"'{name}' has the wrong type", path=[name])
    if max_length is not None and isinstance(value, str) and len(value) > max_length:
        raise ApiError.validation(f"'{name}' is longer than {max_length} characters", path=[name])
    return value


def reject_unknown(body: dict[str, Any], allowed: set[str] | frozenset[str]) -> None:
    """400 for keys outside ``allowed`` (no mass assignment of fields a route does not take)."""
    for key in body:
        if key not in allowed:
            raise ApiError.validation(f"Unknown field '{key}'", path=[key])
