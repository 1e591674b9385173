"""Request bodies and response envelopes, encoded and decoded with orjson.

``dumps`` and ``loads`` (``kernel.base.jsoncodec``) are the JSON of every request body and response (Falcon's media handler
for ``application/json`` uses them). orjson does the work; where it would answer differently
from the standard library (``NaN``/``Infinity`` and numbers beyond a double, integers of 19
digits or more, lone surrogates, invalid UTF-8, integer dict keys), the standard library does,
so what is accepted, refused, and the error messages stay as they were. Responses are compact
(no spaces after ``,`` and ``:``). ``read_json`` refuses a body holding a lone surrogate (400
with the path to the string): it is read, as the stdlib reads it, but it is not text and could
never be stored or answered. It refuses a NUL character (``\\u0000``) the same way, once for every
route: PostgreSQL stores it in neither text nor JSONB, so a free-form JSON value (settings, presets,
panels, headers, options...) holding one would be a 500 there and a different answer on SQLite.
A ``datetime`` is written as ``kernel.base.timestamps.iso`` writes it (UTC with ``Z``:
``2026-11-21T06:44:52.780366Z``).

``read_json`` also checks the body's declared media type (``require_json_media``): a body whose
``Content-Type`` is not JSON (``application/json`` or a ``+json`` type, any parameters) is 415
``UNSUPPORTED_MEDIA_TYPE``, so a form or ``text/plain`` body, which a cross-site HTML form or a
"simple" cross-origin request can send, never reaches a JSON route. A body with no
``Content-Type`` is read as JSON, unless the route asks for the header (``require_type``:
``POST /graphql``). Routes documented to take other media read their bodies with ``read_body``.
"""

from __future__ import annotations

from typing import Any

import falcon
import falcon.media

from kernel.base.errors import ApiError
from kernel.base.jsoncodec import SURROGATE_ESCAPE, dumps, loads, lone_surrogate_path, nul_path


def json_handler() -> falcon.media.JSONHandler:
    """Falcon's JSON media handler on ``dumps`` and ``loads`` (``create_app`` installs it)."""
    return falcon.media.JSONHandler(dumps=dumps, loads=loads)


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


def is_json_media(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` value names JSON: ``application/json`` or a structured syntax
    suffix type ``application/<x>+json`` (RFC 6839), whatever its parameters."""
    if not content_type:
        return False
    kind = falcon.parse_header(content_type)[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))


# The response headers that say which body types a method takes (RFC 5789; W3C LDP's Accept-Post).
_ACCEPT_HEADERS = {"POST": "Accept-Post", "PATCH": "Accept-Patch"}


def require_json_media(req: falcon.asgi.Request, *, require_type: bool = False) -> None:
    """415 ``UNSUPPORTED_MEDIA_TYPE`` when the request declares a body that is not JSON (a form,
    ``multipart/form-data``, ``text/plain``...). A request without a body (``Content-Length: 0``)
    passes, and so does one with no ``Content-Type`` unless ``require_type``."""
    content_type = req.content_type
    if not require_type and (content_type is None or req.content_length == 0):
        return
    if is_json_media(content_type):
        return
    header = _ACCEPT_HEADERS.get(req.method)
    declared = f"'{falcon.parse_header(content_type)[0].strip()[:100]}'" if content_type else "no Content-Type"
    raise ApiError(415, "UNSUPPORTED_MEDIA_TYPE",
                   f"The body must be JSON (Content-Type: application/json), not {declared}",
                   headers={header: "application/json"} if header else None)


_EMPTY = object()  # read_json's default for an empty body: a new {}


async def read_json(req: falcon.asgi.Request, *, expect: type | tuple[type, ...] = dict,
                    required: bool = True, require_type: bool = False, empty: Any = _EMPTY,
                    nul_answered: bool = False) -> Any:
    """The JSON body, checked to be of the ``expect`` type (400 ``VALIDATION_FAILED`` otherwise),
    and declared JSON (``require_json_media``: 415 ``UNSUPPORTED_MEDIA_TYPE`` otherwise). A
    string holding a NUL is 400 at its path, unless ``nul_answered``: a route that stores nothing
    from its body and answers such a string itself (a login names an unknown issuer or account
    the same way, whatever its spelling).

    An empty body gives ``{}`` when not ``required`` (or ``empty`` when given: ``None`` for a
    route whose body may be any JSON value, where ``{}`` is a value of its own).
    """
    require_json_media(req, require_type=require_type)
    max_bytes = req.context.svc.kernel.settings.max_body_bytes
    raw = await read_body(req, max_bytes)
    if not raw.strip():
        if required:
            raise ApiError.validation("A JSON body is required", path=["body"])
        return {} if empty is _EMPTY else empty
    try:
        value = loads(raw)
    except RecursionError as exc:  # a hostile [[[[...]]]] body: a client error, not a crash
        raise ApiError.validation("The body is nested too deeply", path=["body"]) from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError.validation(f"The body is not valid JSON: {exc}", path=["body"]) from exc
    if SURROGATE_ESCAPE.search(raw):
        where = lone_surrogate_path(value)
        if where is not None:
            raise ApiError.validation("A string holds a lone surrogate (\\ud800-\\udfff), which is not text",
                                      path=where or ["body"])
    if not nul_answered and b"\\u0000" in raw:  # the only way a NUL reaches a parsed body: an escape
        where = nul_path(value)
        if where is not None:
            raise ApiError.validation("A string holds a NUL character (\\u0000), which cannot be stored",
                                      path=where or ["body"])
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


def flag_param(req: falcon.asgi.Request, name: str) -> bool:
    """A boolean query parameter (``true``/``false``/``1``/``0``; absent is false)."""
    raw = req.get_param(name)
    if raw is None or raw == "":
        return False
    lowered = raw.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ApiError.validation(f"'{name}' must be true or false", path=["query", name])


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
    """400 for keys outside ``allowed`` (no mass assignment of fields a route does not take),
    naming the first of them in sorted order, so the answer does not depend on key order."""
    unknown = sorted(key for key in body if key not in allowed)
    if unknown:
        raise ApiError.validation(f"Unknown field '{unknown[0]}'", path=[unknown[0]])
