"""Falcon resources for the three plain CRUD resources: roles, policies and teams.

They share one shape, so they share these two resources, each bound to a ``Crud`` of service
functions: ``/<things>`` (GET page, POST create, and Directus's bulk forms ``PATCH { keys,
data }`` and ``DELETE [ids]`` or ``{ keys }``) and ``/<things>/{id}`` (GET, PATCH, DELETE).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernel import ApiError
from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.access.common import check_body, keys_value, path_id


@dataclass(frozen=True)
class Crud:
    """The service functions behind one resource (each takes the request context first)."""

    what: str
    list: Callable[..., Any]
    get: Callable[..., Any]
    create: Callable[..., Any]
    update_many: Callable[..., Any]
    delete_many: Callable[..., Any]


class ListResource:
    def __init__(self, crud: Crud) -> None:
        self.crud = crud

    async def on_get(self, req: Any, resp: Any) -> None:
        limit, offset = pagination(req, default_limit=100)
        data, total = await self.crud.list(request_context(req), limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))

    async def on_post(self, req: Any, resp: Any) -> None:
        body = await read_json(req)
        send_data(resp, await self.crud.create(request_context(req), body), status=201)

    async def on_patch(self, req: Any, resp: Any) -> None:
        body = check_body(await read_json(req), {"keys", "data"})
        keys = keys_value(body)
        if not isinstance(body.get("data"), dict):
            raise ApiError.validation("'data' must be an object of the fields to change", path=["data"])
        send_data(resp, await self.crud.update_many(request_context(req), keys, body["data"]))

    async def on_delete(self, req: Any, resp: Any) -> None:
        body = await read_json(req, expect=(dict, list))
        if isinstance(body, dict):
            check_body(body, {"keys"})
        await self.crud.delete_many(request_context(req), keys_value(body))
        send_no_content(resp)


class ItemResource:
    def __init__(self, crud: Crud) -> None:
        self.crud = crud

    def _id(self, params: dict[str, str]) -> str:
        return path_id(next(iter(params.values())), self.crud.what)

    async def on_get(self, req: Any, resp: Any, **params: str) -> None:
        send_data(resp, await self.crud.get(request_context(req), self._id(params)))

    async def on_patch(self, req: Any, resp: Any, **params: str) -> None:
        item_id = self._id(params)
        body = await read_json(req)
        send_data(resp, (await self.crud.update_many(request_context(req), [item_id], body))[0])

    async def on_delete(self, req: Any, resp: Any, **params: str) -> None:
        await self.crud.delete_many(request_context(req), [self._id(params)])
        send_no_content(resp)
