"""The OpenAPI 3.1 document, assembled from every enabled plugin's routes.

Each ``Route`` carries its operations (``ops(...)`` builds them); plugins add shared
components through ``register_openapi``. Every operation answers the error envelope as its
``default`` response, so a client generator (and schemathesis) knows every error's shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernel.version import __version__

if TYPE_CHECKING:
    from kernel.core.context import Kernel
    from kernel.http.routing import Route

DESCRIPTION = """Multi-tenant headless CMS.

**Picking a site.** Every site-scoped operation names its site (tenant) in the `X-Svc-Site`
header, for example `X-Svc-Site: default`. Instance-wide operations (`/sites`, `/auth/login`,
`/utils/health`...) take no site or an optional one: each operation's `X-Svc-Site` parameter
says whether it is required.

**Authenticating.** `POST /api/v1/auth/login` with `{"email", "password"}` answers
`data.token`, a JWT; send it as `Authorization: Bearer <token>`. An API key (`svk_...`) or a
trusted issuer's JWT goes in the same header. Operations whose `security` is
`[{}, {"bearer": []}]` answer anonymous callers too (what the site's public role may read)
and more to a caller with a token; `[]` means the token is not read.

**Errors.** Every error answers `{"errors": [{"code", "message", "path"?, "extensions"?}]}`
(the `Error` schema), with the status the code implies."""

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["errors"],
    "properties": {
        "errors": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                    "path": {"type": "array", "items": {"type": "string"}},
                    "extensions": {"type": "object", "additionalProperties": True},
                },
            },
        }
    },
}

# An object whose keys are the caller's or the data's own (an item, a filter, template
# variables, a list's meta): declared so, because a bare {"type": "object"} leaves a client
# generator guessing (tests/test_openapi_clients.py fails on one).
FREE_FORM: dict[str, Any] = {"type": "object", "additionalProperties": True}

@dataclass(frozen=True)
class OptionalBody:
    """A request body the operation also takes absent (its responder reads it with
    ``read_json(req, required=False)``): ``ops(post=(summary, OptionalBody(schema), data, 200))``."""

    schema: dict[str, Any]


# An operation spec: (summary, request body schema or None, response `data` schema or None, status).
OpSpec = tuple[str, dict[str, Any] | OptionalBody | None, Any, int]


# The innermost part of an operation, the ``content`` of its answer or its request body, is built
# once per schema object in a process and shared by every route and app that documents that
# schema (each app builds ~250 routes; these parts were half of the objects an app leaves for the
# garbage collector). Each operation still gets its own operation, ``responses``, answer and
# ``requestBody`` dicts, which plugins change (``parameters``, ``required``, an added status);
# none changes a ``content``. The cache holds the schema it was built from, so a schema that is
# freed cannot lend its id to another.
_CONTENT: dict[tuple[str, int], tuple[Any, dict[str, Any]]] = {}
_CONTENT_MAX = 2048


def _content(kind: str, schema: Any) -> dict[str, Any]:
    key = (kind, id(schema))
    hit = _CONTENT.get(key)
    if hit is not None and hit[0] is schema:
        return hit[1]
    if kind == "body":
        content = {"application/json": {"schema": schema}}
    else:
        data = {"type": "array", "items": schema} if kind == "array" else schema
        content = {"application/json": {"schema": {
            "type": "object", "required": ["data"], "properties": {"data": data, "meta": FREE_FORM},
        }}}
    if len(_CONTENT) >= _CONTENT_MAX:
        _CONTENT.pop(next(iter(_CONTENT)), None)
    _CONTENT[key] = (schema, content)
    return content


def ops(**methods: OpSpec) -> dict[str, dict[str, Any]]:
    """Build ``Route.openapi`` from ``get=(summary, body, data, status)`` entries.

    ``body`` is the request body's schema (``OptionalBody(schema)`` when it may be absent).
    ``data`` is the schema of the ``data`` key of the answer (``None`` for a body-less answer,
    a one-element list for an array of that schema). Extra query parameters can be added to
    the returned operation under ``"parameters"``.
    """
    out: dict[str, dict[str, Any]] = {}
    for method, (summary, body, data, status) in methods.items():
        op: dict[str, Any] = {"summary": summary}
        if isinstance(body, OptionalBody):
            op["requestBody"] = {"required": False, "content": _content("body", body.schema)}
        elif body is not None:
            op["requestBody"] = {"required": True, "content": _content("body", body)}
        if data is None:
            op["responses"] = {str(status): {"description": summary}}
        else:
            content = _content("array", data[0]) if isinstance(data, list) else _content("object", data)
            op["responses"] = {str(status): {"description": summary, "content": content}}
        out[method.lower()] = op
    return out


def _path_params(template: str) -> list[dict[str, Any]]:
    return [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"{([A-Za-z_][A-Za-z0-9_]*)}", template)
    ]


def _site_param(required: bool) -> dict[str, Any]:
    return {
        "name": "X-Svc-Site", "in": "header", "required": required,
        "schema": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]{0,62}$"},
        "description": "The site (tenant) the request addresses.",
    }


def _security(route: Route, auth: str) -> list[dict[str, list[str]]]:
    """A public operation that still reads a token (``authenticate=True``: a member sees more
    than an anonymous reader) makes it optional, ``[{}, {"bearer": []}]``, so generated clients
    and Swagger UI send it; ``[]`` only where the token is never read."""
    if auth != "public":
        return [{"bearer": []}]
    return [{}, {"bearer": []}] if route.authenticate else []


def _operation(route: Route, method: str) -> dict[str, Any]:
    op = dict(route.openapi.get(method.lower()) or {"summary": f"{method} {route.path}"})
    op.setdefault("responses", {"200": {"description": "OK"}})
    op["responses"] = {**op["responses"], "default": {
        "description": "Error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }}
    params = list(op.get("parameters", []))
    params.extend(_path_params(route.documented))
    if route.site not in ("none", "path"):
        params.append(_site_param(route.site == "required"))
    op["parameters"] = params
    auth = route.auth_for(method)
    # A route that checks its own credential (the metrics scrape token) documents it itself.
    op.setdefault("security", _security(route, auth))
    op.setdefault("tags", [route.plugin or "kernel"])
    op["x-svc-auth"] = auth
    permission = route.permission_for(method)
    if permission:
        op["x-svc-permission"] = permission
    op["operationId"] = f"{method.lower()}_{re.sub(r'[^A-Za-z0-9]+', '_', route.path).strip('_') or 'root'}"
    return op


def build_document(kernel: Kernel) -> dict[str, Any]:
    """The whole document for the enabled plugins of ``kernel``."""
    paths: dict[str, Any] = {}
    used_ids: set[str] = set()
    for route in kernel.routes:
        methods = route.methods()
        if not methods:
            continue  # a WebSocket-only route: OpenAPI has no way to describe it
        item = paths.setdefault(route.documented, {})
        for method in methods:
            op = _operation(route, method)
            # operationId must be unique; one path mounted twice (/metrics in and outside /api/v1)
            # would otherwise repeat it.
            base, n = op["operationId"], 2
            while op["operationId"] in used_ids:
                op["operationId"], n = f"{base}_{n}", n + 1
            used_ids.add(op["operationId"])
            item[method.lower()] = op
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "svc", "version": __version__,
                 "description": DESCRIPTION},
        "servers": [{"url": "/"}],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": {"Error": ERROR_SCHEMA},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "Login JWT, API key (svk_...) or a trusted issuer's JWT"}},
        },
    }
    for fragment in kernel.pm.hook.register_openapi(kernel=kernel):
        for key, value in (fragment or {}).get("components", {}).items():
            doc["components"].setdefault(key, {}).update(value)
        if "tags" in (fragment or {}):
            doc.setdefault("tags", []).extend(fragment["tags"])
    return doc


class OpenApiResource:
    """``GET /api/v1/openapi.json``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._doc: dict[str, Any] | None = None

    async def on_get(self, req: Any, resp: Any) -> None:
        if self._doc is None:
            self._doc = build_document(self.kernel)
        resp.media = self._doc


SITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "name", "createdAt"],
    "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "createdAt": {"type": "string"}},
}
