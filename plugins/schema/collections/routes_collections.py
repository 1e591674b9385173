"""``/collections``, ``/collections/{name}`` and ``/collections/{name}/restore``."""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.http.media import flag_param, read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import committed
from plugins.schema.collections import collections
from plugins.schema.visibility import schema_view


class CollectionsResource:
    """``GET`` (list; ``?deleted=true`` for admins) and ``POST`` (create) ``/collections``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        include_deleted = flag_param(req, "deleted")
        if include_deleted and not ctx.principal.is_admin:
            raise ApiError.forbidden("Listing deleted collections needs admin access")
        view = await schema_view(ctx)
        async with ctx.reader() as db:
            data = await collections.list_collections(db, include_deleted=include_deleted)
        if view is not None:  # a member sees the collections it may read (Directus)
            data = [c for c in data if view.collection(c["name"])]
        send_data(resp, data, meta={"total": len(data)})

    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await committed(req, collections.create_collection, await read_json(req)), status=201)


class CollectionResource:
    """``GET``, ``PATCH`` (meta) and ``DELETE`` (soft) ``/collections/{name}``."""

    async def on_get(self, req: Any, resp: Any, name: str) -> None:
        ctx = request_context(req)
        view = await schema_view(ctx)
        async with ctx.reader() as db:
            record = await collections.get_collection(db, name)
        if view is not None:
            view.require(name)
        send_data(resp, record)

    async def on_patch(self, req: Any, resp: Any, name: str) -> None:
        send_data(resp, await committed(req, collections.update_collection, name, await read_json(req)))

    async def on_delete(self, req: Any, resp: Any, name: str) -> None:
        await committed(req, collections.delete_collection, name)
        send_no_content(resp)


class CollectionRestoreResource:
    """``POST /collections/{name}/restore``: undo the last soft delete of ``name``."""

    async def on_post(self, req: Any, resp: Any, name: str) -> None:
        record, skipped = await committed(req, collections.restore_collection, name)
        send_data(resp, record, meta={"skippedRelations": skipped})
