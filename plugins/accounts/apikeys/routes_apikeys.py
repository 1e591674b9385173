"""API key routes (auth admin, site required): ``/api-keys`` and ``/api-keys/{key_id}``."""

from __future__ import annotations

from typing import Any

from kernel import Route, ops
from kernel.http.media import read_json, reject_unknown, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.accounts.apikeys import apikeys

_NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}
_ROLE_ID = {"type": ["string", "null"], "description": (
    "The role the key acts with in its site: the roleId it was created with, or the site's public role "
    "when it was created without one.")}
_ROLE = {"type": ["object", "null"], "required": ["id", "name", "systemKey"], "description": (
    "The key's effective role (what its requests may do). The public role when created without roleId; "
    "null when that role was deleted since: the key then grants nothing."),
    "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "systemKey": {"type": ["string", "null"]}}}
KEY_RECORD = {
    "type": "object", "required": ["id", "name", "prefix", "roleId", "role", "createdAt", "expiresAt", "lastUsedAt"],
    "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "prefix": {"type": "string"},
                   "roleId": _ROLE_ID, "role": _ROLE, "createdAt": {"type": "string"},
                   "expiresAt": _NULLABLE_TIME, "lastUsedAt": _NULLABLE_TIME},
}
CREATED_KEY = {
    "type": "object", "required": ["id", "name", "key", "roleId", "role", "expiresAt", "createdAt"],
    "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                   "key": {"type": "string", "pattern": "^svk_[A-Za-z0-9_-]{40,}$"},
                   "roleId": {**_ROLE_ID, "type": "string"}, "role": _ROLE, "expiresAt": _NULLABLE_TIME,
                   "createdAt": {"type": "string"}},
}
CREATE_BODY = {
    "type": "object", "required": ["name"], "additionalProperties": False,
    "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 200},
                   "roleId": {"type": "string", "description": (
                       "A role of the site. Absent: the key acts as the site's public role (least privilege); "
                       "the answer's role says which.")},
                   "expiresAt": _NULLABLE_TIME},
}
LIST_PARAMS = [
    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
    {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0}},
    {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1}},
]


class ApiKeysResource:
    """``GET /api-keys`` (never the key or its hash) and ``POST /api-keys`` (the key, once)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        limit, offset = pagination(req)
        async with request_context(req).reader() as db:
            rows, total = await apikeys.list_keys(db, limit, offset)
        send_data(resp, rows, meta=page_meta(total, limit, offset))

    async def on_post(self, req: Any, resp: Any) -> None:
        body = await read_json(req)
        reject_unknown(body, CREATE_BODY["properties"].keys())
        send_data(resp, await apikeys.create_key(request_context(req), body), status=201)


class ApiKeyResource:
    """``GET`` and ``DELETE /api-keys/{key_id}``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any, key_id: str) -> None:
        async with request_context(req).reader() as db:
            send_data(resp, await apikeys.get_key(db, key_id))

    async def on_delete(self, req: Any, resp: Any, key_id: str) -> None:
        await apikeys.delete_key(request_context(req), key_id)
        send_no_content(resp)


def routes(kernel: Any) -> list[Route]:
    """The API key routes, for the plugin's ``register_routes``."""
    listing = ops(get=("The site's API keys", None, [KEY_RECORD], 200),
                  post=("Create an API key (the key is shown once)", CREATE_BODY, CREATED_KEY, 201))
    listing["get"]["parameters"] = LIST_PARAMS
    return [
        Route("/api-keys", ApiKeysResource(kernel), auth="admin", openapi=listing),
        Route("/api-keys/{key_id}", ApiKeyResource(kernel), auth="admin", openapi=ops(
            get=("One API key (without the key)", None, KEY_RECORD, 200),
            delete=("Delete an API key", None, None, 204))),
    ]
