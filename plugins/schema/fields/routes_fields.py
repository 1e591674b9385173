"""``/fields``, ``/fields/{collection}`` and ``/fields/{collection}/{field}``."""

from __future__ import annotations

from typing import Any

from kernel.http.media import flag_param, read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import committed
from plugins.schema.collections.collection_rows import find_row
from plugins.schema.collections.collection_rows import not_found as collection_not_found
from plugins.schema.fields import fields
from plugins.schema.visibility import schema_view, visible_fields


class AllFieldsResource:
    """``GET /fields``: the fields of every live collection (a member: those it may read)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        view = await schema_view(ctx)
        async with ctx.reader() as db:
            data = visible_fields(view, await fields.list_fields(db))
        send_data(resp, data, meta={"total": len(data)})


class CollectionFieldsResource:
    """``GET`` and ``POST /fields/{collection}``."""

    async def on_get(self, req: Any, resp: Any, collection: str) -> None:
        ctx = request_context(req)
        view = await schema_view(ctx)
        async with ctx.reader() as db:
            data = await fields.list_fields(db, collection)
        if view is not None:
            view.require(collection)
            data = visible_fields(view, data)
        send_data(resp, data, meta={"total": len(data)})

    async def on_post(self, req: Any, resp: Any, collection: str) -> None:
        send_data(
            resp, await committed(req, fields.create_field, collection, await read_json(req)), status=201
        )


class FieldResource:
    """``GET``, ``PATCH`` and ``DELETE /fields/{collection}/{field}``."""

    async def on_get(self, req: Any, resp: Any, collection: str, field: str) -> None:
        ctx = request_context(req)
        view = await schema_view(ctx)
        async with ctx.reader() as db:
            if view is not None:  # 404 (no collection), then 403, then a hidden field is absent
                if await find_row(db, collection) is None:
                    raise collection_not_found(collection)
                view.require(collection)
                if not view.field(collection, field):
                    raise fields.field_not_found(collection, field)
            send_data(resp, await fields.get_field(db, collection, field))

    async def on_patch(self, req: Any, resp: Any, collection: str, field: str) -> None:
        send_data(resp, await committed(req, fields.update_field, collection, field, await read_json(req)))

    async def on_delete(self, req: Any, resp: Any, collection: str, field: str) -> None:
        allow = flag_param(req, "allowDestructive")  # a field holding data: 409 without it
        await committed(req, fields.delete_field, collection, field, allow_destructive=allow)
        send_no_content(resp)
