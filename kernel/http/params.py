"""What list and record endpoints share: query-string parsing (``pagination``, ``page_meta``) and
the resources of a plain record API (``RecordList``, ``RecordItem``) and ``committed``, a write
in the request's unit of work."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kernel.base.errors import ApiError
from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context

ServiceCall = Callable[..., Awaitable[Any]]


def int_param(req: Any, name: str, default: int | None = None, *, minimum: int | None = None,
              maximum: int | None = None) -> int | None:
    """An integer query parameter, range-checked, with a ``path`` in the error."""
    raw = req.get_param(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ApiError.validation(f"'{name}' must be an integer", path=["query", name]) from exc
    if minimum is not None and value < minimum:
        raise ApiError.validation(f"'{name}' must be at least {minimum}", path=["query", name])
    if maximum is not None and value > maximum:
        raise ApiError.validation(f"'{name}' must be at most {maximum}", path=["query", name])
    return value


def pagination(req: Any, *, default_limit: int = 25, max_limit: int = 200) -> tuple[int, int]:
    """``(limit, offset)`` from ``limit`` and ``offset`` or ``page`` (1-indexed)."""
    limit = int_param(req, "limit", default_limit, minimum=1, maximum=max_limit)
    assert limit is not None
    page = int_param(req, "page", None, minimum=1, maximum=10_000_000)
    offset = int_param(req, "offset", None, minimum=0, maximum=2**31)
    if offset is None:
        offset = (page - 1) * limit if page else 0
    return limit, offset


def page_meta(total: int, limit: int, offset: int) -> dict[str, int]:
    return {"total": total, "limit": limit, "offset": offset, "page": offset // limit + 1, "pageSize": limit}


class RecordList:
    """``GET`` (the records) and ``POST`` (a new one, 201) of a list route, made of two service
    functions that take the request context: a resource that only parses, calls and answers.

    ``listing(ctx, *query)`` returns the records; with ``paged`` it takes ``limit, offset`` after
    them and returns ``(page, total)``, answered with ``page_meta``. ``query`` names the query
    parameters handed to it in order (``None`` when absent). ``create(ctx, body)`` returns the new
    record. A route that parses more keeps a resource of its own.
    """

    def __init__(self, listing: ServiceCall, create: ServiceCall, *, paged: bool = False,
                 query: tuple[str, ...] = ()) -> None:
        self.listing, self.create, self.paged, self.query = listing, create, paged, query

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        args = [req.get_param(name) for name in self.query]
        if not self.paged:
            send_data(resp, await self.listing(ctx, *args))
            return
        limit, offset = pagination(req)
        data, total = await self.listing(ctx, *args, limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await self.create(ctx, await read_json(req)), status=201)


class RecordItem:
    """``GET``, ``PATCH`` and ``DELETE`` (204) of one record, ``/<records>/{key}`` (the template's one
    field, whatever its name): ``read(ctx, key)``, ``update(ctx, key, body)`` and
    ``delete(ctx, key)``, service functions that return the record (``delete``: nothing)."""

    def __init__(self, read: ServiceCall, update: ServiceCall, delete: ServiceCall) -> None:
        self.read, self.update, self.delete = read, update, delete

    async def on_get(self, req: Any, resp: Any, **path: str) -> None:
        send_data(resp, await self.read(request_context(req), *path.values()))

    async def on_patch(self, req: Any, resp: Any, **path: str) -> None:
        ctx = request_context(req)
        send_data(resp, await self.update(ctx, *path.values(), await read_json(req)))

    async def on_delete(self, req: Any, resp: Any, **path: str) -> None:
        await self.delete(request_context(req), *path.values())
        send_no_content(resp)


async def committed(req: Any, change: ServiceCall, *args: Any, **kwargs: Any) -> Any:
    """What ``change(uow, *args, **kwargs)`` returns, run in a unit of work of the request and
    committed (for services that take the unit of work, such as the schema's)."""
    async with request_context(req).unit_of_work() as uow:
        return await change(uow, *args, **kwargs)
